public import Foundation
public import HeraldCore
public import NIOSSL

/// How ``WebPushProvider`` signs its requests (VAPID, RFC 8292) and reaches push services.
///
/// There is no endpoint to configure: every subscription carries its own (a URL of the
/// browser's push service, or of the Web Push emulator).
public struct WebPushConfiguration: Sendable {
    /// The application server's VAPID key: a P-256 private key as PEM (PKCS#8 `PRIVATE KEY` or
    /// SEC1 `EC PRIVATE KEY`), or base64url (the raw 32-byte scalar that `web-push
    /// generate-vapid-keys` prints, or DER). Its public half is the `applicationServerKey`
    /// that web apps pass to `pushManager.subscribe`.
    public var vapidPrivateKey: String
    /// The contact the push service can reach the operator at: a `mailto:` or `https:` URI
    /// (the JWT `sub`).
    public var subject: String
    /// Certificates to trust for TLS; `nil` uses the system roots.
    public var trustRoots: [NIOSSLCertificate]? = nil
    /// Time allowed for one send, from queueing to the end of the response.
    /// A refused connection is retried until then (at most ``connectTimeout`` per connection attempt), so an
    /// unreachable service fails a send with ``DeliveryOutcome/pnsUnreachable`` after this long.
    public var timeout: Duration = .seconds(30)
    /// Time allowed for setting up one connection, TCP and TLS; ``timeout`` caps it too.
    public var connectTimeout: Duration = .seconds(10)
    /// Number of HTTP clients that sends are spread over, round-robin (each keeps one HTTP/2
    /// connection per push service).
    public var connections: Int = 2
    /// `TTL` (seconds the push service keeps an undelivered message) when a notification sets
    /// none.
    public var defaultTTL: Int = 86_400
    /// Validity of a VAPID token (the JWT `exp` after its signing). RFC 8292 allows at most
    /// 24 hours; a token is reused for one push service until shortly before it expires.
    public var tokenLifetime: Duration = .seconds(12 * 3600)
    /// Push-service hosts that endpoints may point at; any `https` host by default.
    ///
    /// Endpoints come from browsers, so an attacker who can register a device can make Herald
    /// POST to any URL. Restrict them in production, for example to
    /// ``HeraldCore/HostAllowList/webPushServices`` (as `herald serve` does). The VAPID token
    /// sent with a push names the endpoint's origin as its audience, so it is worth nothing to
    /// another host; the list is against Herald being used to probe other hosts.
    public var allowedEndpointHosts: HostAllowList = .anyHost
    /// The wall clock that VAPID `exp` is computed from.
    public var now: @Sendable () -> Date = Date.init

    /// The most RFC 8292 allows for ``tokenLifetime``.
    public static let maximumTokenLifetime: Duration = .seconds(24 * 3600)

    public init(vapidPrivateKey: String, subject: String) {
        self.vapidPrivateKey = vapidPrivateKey
        self.subject = subject
    }

    func validate() throws(PushProviderError) {
        let lowered = subject.lowercased()
        guard (lowered.hasPrefix("mailto:") && subject.count > 7) || (lowered.hasPrefix("https://") && subject.count > 8)
        else {
            throw .invalidConfiguration("the VAPID subject must be a mailto: or https: URI")
        }
        guard tokenLifetime >= .seconds(60), tokenLifetime <= Self.maximumTokenLifetime else {
            throw .invalidConfiguration("the VAPID token lifetime must be between 1 minute and 24 hours")
        }
        guard defaultTTL >= 0 else { throw .invalidConfiguration("the Web Push default TTL must not be negative") }
        guard connections >= 1 else { throw .invalidConfiguration("Web Push connections must be at least 1") }
        guard timeout > .zero else { throw .invalidConfiguration("Web Push timeout must be positive") }
    }
}

extension WebPushConfiguration: SecretRedacting {
    /// The fields, with the VAPID private key redacted.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "vapidPrivateKey": Self.redacted, "subject": subject, "timeout": timeout, "connectTimeout": connectTimeout,
                "connections": connections, "defaultTTL": defaultTTL, "tokenLifetime": tokenLifetime,
                "allowedEndpointHosts": allowedEndpointHosts,
            ])
    }
}
