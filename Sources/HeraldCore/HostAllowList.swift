import Foundation

/// The hosts a URL that a device or a tenant supplies may name before Herald sends anything
/// to it: a WNS channel URI, a Web Push endpoint, a service account's token URL.
///
/// An entry is a host name or address (`fcm.googleapis.com`, `127.0.0.1`), matched whole, or a
/// domain below which every host matches, written `*.notify.windows.com` (or
/// `.notify.windows.com`). `*` alone allows every host: only for a private push service or an
/// emulator. Hosts are compared lowercased, IPv6 addresses without their brackets.
public struct HostAllowList: Sendable, Hashable, CustomStringConvertible, ExpressibleByArrayLiteral {
    /// Hosts matched whole, lowercased.
    public private(set) var hosts: Set<String>
    /// Domains whose subdomains match, lowercased, with their leading dot (`.notify.windows.com`).
    public private(set) var domains: Set<String>
    /// Whether every host matches (the entry `*`).
    public private(set) var allowsAnyHost: Bool

    public init<S: Sequence>(_ entries: S) where S.Element == String {
        var hosts: Set<String> = []
        var domains: Set<String> = []
        var any = false
        for raw in entries {
            let entry = raw.trimmingSpaces().lowercased()
            if entry.isEmpty { continue }
            if entry == "*" {
                any = true
            } else if entry.hasPrefix("*.") {
                domains.insert(String(entry.dropFirst()))
            } else if entry.hasPrefix(".") {
                domains.insert(entry)
            } else {
                hosts.insert(Self.unbracketed(entry))
            }
        }
        self.hosts = hosts
        self.domains = domains
        self.allowsAnyHost = any
    }

    public init(arrayLiteral elements: String...) {
        self.init(elements)
    }

    /// The list of a comma-separated setting (`HERALD_WNS_ALLOWED_HOSTS`, say).
    public init(commaSeparated text: String) {
        self.init(text.split(separator: ",").map(String.init))
    }

    /// Every host.
    public static let anyHost: HostAllowList = ["*"]

    /// Windows Push Notification Services: channel URIs are on `*.notify.windows.com`.
    public static let wns: HostAllowList = ["*.notify.windows.com"]

    /// The push services of the major browsers (Chrome, Firefox, Safari, Edge).
    public static let webPushServices: HostAllowList = [
        "fcm.googleapis.com", "updates.push.services.mozilla.com", "web.push.apple.com", "*.notify.windows.com",
    ]

    /// Google's OAuth 2.0 token endpoints, where a service account's `token_uri` points.
    public static let googleOAuth: HostAllowList = ["oauth2.googleapis.com", "accounts.google.com", "www.googleapis.com"]

    /// Allows the hosts `other` allows too.
    public mutating func formUnion(_ other: HostAllowList) {
        hosts.formUnion(other.hosts)
        domains.formUnion(other.domains)
        allowsAnyHost = allowsAnyHost || other.allowsAnyHost
    }

    /// Whether no host matches.
    public var isEmpty: Bool { hosts.isEmpty && domains.isEmpty && !allowsAnyHost }

    /// Whether `host` (any case; an IPv6 address with or without brackets) is allowed.
    public func allows(host: String) -> Bool {
        if allowsAnyHost { return true }
        let host = Self.unbracketed(host.lowercased())
        guard !host.isEmpty else { return false }
        if hosts.contains(host) { return true }
        // A host below a domain: strip labels from the left and look the rest up.
        var rest = Substring(host)
        while let dot = rest.firstIndex(of: ".") {
            rest = rest[dot...]
            if domains.contains(String(rest)) { return true }
            rest = rest.dropFirst()
        }
        return false
    }

    /// The host of an absolute `https` URL without user information, if it is allowed; `nil`
    /// when the URL is not one, or its host is not allowed.
    ///
    /// The URL is read by both of Foundation's parsers (`URL`, which the HTTP client connects
    /// with, and `URLComponents`), and they must agree on the host: a URL that one reads as
    /// another host than the other is refused.
    public func allowedHost(ofHTTPSURL text: String) -> String? {
        guard let url = URL(string: text), url.scheme?.lowercased() == "https", url.user == nil, url.password == nil,
            let host = url.host, !host.isEmpty,
            let components = URLComponents(string: text), components.user == nil, components.password == nil,
            let componentsHost = components.host,
            Self.unbracketed(componentsHost.lowercased()) == Self.unbracketed(host.lowercased()),
            allows(host: host)
        else { return nil }
        return host
    }

    /// The entries, comma-separated, as a setting takes them.
    public var description: String {
        ((allowsAnyHost ? ["*"] : []) + hosts.sorted() + domains.sorted().map { "*" + $0 }).joined(separator: ",")
    }

    private static func unbracketed(_ host: String) -> String {
        host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
    }
}

/// Which hosts the handles of the platforms whose handles are URLs may name: a registration,
/// installation or direct send naming another host is refused (`400`) before anything is saved
/// or sent, and each provider checks again before it sends (with its credential) anywhere.
public struct PushChannelHosts: Sendable, Hashable {
    /// WNS channel URIs.
    public var wns: HostAllowList
    /// Web Push subscription endpoints.
    public var webPush: HostAllowList

    public init(wns: HostAllowList = .wns, webPush: HostAllowList = .webPushServices) {
        self.wns = wns
        self.webPush = webPush
    }

    /// The real push services' hosts.
    public static let publicServices = PushChannelHosts()

    /// Throws `badRequest` when `handle` (already normalized, ``Registration/normalizedHandle(_:platform:)``)
    /// is a URL whose host is not allowed for `platform`. APNs and FCM handles are tokens, sent
    /// only to the configured service: nothing to check.
    public func check(_ handle: String, platform: Platform) throws(HeraldError) {
        let allowed: HostAllowList
        let what: String
        let setting: String
        switch platform {
        case .apns, .fcm: return
        case .wns: (allowed, what, setting) = (wns, "a WNS channel URI", "HERALD_WNS_ALLOWED_HOSTS")
        case .webpush: (allowed, what, setting) = (webPush, "a Web Push endpoint", "HERALD_WEBPUSH_ALLOWED_HOSTS")
        }
        guard allowed.allowedHost(ofHTTPSURL: handle) == nil else { return }
        let host = URLComponents(string: handle)?.host.map { " (\($0.prefix(253)))" } ?? ""
        throw .badRequest(
            "\(what) must be on the push service's hosts; this one's host\(host) is not among those the server allows (\(setting))"
        )
    }
}
