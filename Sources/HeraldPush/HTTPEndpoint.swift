import Foundation
import NIOCore
import NIOSSL

/// An http(s) URL as ``HTTP2Client`` reaches it: TLS or not, host and port (the origin), and
/// the path that requests to it start with.
struct HTTPEndpoint: Sendable, Equatable {
    var isTLS: Bool
    /// The host name or IP address, without the brackets of an IPv6 literal.
    var host: String
    var port: Int
    /// The URL's path, percent-decoded, without a trailing slash ("" for most base URLs).
    var path: String
    /// The URL's path and query as written, for a request to this very URL ("/" when it has
    /// no path).
    var target: String

    /// - Parameter name: what the URL is, for the error (`APNs endpoint`, `FCM endpoint`).
    init(_ value: String, name: String) throws(PushProviderError) {
        guard let url = URL(string: value), let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http",
            var host = url.host, !host.isEmpty
        else { throw .invalidConfiguration("\(name) '\(value)' is not an http(s) URL") }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        self.isTLS = scheme == "https"
        self.host = host
        self.port = url.port ?? (isTLS ? 443 : 80)
        var path = url.path
        while path.hasSuffix("/") { path.removeLast() }
        self.path = path
        let components = URLComponents(string: value)
        var target = components?.percentEncodedPath ?? ""
        if target.isEmpty { target = "/" }
        if let query = components?.percentEncodedQuery { target += "?" + query }
        self.target = target
    }

    /// Whether `other` is on the same origin (scheme, host ignoring case, port), so that one
    /// client's connections reach both.
    func hasSameOrigin(as other: HTTPEndpoint) -> Bool {
        isTLS == other.isTLS && port == other.port && host.lowercased() == other.host.lowercased()
    }

    /// An ``HTTP2Client`` configuration for this origin: TLS by the scheme, the connection
    /// setup capped by the whole request's `timeout`.
    func clientConfiguration(
        trustRoots: [NIOSSLCertificate]?, connections: Int, connectTimeout: Duration, timeout: Duration
    ) -> HTTP2Client.Configuration {
        var configuration = HTTP2Client.Configuration(host: host, port: port)
        configuration.usesTLS = isTLS
        configuration.trustRoots = trustRoots
        configuration.connections = connections
        configuration.connectTimeout = .connectionSetup(connectTimeout, within: timeout)
        return configuration
    }
}
