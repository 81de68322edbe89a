import Foundation
public import HeraldCore
public import HeraldMetrics
public import Logging
import NIOCore
import _CryptoExtras

/// Sends notifications through Firebase Cloud Messaging, HTTP v1 API.
///
/// Each send is `POST {endpoint}/v1/projects/{project}/messages:send` with body
/// `{"message": {…, "token": <handle>}}`, authorized by an OAuth2 access token obtained
/// from the service account (RS256 JWT bearer grant) and cached until shortly before it
/// expires. A 401 refreshes the access token and repeats the send once.
///
/// Sends are spread round-robin over ``FCMConfiguration/connections`` HTTP/2 connections
/// (``HTTP2Client``: frames written per burst and flushed once, no child channel per stream);
/// `:path` is the same for every send, so it is indexed by HPACK like the access token. Token
/// exchanges go over AsyncHTTPClient, or over the same connections when the token URI is on the
/// endpoint's origin (an emulator serving both).
///
/// Run it in a `ServiceGroup` or call ``shutdown()`` when done.
public final class FCMProvider: PushProvider {
    public let platform: Platform = .fcm
    public let configuration: FCMConfiguration

    /// The Firebase project: FCM's quota is per project.
    public var credentialID: String { configuration.serviceAccount.projectID }

    private let client: HTTP2Client
    /// The token endpoint's client when it is on another origin than the sends (Google's).
    private let tokenPool: HTTPClientPool?
    private let transport: HTTPPushTransport<HTTP2Client>
    private let tokens: FCMAccessTokenSource
    /// `{endpoint path}/v1/projects/{project}/messages:send`.
    private let sendPath: String
    private let credential: PushCredentialRecorder

    /// The header fields of every send after `authorization`.
    private static let sendFields: [(name: String, value: String)] = [("content-type", "application/json; charset=UTF-8")]

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
        let endpoint = try HTTPEndpoint(configuration.endpoint, name: "FCM endpoint")
        self.sendPath = endpoint.path + "/v1/projects/" + configuration.serviceAccount.projectID + "/messages:send"
        let client: HTTP2Client
        do {
            client = try HTTP2Client(
                configuration: endpoint.clientConfiguration(
                    trustRoots: configuration.trustRoots, connections: configuration.connections,
                    connectTimeout: configuration.connectTimeout, timeout: configuration.timeout))
        } catch {
            throw PushProviderError.invalidConfiguration("FCM TLS configuration is not usable: \(error)")
        }
        self.client = client
        let tokenEndpoint = try HTTPEndpoint(configuration.effectiveTokenURI, name: "FCM token URI")
        let route: AccessTokenRoute
        if tokenEndpoint.hasSameOrigin(as: endpoint) {
            self.tokenPool = nil
            route = .http2(client, target: tokenEndpoint.target)
        } else {
            let pool = HTTPClientPool(
                count: 1, trustRoots: configuration.trustRoots, timeout: configuration.timeout,
                connectTimeout: configuration.connectTimeout)
            self.tokenPool = pool
            route = .pool(pool)
        }
        let credential = PushCredentialRecorder(method: "service account", now: configuration.now)
        self.credential = credential
        self.transport = HTTPPushTransport(
            wire: client, timeout: configuration.timeout, now: configuration.now, logger: logger, metrics: metrics,
            health: credential)
        self.tokens = FCMAccessTokenSource(
            account: configuration.serviceAccount,
            key: key,
            tokenURI: configuration.effectiveTokenURI,
            route: route,
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
        switch request(notification, to: target) {
        case .send(let request):
            return await transport.send(
                request, authorizer: tokens, service: self, target: ["herald.device": "\(redacted(target.handle))"])
        case .refused(let result):
            return result
        }
    }

    /// Sends the batch's requests with one access token, in one burst per connection, and
    /// waits once.
    public func send(_ batch: [PushSend]) async -> [PushResult] {
        var results = [PushResult?](repeating: nil, count: batch.count)
        var requests: [HTTP2PushRequest] = []
        requests.reserveCapacity(batch.count)
        var sent: [Int] = []
        sent.reserveCapacity(batch.count)
        for (index, item) in batch.enumerated() {
            switch request(item.notification, to: item.target) {
            case .send(let request):
                requests.append(request)
                sent.append(index)
            case .refused(let result):
                results[index] = result
            }
        }
        guard !requests.isEmpty else { return results.map { $0! } }
        let answers = await transport.send(
            batch: requests, authorizer: tokens, service: self,
            targets: { [sent] index in ["herald.device": "\(redacted(batch[sent[index]].target.handle))"] })
        for (index, result) in zip(sent, answers) { results[index] = result }
        return results.map { $0! }
    }

    private enum Request {
        case send(HTTP2PushRequest)
        /// Refused before anything was sent.
        case refused(PushResult)
    }

    /// The request that sends `notification` to `target`: its body completed with the token.
    private func request(_ notification: PushNotification, to target: PushTarget) -> Request {
        guard !target.handle.isEmpty else {
            return .refused(.rejectedLocally(.badChannel, reason: FCMErrorCode.invalidArgument.rawValue))
        }
        let body: ByteBuffer
        if let spliced = notification.fcmRequest?.body(token: target.handle) {
            body = spliced
        } else {
            do {
                body = try Self.requestBody(notification.body, token: target.handle)
            } catch {
                return .refused(.rejectedLocally(.invalidNotificationFormat, reason: "the FCM message is not a JSON object"))
            }
        }
        return .send(HTTP2PushRequest(path: sendPath, indexingPath: true, fields: Self.sendFields, body: body))
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
            message = try JSONValue(parsing: bytes.readableBytesView)
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
    public var openConnections: Int? { client.openConnections + (tokenPool?.openConnections ?? 0) }

    /// Closes the connections once the sends in flight are answered (or reach their timeout).
    /// Later sends report ``DeliveryOutcome/pnsUnreachable``.
    public func shutdown() async throws {
        tokens.cancel()
        await client.shutdown()
        try await tokenPool?.shutdown()
    }
}
