import Foundation

/// A Web Push subscription endpoint, checked: an absolute `https` URL with a host and no
/// credentials.
struct WebPushEndpoint: Sendable, Hashable {
    /// The URL as the subscription gave it.
    var url: String
    /// Lowercased host, without IPv6 brackets.
    var host: String
    /// `https://host[:port]`, lowercased, the port only when not 443: the VAPID `aud`.
    var origin: String

    init?(_ handle: String) {
        guard handle.utf8.count <= 2048, let components = URLComponents(string: handle),
            components.scheme?.lowercased() == "https",
            var host = components.host?.lowercased(), !host.isEmpty,
            components.user == nil, components.password == nil
        else { return nil }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        var origin = "https://" + (host.contains(":") ? "[\(host)]" : host)
        if let port = components.port {
            guard (1...65535).contains(port) else { return nil }
            if port != 443 { origin += ":\(port)" }
        }
        self.url = handle
        self.host = host
        self.origin = origin
    }
}
