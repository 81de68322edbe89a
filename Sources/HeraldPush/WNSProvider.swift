import AsyncHTTPClient
import Foundation
public import HeraldCore
public import HeraldMetrics
public import Logging
import NIOCore
import NIOHTTP1

/// Sends notifications through Windows Push Notification Services.
///
/// Each send is a `POST` to the device's channel URI (the target's handle, an `https` URL on
/// one of ``WNSConfiguration/allowedChannelHosts``, Microsoft's `*.notify.windows.com` unless
/// an emulator or proxy stands in; any other host is refused without a connection, so the
/// token never leaves for it) with `Authorization: Bearer <access token>`, `X-WNS-Type`
/// from the notification's headers (default `wns/toast`) and the matching `Content-Type`.
/// `X-WNS-TTL`, `X-WNS-Tag`, `X-WNS-Group`, `X-WNS-Cache-Policy` and
/// `X-WNS-RequestForStatus` are passed through when the notification has them.
///
/// The access token comes from the OAuth2 client credentials grant and is cached until
/// shortly before it expires; a 401 refreshes it and repeats the send once.
///
/// Run it in a `ServiceGroup` or call ``shutdown()`` when done.
public final class WNSProvider: PushProvider {
    /// Notification headers sent on as they are (matched case-insensitively).
    public static let passThroughHeaders = [
        "X-WNS-TTL", "X-WNS-Tag", "X-WNS-Group", "X-WNS-Cache-Policy", "X-WNS-RequestForStatus",
    ]

    public let platform: Platform = .wns
    public let configuration: WNSConfiguration

    /// The package SID.
    public var credentialID: String { configuration.clientID }

    private let pool: HTTPClientPool
    private let transport: HTTPPushTransport<HTTPClientPool>
    private let tokens: WNSAccessTokenSource
    private let credential: PushCredentialRecorder

    /// - Throws: ``PushProviderError`` when the configuration is invalid.
    public init(configuration: WNSConfiguration, logger: Logger, metrics: HeraldMetrics? = nil) throws {
        try configuration.validate()
        self.configuration = configuration
        let pool = HTTPClientPool(
            count: configuration.connections, trustRoots: configuration.trustRoots, timeout: configuration.timeout,
            connectTimeout: configuration.connectTimeout)
        self.pool = pool
        let credential = PushCredentialRecorder(method: "client credentials", now: configuration.now)
        self.credential = credential
        self.transport = HTTPPushTransport(
            wire: pool, timeout: configuration.timeout, now: configuration.now, logger: logger, metrics: metrics,
            health: credential)
        self.tokens = WNSAccessTokenSource(
            request: WNSAccessTokenRequest(
                clientID: configuration.clientID,
                clientSecret: configuration.clientSecret,
                scope: configuration.scope,
                tokenURI: configuration.tokenURI,
                pool: pool,
                timeout: TimeAmount(configuration.timeout),
                logger: logger
            ),
            now: configuration.now,
            exchanged: { failure in
                metrics?.tokenRefresh(platform: .wns, succeeded: failure == nil)
                if let failure { credential.failed(failure.error.message) } else { credential.succeeded() }
            }
        )
    }

    /// Whether the client credentials last got an access token, and WNS last accepted it.
    public var credentialHealth: PushCredentialHealth { credential.health() }

    /// How many OAuth2 token exchanges this provider has started.
    public var tokenExchangeCount: Int { tokens.exchangeCount }

    public func send(_ notification: PushNotification, to target: PushTarget) async -> PushResult {
        guard configuration.allowedChannelHosts.allowedHost(ofHTTPSURL: target.handle) != nil else {
            return .rejectedLocally(
                .badChannel, reason: "the channel URI is not an https URL on a WNS host this server allows")
        }
        let prepared: Prepared
        switch Self.prepare(notification) {
        case .success(let value): prepared = value
        case .failure(let rejection): return rejection.result
        }
        var request = HTTPClientRequest(url: target.handle)
        request.method = .POST
        request.headers = prepared.headers
        request.body = .bytes(prepared.body)
        return await transport.send(
            request, authorizer: tokens, service: self, target: ["herald.device": "\(Self.redacted(target.handle))"])
    }

    /// Headers and body of a send, built once before any attempt.
    struct Prepared {
        var headers: HTTPHeaders
        var body: ByteBuffer
    }

    struct Rejection: Error {
        var result: PushResult
    }

    /// Checks the notification and builds the request's headers (all but `Authorization`):
    /// a known `X-WNS-Type`, a byte body of at most 5000 bytes, header values without
    /// control characters.
    static func prepare(_ notification: PushNotification) -> Result<Prepared, Rejection> {
        let type = notification.header("X-WNS-Type").map(WNSNotificationType.init(header:)) ?? .toast
        guard type.isKnown else {
            return .failure(Rejection(result: .rejectedLocally(.invalidNotificationFormat, reason: "unknown X-WNS-Type")))
        }
        guard case .bytes(let body) = notification.body else {
            return .failure(
                Rejection(result: .rejectedLocally(.invalidNotificationFormat, reason: "a WNS body is bytes, not an FCM message")))
        }
        guard body.readableBytes <= PayloadLimits.wns else {
            return .failure(
                Rejection(
                    result: .rejectedLocally(
                        .invalidNotificationSize, reason: "the body is \(body.readableBytes) bytes; WNS accepts at most 5000")))
        }
        var headers: HTTPHeaders = [
            "X-WNS-Type": type.rawValue,
            "content-type": type.contentType,
        ]
        for name in passThroughHeaders {
            guard let value = notification.header(name) else { continue }
            guard isValidHeaderValue(value) else {
                return .failure(
                    Rejection(result: .rejectedLocally(.invalidNotificationFormat, reason: "\(name) holds a control character")))
            }
            headers.add(name: name, value: value)
        }
        return .success(Prepared(headers: headers, body: body))
    }

    /// Visible ASCII, spaces and tabs, and UTF-8 beyond ASCII; no CR, LF or other controls.
    static func isValidHeaderValue(_ value: String) -> Bool {
        value.utf8.allSatisfy { $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }
    }

    /// `https://host/…`: where the channel lives, without the part that identifies the device.
    static func redacted(_ channel: String) -> String {
        guard let url = URL(string: channel), let scheme = url.scheme, let host = url.host else { return "…" }
        return scheme + "://" + host + "/…"
    }

    /// Connections open now to WNS (the channels' hosts) and its token endpoint.
    public var openConnections: Int? { pool.openConnections }

    /// Closes the connections. Later sends report ``DeliveryOutcome/pnsUnreachable``.
    public func shutdown() async throws {
        tokens.cancel()
        try await pool.shutdown()
    }
}
