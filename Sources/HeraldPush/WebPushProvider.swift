import AsyncHTTPClient
import Crypto
import Foundation
public import HeraldCore
public import HeraldMetrics
import HeraldTLS
import HeraldWebPushCrypto
public import Logging
import NIOCore
import NIOHTTP1

/// Sends notifications to browsers through their push services (Web Push: RFC 8030, with
/// VAPID, RFC 8292, and message encryption, RFC 8291).
///
/// Each send is a `POST` to the subscription's endpoint (the target's handle) with the
/// notification's bytes encrypted for that subscription (`aes128gcm`, a fresh ECDH key and
/// salt per message), `TTL` (the notification's, else ``WebPushConfiguration/defaultTTL``),
/// `Urgency` and `Topic` when the notification has them, and a VAPID token per push service
/// origin, reused until shortly before it expires.
///
/// Run it in a `ServiceGroup` or call ``shutdown()`` when done.
public final class WebPushProvider: PushProvider {
    public let platform: Platform = .webpush
    public let configuration: WebPushConfiguration

    /// The VAPID public key (the applicationServerKey).
    public var credentialID: String { vapid.publicKey }

    private let logger: Logger
    let vapid: WebPushVAPID
    private let pool: HTTPClientPool
    private let transport: HTTPPushTransport<HTTPClientPool>
    private let credential: PushCredentialRecorder

    /// - Throws: ``PushProviderError`` when the configuration or the VAPID key is invalid.
    public init(configuration: WebPushConfiguration, logger: Logger, metrics: HeraldMetrics? = nil) throws {
        try configuration.validate()
        let key = try WebPushVAPID.privateKey(from: configuration.vapidPrivateKey)
        self.configuration = configuration
        self.logger = logger
        self.vapid = WebPushVAPID(
            key: key,
            subject: configuration.subject,
            lifetime: Double(configuration.tokenLifetime.components.seconds),
            now: configuration.now
        )
        let pool = HTTPClientPool(
            count: configuration.connections, trustRoots: configuration.trustRoots, timeout: configuration.timeout,
            connectTimeout: configuration.connectTimeout)
        self.pool = pool
        let credential = PushCredentialRecorder(method: "VAPID", now: configuration.now)
        self.credential = credential
        self.transport = HTTPPushTransport(
            wire: pool, timeout: configuration.timeout, now: configuration.now, logger: logger, metrics: metrics,
            health: credential)
    }

    /// Whether a push service last accepted the VAPID token. Push services are many (one per
    /// browser vendor), and one refuses a token for a subscription made with another key: the
    /// status is that of the last answer from any of them.
    public var credentialHealth: PushCredentialHealth { credential.health() }

    /// The VAPID public key, uncompressed and base64url: the `applicationServerKey` that the
    /// web app passes to `pushManager.subscribe`.
    public var applicationServerKey: String { vapid.publicKey }

    public func send(_ notification: PushNotification, to target: PushTarget) async -> PushResult {
        guard case .bytes(let plaintext) = notification.body else {
            return .rejectedLocally(.invalidNotificationFormat, reason: "Web Push notifications need a byte body")
        }
        guard plaintext.readableBytes <= PayloadLimits.webPushPlaintext else {
            return .rejectedLocally(
                .invalidNotificationSize,
                reason: "the plaintext is \(plaintext.readableBytes) bytes; Web Push allows \(PayloadLimits.webPushPlaintext)")
        }
        guard let endpoint = WebPushEndpoint(target.handle) else {
            return .rejectedLocally(.badChannel, reason: "the endpoint is not an https URL")
        }
        if configuration.allowedEndpointHosts.allowedHost(ofHTTPSURL: endpoint.url) == nil {
            return .rejectedLocally(.badChannel, reason: "the endpoint's host is not an allowed push service")
        }
        guard let keys = target.webPushKeys else {
            return .rejectedLocally(.badChannel, reason: "the subscription has no p256dh and auth keys")
        }
        let userAgentKey: P256.KeyAgreement.PublicKey
        let authSecret: Data
        do throws(WebPushCryptoError) {
            (userAgentKey, authSecret) = try Self.subscriptionKeys(keys)
        } catch {
            return .rejectedLocally(.badChannel, reason: error.message)
        }
        let headers: HTTPHeaders
        switch Self.pushHeaders(for: notification, defaultTTL: configuration.defaultTTL) {
        case .success(let value): headers = value
        case .failure(let failure): return .rejectedLocally(.invalidNotificationFormat, reason: failure.message)
        }
        let body: [UInt8]
        do throws(WebPushCryptoError) {
            body = try WebPushCrypto.encrypt(Array(plaintext.readableBytesView), userAgentPublicKey: userAgentKey, authSecret: authSecret)
        } catch {
            return .rejectedLocally(.invalidNotificationFormat, reason: error.message)
        }

        var request = HTTPClientRequest(url: endpoint.url)
        request.method = .POST
        request.headers = headers
        request.body = .bytes(ByteBuffer(bytes: body))
        return await transport.send(
            request,
            authorizer: VAPIDAuthorizer(vapid: vapid, origin: endpoint.origin, logger: logger, health: credential),
            service: self,
            target: ["webpush.origin": "\(endpoint.origin)"]
        )
    }

    /// The subscription's `p256dh` (a 65-byte P-256 point) and `auth` (16 bytes), decoded.
    static func subscriptionKeys(_ keys: WebPushKeys) throws(WebPushCryptoError) -> (P256.KeyAgreement.PublicKey, Data) {
        guard let p256dh = JSONWebToken.base64URLDecode(keys.p256dh) else {
            throw WebPushCryptoError(code: .invalidKey, message: "p256dh is not base64url")
        }
        let publicKey = try WebPushCrypto.publicKey(p256dh, name: "p256dh")
        guard let auth = JSONWebToken.base64URLDecode(keys.auth), auth.count == WebPushCrypto.authSecretSize else {
            throw WebPushCryptoError(code: .invalidKey, message: "auth is not a base64url 16-byte secret")
        }
        return (publicKey, auth)
    }

    struct HeaderFailure: Error {
        var message: String
    }

    static let urgencies: Set<String> = ["very-low", "low", "normal", "high"]

    /// `TTL`, `Urgency` and `Topic` from the notification (checked as RFC 8030 defines them),
    /// and the content headers.
    static func pushHeaders(for notification: PushNotification, defaultTTL: Int) -> Result<HTTPHeaders, HeaderFailure> {
        var headers = HTTPHeaders()
        headers.reserveCapacity(6)
        if let ttl = notification.header("ttl") {
            let trimmed = ttl.trimmingSpaces()
            guard !trimmed.isEmpty, trimmed.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), trimmed.utf8.count <= 10 else {
                return .failure(HeaderFailure(message: "TTL must be a number of seconds"))
            }
            headers.add(name: "ttl", value: trimmed)
        } else {
            headers.add(name: "ttl", value: String(defaultTTL))
        }
        if let urgency = notification.header("urgency") {
            let lowered = urgency.trimmingSpaces().lowercased()
            guard urgencies.contains(lowered) else {
                return .failure(HeaderFailure(message: "Urgency must be very-low, low, normal or high"))
            }
            headers.add(name: "urgency", value: lowered)
        }
        if let topic = notification.header("topic") {
            guard isValidTopic(topic) else {
                return .failure(HeaderFailure(message: "Topic must be at most 32 characters of the base64url alphabet"))
            }
            headers.add(name: "topic", value: topic)
        }
        headers.add(name: "content-encoding", value: "aes128gcm")
        headers.add(name: "content-type", value: "application/octet-stream")
        return .success(headers)
    }

    /// RFC 8030 §5.4: at most 32 characters of `[A-Za-z0-9_-]`.
    static func isValidTopic(_ topic: String) -> Bool {
        let utf8 = topic.utf8
        return !utf8.isEmpty && utf8.count <= 32
            && utf8.allSatisfy { byte in
                (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                    || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                    || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
            }
    }

    /// Connections open now to the browsers' push services.
    public var openConnections: Int? { pool.openConnections }

    /// Closes the connections. Later sends report ``DeliveryOutcome/pnsUnreachable``.
    public func shutdown() async throws {
        try await pool.shutdown()
    }
}
