import Foundation
public import HeraldCore
public import HeraldTLS
public import NIOSSL

/// How ``APNsProvider`` reaches Apple Push Notification service and signs in to it: with a
/// token-signing key (``teamID``, ``keyID``, ``privateKeyPEM``: token authentication) or with a
/// TLS client certificate (``clientCertificate``: certificate authentication), never both.
public struct APNsConfiguration: Sendable {
    /// Apple's two push environments. A device token belongs to one of them.
    public enum Environment: String, Sendable, Hashable, CaseIterable {
        case production
        case sandbox

        /// The base URL of the environment's HTTP/2 API.
        public var endpoint: String {
            switch self {
            case .production: "https://api.push.apple.com"
            case .sandbox: "https://api.sandbox.push.apple.com"
            }
        }

        /// The base URL of the environment's broadcast channel management API.
        public var broadcastManagementEndpoint: String {
            switch self {
            case .production: "https://api-manage-broadcast.push.apple.com:2196"
            case .sandbox: "https://api-manage-broadcast.sandbox.push.apple.com:2195"
            }
        }
    }

    /// Base URL that requests go to: the environment's by default; set it to reach a proxy
    /// or an emulator.
    public var endpoint: String
    /// Base URL of the broadcast channel management API (create, list, delete channels): the
    /// environment's by default; set it to reach an emulator.
    public var broadcastManagementEndpoint: String
    /// The team that owns the key (the JWT `iss`); empty with certificate authentication.
    public var teamID: String
    /// The key's id (the JWT `kid`); empty with certificate authentication.
    public var keyID: String
    /// Contents of the `.p8` file: a PEM P-256 private key; empty with certificate authentication.
    public var privateKeyPEM: String
    /// The APNs certificate and its key, presented on every connection instead of provider
    /// tokens (no `authorization` header is sent); `nil` for token authentication.
    public var clientCertificate: ClientCertificate?
    /// Default `apns-topic` (usually the app's bundle id), used when a notification has none.
    public var topic: String
    /// Certificates to trust for the TLS connection; `nil` uses the system roots.
    public var trustRoots: [NIOSSLCertificate]? = nil
    /// Number of HTTP/2 connections that sends are spread over, round-robin.
    public var connections: Int = 4
    /// Time allowed for one send, from queueing to the end of the response; also bounds setting
    /// a connection up (at most ``connectTimeout``). A refused or failed connection fails the sends waiting for
    /// it at once with ``DeliveryOutcome/pnsUnreachable``, and sends fail the same way, without
    /// waiting, during a short backoff (100 ms, doubling up to 5 s) before the next attempt.
    public var timeout: Duration = .seconds(30)
    /// Time allowed for setting up one connection, TCP and TLS; ``timeout`` caps it too.
    public var connectTimeout: Duration = .seconds(10)
    /// How long a provider token is reused. Apple rejects tokens older than 60 minutes and
    /// refuses new ones more often than every 20, so this must lie in 20...60 minutes.
    public var tokenLifetime: Duration = .seconds(50 * 60)
    /// While APNs refuses the key's token as an update that came too soon
    /// (`TooManyProviderTokenUpdates`) and no earlier token of the key is valid, the provider
    /// pauses: sends report ``PushResult/Disposition/providerPaused(retryAfter:)`` without a
    /// request, and one send tries again after this long.
    public var tokenUpdatePause: Duration = .seconds(60)

    public init(
        environment: Environment = .production,
        teamID: String,
        keyID: String,
        privateKeyPEM: String,
        topic: String
    ) {
        self.endpoint = environment.endpoint
        self.broadcastManagementEndpoint = environment.broadcastManagementEndpoint
        self.teamID = teamID
        self.keyID = keyID
        self.privateKeyPEM = privateKeyPEM
        self.topic = topic
    }

    /// Certificate authentication: `certificate` is presented on every TLS connection and no
    /// provider token is sent. `topic` defaults to the certificate's subject `UID` (where Apple
    /// puts the app's bundle id); the provider refuses a configuration with neither.
    public init(environment: Environment = .production, clientCertificate: ClientCertificate, topic: String? = nil) {
        self.endpoint = environment.endpoint
        self.broadcastManagementEndpoint = environment.broadcastManagementEndpoint
        self.teamID = ""
        self.keyID = ""
        self.privateKeyPEM = ""
        self.clientCertificate = clientCertificate
        self.topic = topic ?? clientCertificate.topic ?? ""
    }

    /// The range that ``tokenLifetime`` must lie in.
    public static let tokenLifetimeRange: ClosedRange<Duration> = .seconds(20 * 60) ... .seconds(60 * 60)

    /// Checks the values that do not need a network: lifetime, connections, timeout, endpoint.
    func validate() throws(PushProviderError) {
        if clientCertificate != nil {
            guard teamID.isEmpty, keyID.isEmpty, privateKeyPEM.isEmpty else {
                throw .invalidConfiguration(
                    "APNs takes either a client certificate or a token-signing key (team id, key id, .p8), not both")
            }
            guard !topic.isEmpty else {
                throw .invalidConfiguration("APNs needs a topic: the certificate's subject has no UID to take it from")
            }
        } else {
            guard !teamID.isEmpty, !keyID.isEmpty else {
                throw .invalidConfiguration("APNs team id and key id are required")
            }
        }
        guard Self.tokenLifetimeRange.contains(tokenLifetime) else {
            throw .invalidConfiguration("APNs token lifetime must be between 20 and 60 minutes")
        }
        guard connections >= 1 else { throw .invalidConfiguration("APNs connections must be at least 1") }
        guard timeout > .zero else { throw .invalidConfiguration("APNs timeout must be positive") }
        guard tokenUpdatePause > .zero else { throw .invalidConfiguration("APNs token update pause must be positive") }
        try validateBaseURL(endpoint, name: "APNs endpoint")
        try validateBaseURL(broadcastManagementEndpoint, name: "APNs broadcast management endpoint")
    }
}

/// Throws unless `value` is an absolute http(s) URL with a host.
func validateBaseURL(_ value: String, name: String) throws(PushProviderError) {
    guard let url = URL(string: value), let scheme = url.scheme?.lowercased(),
        scheme == "https" || scheme == "http", let host = url.host, !host.isEmpty
    else {
        throw .invalidConfiguration("\(name) '\(value)' is not an http(s) URL")
    }
}

extension APNsConfiguration: SecretRedacting {
    /// The fields, with the private key redacted.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "endpoint": endpoint, "broadcastManagementEndpoint": broadcastManagementEndpoint, "teamID": teamID, "keyID": keyID,
                "privateKeyPEM": Self.redacted,
                "clientCertificate": clientCertificate.map { "\($0) (private key redacted)" } as Any, "topic": topic,
                "connections": connections, "timeout": timeout, "connectTimeout": connectTimeout,
                "tokenLifetime": tokenLifetime, "tokenUpdatePause": tokenUpdatePause,
            ])
    }
}
