public import Foundation
public import HeraldCore
public import NIOSSL

/// How ``WNSProvider`` signs in to Windows Push Notification Services and reaches it.
///
/// The credentials are the app's package SID (or, for apps registered in Azure, the
/// application id) and its client secret, traded for an access token with the OAuth2 client
/// credentials grant. Printing a configuration never shows the secret.
public struct WNSConfiguration: Sendable {
    /// Microsoft's token endpoint.
    public static let defaultTokenURI = "https://login.live.com/accesstoken.srf"
    /// The scope WNS access tokens are issued for.
    public static let defaultScope = "notify.windows.com"

    /// `client_id`: the package security identifier (`ms-app://s-1-15-2-…`).
    public var clientID: String
    /// `client_secret`: the secret issued with the package SID.
    public var clientSecret: String
    /// Where the client credentials are exchanged for an access token; set it to reach an emulator.
    public var tokenURI: String = WNSConfiguration.defaultTokenURI
    /// The OAuth2 `scope` requested.
    public var scope: String = WNSConfiguration.defaultScope
    /// The hosts channel URIs may name. Every send carries the access token, so a channel on
    /// any other host is refused before a connection is made: a device that registered
    /// `https://attacker.example/` must not be handed the token. Microsoft's hosts by default;
    /// an emulator's or a proxy's host when one stands in for WNS.
    public var allowedChannelHosts: HostAllowList = .wns
    /// Certificates to trust for TLS (token endpoint and channel hosts); `nil` uses the system roots.
    public var trustRoots: [NIOSSLCertificate]? = nil
    /// Time allowed for one request (a send or a token exchange).
    /// A refused connection is retried until then (at most ``connectTimeout`` per connection attempt), so an
    /// unreachable service fails a send with ``DeliveryOutcome/pnsUnreachable`` after this long.
    public var timeout: Duration = .seconds(30)
    /// Time allowed for setting up one connection, TCP and TLS; ``timeout`` caps it too.
    public var connectTimeout: Duration = .seconds(10)
    /// Number of HTTP clients that sends are spread over, round-robin. Channel URIs point at
    /// many hosts; each client keeps its own connections per host.
    public var connections: Int = 2
    /// The wall clock that access-token expiry is read from.
    public var now: @Sendable () -> Date = Date.init

    /// - Parameters:
    ///   - packageSID: the package SID, sent as `client_id`.
    ///   - clientSecret: the secret, sent as `client_secret`.
    public init(packageSID: String, clientSecret: String) {
        self.clientID = packageSID
        self.clientSecret = clientSecret
    }

    /// The same as ``init(packageSID:clientSecret:)``, for callers that say client id.
    public init(clientID: String, clientSecret: String) {
        self.init(packageSID: clientID, clientSecret: clientSecret)
    }

    func validate() throws(PushProviderError) {
        guard !clientID.isEmpty, !clientSecret.isEmpty else {
            throw .invalidConfiguration("WNS package SID (client id) and client secret are required")
        }
        guard !allowedChannelHosts.isEmpty else { throw .invalidConfiguration("WNS needs at least one allowed channel host") }
        guard !scope.isEmpty else { throw .invalidConfiguration("WNS scope must not be empty") }
        guard connections >= 1 else { throw .invalidConfiguration("WNS connections must be at least 1") }
        guard timeout > .zero else { throw .invalidConfiguration("WNS timeout must be positive") }
        try validateBaseURL(tokenURI, name: "WNS token URI")
    }
}

extension WNSConfiguration: SecretRedacting {
    /// The fields, with the client secret redacted.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "clientID": clientID, "clientSecret": Self.redacted, "tokenURI": tokenURI, "scope": scope,
                "timeout": timeout, "connectTimeout": connectTimeout, "connections": connections,
                "allowedChannelHosts": allowedChannelHosts,
            ])
    }
}
