import AsyncHTTPClient
import Foundation
public import HeraldCore
public import Logging
import NIOCore
import NIOHTTP1
public import ServiceLifecycle
import _CryptoExtras

/// Sends notifications through Firebase Cloud Messaging, HTTP v1 API.
///
/// Each send is `POST {endpoint}/v1/projects/{project}/messages:send` with body
/// `{"message": {…, "token": <handle>}}`, authorized by an OAuth2 access token obtained
/// from the service account (RS256 JWT bearer grant) and cached until shortly before it
/// expires. A 401 refreshes the access token and repeats the send once.
///
/// Run it in a `ServiceGroup` or call ``shutdown()`` when done.
public final class FCMProvider: PushProvider, Service {
    public let platform: Platform = .fcm
    public let configuration: FCMConfiguration

    private let logger: Logger
    private let pool: HTTPClientPool
    private let tokens: FCMAccessTokenSource
    private let sendURL: String
    private let timeout: TimeAmount

    /// - Throws: ``PushProviderError`` when the configuration or the service account's key is invalid.
    public init(configuration: FCMConfiguration, logger: Logger) throws {
        try configuration.validate()
        let key: _RSA.Signing.PrivateKey
        do {
            key = try _RSA.Signing.PrivateKey(pemRepresentation: configuration.serviceAccount.privateKey)
        } catch {
            throw PushProviderError.invalidPrivateKey(
                "the private key of service account \(configuration.serviceAccount.clientEmail) is not a PEM RSA key of 2048 bits or more")
        }
        self.configuration = configuration
        self.logger = logger
        var endpoint = configuration.endpoint
        while endpoint.hasSuffix("/") { endpoint.removeLast() }
        self.sendURL = endpoint + "/v1/projects/" + configuration.serviceAccount.projectID + "/messages:send"
        self.timeout = TimeAmount(configuration.timeout)
        let pool = HTTPClientPool(
            count: configuration.connections, trustRoots: configuration.trustRoots, timeout: configuration.timeout,
            connectTimeout: configuration.connectTimeout)
        self.pool = pool
        self.tokens = FCMAccessTokenSource(
            account: configuration.serviceAccount,
            key: key,
            tokenURI: configuration.effectiveTokenURI,
            pool: pool,
            timeout: TimeAmount(configuration.timeout),
            now: configuration.now,
            logger: logger
        )
    }

    /// How many OAuth2 token exchanges this provider has started.
    public var tokenExchangeCount: Int { tokens.exchangeCount }

    public func send(_ notification: PushNotification, to target: PushTarget) async -> PushResult {
        guard !target.handle.isEmpty else {
            return .rejectedLocally(.badChannel, reason: FCMErrorCode.invalidArgument.rawValue)
        }
        let body: ByteBuffer
        do {
            body = try Self.requestBody(notification.body, token: target.handle)
        } catch {
            return .rejectedLocally(.invalidNotificationFormat, reason: "the FCM message is not a JSON object")
        }
        guard !pool.isShutDown else { return .unreachable(reason: "provider shut down") }

        var attempt = 0
        while true {
            attempt += 1
            let accessToken: FCMAccessTokenSource.AccessToken
            do {
                accessToken = try await tokens.token()
            } catch {
                if error.transient { return .unreachable(reason: error.oauthError ?? "token endpoint unreachable") }
                return .rejectedLocally(.invalidCredentials, reason: error.oauthError ?? "token request refused")
            }

            var request = HTTPClientRequest(url: sendURL)
            request.method = .POST
            request.headers = [
                "authorization": accessToken.authorization,
                "content-type": "application/json; charset=UTF-8",
            ]
            request.body = .bytes(body)

            let response: HTTPClientResponse
            do {
                response = try await pool.next().execute(request, timeout: timeout)
            } catch {
                logger.debug(
                    "FCM send failed without a response",
                    metadata: ["herald.device": "\(redacted(target.handle))", "error": "\(String(describing: error))"])
                return .unreachable()
            }
            let status = Int(response.status.code)
            if status == 200 {
                do { for try await _ in response.body {} } catch {}
                return .delivered
            }

            let errorCode = await Self.errorCode(of: response)
            if status == 401, attempt == 1, errorCode != .thirdPartyAuthError {
                // The access token was refused (revoked or expired early): get a new one and
                // repeat this send once.
                tokens.invalidate(accessToken)
                logger.debug("FCM access token refused; refreshing")
                continue
            }
            let retryAfter = response.headers.first(name: "retry-after").flatMap {
                RetryAfter.parse($0, now: configuration.now())
            }
            let result = Self.classify(status: status, errorCode: errorCode, retryAfter: retryAfter)
            if result.outcome == .invalidCredentials {
                logger.warning(
                    "FCM refused the credentials",
                    metadata: ["fcm.status": "\(status)", "fcm.error_code": "\(errorCode?.rawValue ?? "")"])
            } else {
                logger.debug(
                    "FCM send not delivered",
                    metadata: [
                        "herald.device": "\(redacted(target.handle))", "fcm.status": "\(status)",
                        "fcm.error_code": "\(errorCode?.rawValue ?? "")",
                    ])
            }
            return result
        }
    }

    /// `{"message": {…fields, "token": token}}`, encoded with `JSONEncoder`. A byte body
    /// must hold a JSON object of message fields.
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
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return ByteBuffer(bytes: try encoder.encode(SendRequest(message: .object(fields))))
    }

    /// `error.details[].errorCode`, else `error.status`, from an error response.
    static func errorCode(of response: HTTPClientResponse) async -> FCMErrorCode? {
        guard let bytes = try? await response.body.collect(upTo: 256 * 1024) else { return nil }
        return errorCode(fromBody: Data(bytes.readableBytesView))
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

    /// Waits for graceful shutdown, then closes the connections.
    public func run() async throws {
        try? await gracefulShutdown()
        try await shutdown()
    }

    /// Closes the connections. Later sends report ``DeliveryOutcome/pnsUnreachable``.
    public func shutdown() async throws {
        tokens.cancel()
        try await pool.shutdown()
    }
}
