import AsyncHTTPClient
import Foundation
public import HeraldCore
public import HeraldMetrics
public import Logging
import NIOCore
import NIOHTTP1
import _CryptoExtras

/// Sends notifications through Firebase Cloud Messaging, HTTP v1 API.
///
/// Each send is `POST {endpoint}/v1/projects/{project}/messages:send` with body
/// `{"message": {…, "token": <handle>}}`, authorized by an OAuth2 access token obtained
/// from the service account (RS256 JWT bearer grant) and cached until shortly before it
/// expires. A 401 refreshes the access token and repeats the send once.
///
/// Run it in a `ServiceGroup` or call ``shutdown()`` when done.
public final class FCMProvider: PushProvider {
    public let platform: Platform = .fcm
    public let configuration: FCMConfiguration

    private let pool: HTTPClientPool
    private let transport: HTTPPushTransport
    private let tokens: FCMAccessTokenSource
    private let sendURL: String
    private let credential: PushCredentialRecorder

    /// - Throws: ``PushProviderError`` when the configuration or the service account's key is invalid.
    public init(configuration: FCMConfiguration, logger: Logger, metrics: HeraldMetrics? = nil) throws {
        try configuration.validate()
        let key: _RSA.Signing.PrivateKey
        do {
            key = try _RSA.Signing.PrivateKey(pemRepresentation: configuration.serviceAccount.privateKey)
        } catch {
            throw PushProviderError.invalidPrivateKey(
                "the private key of service account \(configuration.serviceAccount.clientEmail) is not a PEM RSA key of 2048 bits or more")
        }
        self.configuration = configuration
        var endpoint = configuration.endpoint
        while endpoint.hasSuffix("/") { endpoint.removeLast() }
        self.sendURL = endpoint + "/v1/projects/" + configuration.serviceAccount.projectID + "/messages:send"
        let pool = HTTPClientPool(
            count: configuration.connections, trustRoots: configuration.trustRoots, timeout: configuration.timeout,
            connectTimeout: configuration.connectTimeout)
        self.pool = pool
        let credential = PushCredentialRecorder(method: "service account", now: configuration.now)
        self.credential = credential
        self.transport = HTTPPushTransport(
            pool: pool, timeout: configuration.timeout, now: configuration.now, logger: logger, metrics: metrics,
            health: credential)
        self.tokens = FCMAccessTokenSource(
            account: configuration.serviceAccount,
            key: key,
            tokenURI: configuration.effectiveTokenURI,
            pool: pool,
            timeout: TimeAmount(configuration.timeout),
            now: configuration.now,
            logger: logger,
            exchanged: { failure in
                metrics?.tokenRefresh(platform: .fcm, succeeded: failure == nil)
                if let failure { credential.failed(failure.error.message) } else { credential.succeeded() }
            }
        )
    }

    /// Whether the service account last got an access token, and FCM last accepted it.
    public var credentialHealth: PushCredentialHealth { credential.health() }

    /// How many OAuth2 token exchanges this provider has started.
    public var tokenExchangeCount: Int { tokens.exchangeCount }

    public func send(_ notification: PushNotification, to target: PushTarget) async -> PushResult {
        guard !target.handle.isEmpty else {
            return .rejectedLocally(.badChannel, reason: FCMErrorCode.invalidArgument.rawValue)
        }
        let body: ByteBuffer
        if let spliced = notification.fcmRequest?.body(token: target.handle) {
            body = spliced
        } else {
            do {
                body = try Self.requestBody(notification.body, token: target.handle)
            } catch {
                return .rejectedLocally(.invalidNotificationFormat, reason: "the FCM message is not a JSON object")
            }
        }
        var request = HTTPClientRequest(url: sendURL)
        request.method = .POST
        request.headers = ["content-type": "application/json; charset=UTF-8"]
        request.body = .bytes(body)
        return await transport.send(
            request, authorizer: tokens, service: self, target: ["herald.device": "\(redacted(target.handle))"])
    }

    /// `{"message": {…fields, "token": token}}`, encoded with `JSONEncoder`. A byte body
    /// must hold a JSON object of message fields. A notification with a message body is
    /// encoded once instead (``FCMRequestTemplate``, the same bytes) and completed per device.
    static func requestBody(_ body: PushNotification.Body, token: String) throws -> ByteBuffer {
        struct SendRequest: Encodable { var message: JSONValue }
        let message: JSONValue
        switch body {
        case .fcmMessage(let value):
            message = value
        case .bytes(let bytes):
            message = try JSONDecoder().decode(JSONValue.self, from: Data(bytes.readableBytesView))
        }
        guard case .object(var fields) = message else {
            throw PushProviderError.invalidConfiguration("the FCM message must be a JSON object")
        }
        fields.removeAll { $0.key == "token" }
        fields.append((key: "token", value: .string(token)))
        return ByteBuffer(bytes: try makeEncoder().encode(SendRequest(message: .object(fields))))
    }

    /// The encoder of request bodies (and of the tokens spliced into them); keys sorted, so
    /// that a message always encodes to the same bytes.
    static func makeEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes, .sortedKeys]
        return encoder
    }

    static func errorCode(fromBody data: Data) -> FCMErrorCode? {
        struct Envelope: Decodable {
            struct Detail: Decodable { var errorCode: String? }
            struct Body: Decodable {
                var status: String?
                var details: [Detail]?
            }
            var error: Body?
        }
        guard let envelope = try? JSONDecoder().decode(Envelope.self, from: data), let error = envelope.error else {
            return nil
        }
        if let code = error.details?.lazy.compactMap(\.errorCode).first { return FCMErrorCode(code) }
        return error.status.map(FCMErrorCode.init(rawValue:))
    }

    /// Connections open now to FCM and its token endpoint.
    public var openConnections: Int? { pool.openConnections }

    /// Closes the connections. Later sends report ``DeliveryOutcome/pnsUnreachable``.
    public func shutdown() async throws {
        tokens.cancel()
        try await pool.shutdown()
    }
}
