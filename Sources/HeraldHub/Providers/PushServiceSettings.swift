public import HeraldCore
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
        /// The base URL of the broadcast channel management API; `nil` for the environment's own.
        public var broadcastManagementEndpoint: String?

        public init(
            endpoint: String? = nil, trustRoots: [NIOSSLCertificate]? = nil, connections: Int = 4,
            broadcastManagementEndpoint: String? = nil
        ) {
            self.endpoint = endpoint
            self.trustRoots = trustRoots
            self.connections = connections
            self.broadcastManagementEndpoint = broadcastManagementEndpoint
        }
    }

    public struct FCM: Sendable {
        /// The base URL; `nil` for FCM's.
        public var endpoint: String?
        /// The OAuth2 token URL; `nil` for the service account's own `token_uri`.
        public var tokenURI: String?
        public var trustRoots: [NIOSSLCertificate]?
        /// The hosts a service account's own `token_uri` may name (with no ``tokenURI``):
        /// Google's. A service account is a hub's credential, given by whoever manages the hub;
        /// it must not make the server post signed assertions to any host it names.
        public var allowedTokenHosts: HostAllowList

        public init(
            endpoint: String? = nil, tokenURI: String? = nil, trustRoots: [NIOSSLCertificate]? = nil,
            allowedTokenHosts: HostAllowList = .googleOAuth
        ) {
            self.endpoint = endpoint
            self.tokenURI = tokenURI
            self.trustRoots = trustRoots
            self.allowedTokenHosts = allowedTokenHosts
        }
    }

    public struct WNS: Sendable {
        /// The OAuth2 token URL; `nil` for Microsoft's.
        public var tokenURI: String?
        public var trustRoots: [NIOSSLCertificate]?
        /// The hosts channel URIs may name: the access token goes to no other.
        public var allowedChannelHosts: HostAllowList

        public init(tokenURI: String? = nil, trustRoots: [NIOSSLCertificate]? = nil, allowedChannelHosts: HostAllowList = .wns) {
            self.tokenURI = tokenURI
            self.trustRoots = trustRoots
            self.allowedChannelHosts = allowedChannelHosts
        }
    }

    public struct WebPush: Sendable {
        public var trustRoots: [NIOSSLCertificate]?
        /// The push-service hosts that subscriptions may name; ``HeraldCore/HostAllowList/anyHost``
        /// for an emulator's or a test's.
        public var allowedEndpointHosts: HostAllowList

        public init(trustRoots: [NIOSSLCertificate]? = nil, allowedEndpointHosts: HostAllowList = .webPushServices) {
            self.trustRoots = trustRoots
            self.allowedEndpointHosts = allowedEndpointHosts
        }
    }

    /// The hosts that handles may name, as engines check them when a device is saved: the
    /// same lists the providers check before they send.
    public var channelHosts: PushChannelHosts {
        PushChannelHosts(wns: wns.allowedChannelHosts, webPush: webPush.allowedEndpointHosts)
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
