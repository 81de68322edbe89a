public import NIOSSL

/// Where each push service is and how to reach it: what every provider of a platform
/// shares, whatever credentials it signs with. The defaults are the real services; an
/// emulator, or a private test service, is reached by setting its endpoint and the CA that
/// issued its certificate.
public struct PushServiceSettings: Sendable {
    public struct APNs: Sendable {
        /// The base URL; `nil` for the environment's own (production or sandbox).
        public var endpoint: String?
        /// CAs to trust instead of the system's.
        public var trustRoots: [NIOSSLCertificate]?
        /// HTTP/2 connections per provider.
        public var connections = 4

        public init(endpoint: String? = nil, trustRoots: [NIOSSLCertificate]? = nil, connections: Int = 4) {
            self.endpoint = endpoint
            self.trustRoots = trustRoots
            self.connections = connections
        }
    }

    public struct FCM: Sendable {
        /// The base URL; `nil` for FCM's.
        public var endpoint: String?
        /// The OAuth2 token URL; `nil` for the service account's own `token_uri`.
        public var tokenURI: String?
        public var trustRoots: [NIOSSLCertificate]?

        public init(endpoint: String? = nil, tokenURI: String? = nil, trustRoots: [NIOSSLCertificate]? = nil) {
            self.endpoint = endpoint
            self.tokenURI = tokenURI
            self.trustRoots = trustRoots
        }
    }

    public struct WNS: Sendable {
        /// The OAuth2 token URL; `nil` for Microsoft's.
        public var tokenURI: String?
        public var trustRoots: [NIOSSLCertificate]?

        public init(tokenURI: String? = nil, trustRoots: [NIOSSLCertificate]? = nil) {
            self.tokenURI = tokenURI
            self.trustRoots = trustRoots
        }
    }

    public struct WebPush: Sendable {
        public var trustRoots: [NIOSSLCertificate]?
        /// The push-service hosts that subscriptions may name; `nil` allows any host (an
        /// emulator's, say).
        public var allowedEndpointHosts: Set<String>?

        public init(trustRoots: [NIOSSLCertificate]? = nil, allowedEndpointHosts: Set<String>? = nil) {
            self.trustRoots = trustRoots
            self.allowedEndpointHosts = allowedEndpointHosts
        }
    }

    public var apns: APNs
    public var fcm: FCM
    public var wns: WNS
    public var webPush: WebPush

    public init(apns: APNs = APNs(), fcm: FCM = FCM(), wns: WNS = WNS(), webPush: WebPush = WebPush()) {
        self.apns = apns
        self.fcm = fcm
        self.wns = wns
        self.webPush = webPush
    }
}
