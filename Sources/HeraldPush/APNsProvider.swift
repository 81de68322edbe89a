import AsyncHTTPClient
import Crypto
import Foundation
public import HeraldCore
public import Logging
import NIOCore
import NIOHTTP1
public import ServiceLifecycle

/// Sends notifications through Apple Push Notification service (HTTP/2, token auth).
///
/// Requests are `POST {endpoint}/3/device/{token}` with an ES256 provider token shared by
/// every provider of the same team and key (``APNsTokenCache``), spread round-robin over
/// ``APNsConfiguration/connections`` HTTP/2 connections. The notification's body bytes are
/// sent as they are and every `apns-*` header is passed through; `apns-topic` defaults to
/// the configured topic and `apns-push-type` to `alert`.
///
/// Run it in a `ServiceGroup` or call ``shutdown()`` when done.
public final class APNsProvider: PushProvider, Service {
    public let platform: Platform = .apns
    public let configuration: APNsConfiguration

    private let logger: Logger
    private let signingKey: P256.Signing.PrivateKey
    /// The provider-token slot of this provider's team and key (shared through the cache).
    let tokenEntry: APNsTokenCache.Entry
    private let tokenLifetime: TimeInterval
    private let pool: HTTPClientPool
    private let deviceURLPrefix: String
    private let timeout: TimeAmount

    /// - Parameters:
    ///   - configuration: endpoint, credentials and limits; validated here.
    ///   - logger: receives debug messages per failed send and warnings for refused credentials.
    ///   - tokenCache: where provider tokens are shared; the process-wide cache unless a test
    ///     injects one with its own clock.
    /// - Throws: ``PushProviderError`` when the configuration or the key is invalid.
    public init(configuration: APNsConfiguration, logger: Logger, tokenCache: APNsTokenCache = .shared) throws {
        try configuration.validate()
        do {
            self.signingKey = try P256.Signing.PrivateKey(pemRepresentation: configuration.privateKeyPEM)
        } catch {
            throw PushProviderError.invalidPrivateKey(
                "the APNs key \(configuration.keyID) is not a PEM P-256 private key (.p8 contents)")
        }
        self.configuration = configuration
        self.logger = logger
        self.tokenEntry = tokenCache.entry(teamID: configuration.teamID, keyID: configuration.keyID)
        self.tokenLifetime = Double(configuration.tokenLifetime.components.seconds)
        var endpoint = configuration.endpoint
        while endpoint.hasSuffix("/") { endpoint.removeLast() }
        self.deviceURLPrefix = endpoint + "/3/device/"
        self.timeout = TimeAmount(configuration.timeout)
        self.pool = HTTPClientPool(
            count: configuration.connections, trustRoots: configuration.trustRoots, timeout: configuration.timeout)
    }

    public func send(_ notification: PushNotification, to target: PushTarget) async -> PushResult {
        guard case .bytes(let body) = notification.body else {
            return .rejectedLocally(.invalidNotificationFormat, reason: "APNs notifications need a byte body")
        }
        guard Self.isWellFormedDeviceToken(target.handle) else {
            return .rejectedLocally(.badChannel, reason: APNsReason.badDeviceToken.rawValue)
        }
        guard !pool.isShutDown else { return .unreachable(reason: "provider shut down") }

        let providerToken: APNsProviderToken
        do {
            providerToken = try tokenEntry.token(key: signingKey, lifetime: tokenLifetime)
        } catch {
            logger.error("APNs provider token could not be signed", metadata: ["apns.key_id": "\(configuration.keyID)"])
            return .rejectedLocally(.invalidCredentials, reason: "token signing failed")
        }

        var request = HTTPClientRequest(url: deviceURLPrefix + target.handle)
        request.method = .POST
        request.headers = headers(for: notification, authorization: providerToken.authorization)
        request.body = .bytes(body)

        let response: HTTPClientResponse
        do {
            response = try await pool.next().execute(request, timeout: timeout)
        } catch {
            logger.debug(
                "APNs send failed without a response",
                metadata: ["herald.device": "\(redacted(target.handle))", "error": "\(String(describing: error))"])
            return .unreachable()
        }

        let status = Int(response.status.code)
        if status == 200 {
            // No body on success; drain the (empty) stream without any JSON work.
            do { for try await _ in response.body {} } catch {}
            return .delivered
        }
        return await failure(response, status: status, providerToken: providerToken, handle: target.handle)
    }

    private func failure(
        _ response: HTTPClientResponse,
        status: Int,
        providerToken: APNsProviderToken,
        handle: String
    ) async -> PushResult {
        struct ErrorBody: Decodable { var reason: String? }
        var reason: APNsReason?
        if let bytes = try? await response.body.collect(upTo: 64 * 1024),
            let decoded = try? JSONDecoder().decode(ErrorBody.self, from: Data(bytes.readableBytesView)),
            let raw = decoded.reason
        {
            reason = APNsReason(raw)
        }
        let retryAfter = response.headers.first(name: "retry-after").flatMap { RetryAfter.parse($0, now: tokenEntry.now()) }
        if status == 403, reason == .expiredProviderToken {
            let refreshed = tokenEntry.expired(providerToken)
            logger.debug("APNs provider token expired", metadata: ["apns.refreshed": "\(refreshed)"])
        }
        let result = Self.classify(status: status, reason: reason, retryAfter: retryAfter)
        if status == 403, reason != .expiredProviderToken {
            logger.warning(
                "APNs refused the provider token",
                metadata: ["apns.key_id": "\(configuration.keyID)", "apns.reason": "\(reason?.rawValue ?? "")"])
        } else {
            logger.debug(
                "APNs send not delivered",
                metadata: [
                    "herald.device": "\(redacted(handle))", "apns.status": "\(status)",
                    "apns.reason": "\(reason?.rawValue ?? "")",
                ])
        }
        return result
    }

    /// Request headers: authorization, topic, push type and every `apns-*` header of the
    /// notification (names are lowercased on the wire by HTTP/2).
    private func headers(for notification: PushNotification, authorization: String) -> HTTPHeaders {
        var headers = HTTPHeaders()
        headers.reserveCapacity(notification.headers.count + 3)
        headers.add(name: "authorization", value: authorization)
        var hasTopic = false
        var hasPushType = false
        for header in notification.headers where header.name.hasCaseInsensitivePrefix("apns-") {
            if header.name.utf8.count == 10, header.name.hasCaseInsensitivePrefix("apns-topic") {
                hasTopic = true
            } else if header.name.utf8.count == 14, header.name.hasCaseInsensitivePrefix("apns-push-type") {
                hasPushType = true
            }
            headers.add(name: header.name, value: header.value)
        }
        if !hasTopic { headers.add(name: "apns-topic", value: configuration.topic) }
        if !hasPushType { headers.add(name: "apns-push-type", value: "alert") }
        return headers
    }

    /// Non-empty, hexadecimal: anything else cannot be a device token and would not even
    /// form a valid URL path.
    static func isWellFormedDeviceToken(_ handle: String) -> Bool {
        !handle.isEmpty && handle.utf8.count <= 400
            && handle.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) || ($0 >= 65 && $0 <= 70) }
    }

    /// Waits for graceful shutdown, then closes the connections.
    public func run() async throws {
        try? await gracefulShutdown()
        try await shutdown()
    }

    /// Closes the connections. Later sends report ``DeliveryOutcome/pnsUnreachable``.
    public func shutdown() async throws {
        try await pool.shutdown()
    }
}

extension String {
    /// Whether the string starts with the ASCII `prefix`, ignoring ASCII case; no allocation.
    func hasCaseInsensitivePrefix(_ prefix: StaticString) -> Bool {
        let utf8 = self.utf8
        guard utf8.count >= prefix.utf8CodeUnitCount else { return false }
        var index = utf8.startIndex
        return prefix.withUTF8Buffer { expected in
            for byte in expected {
                let actual = utf8[index]
                let folded = actual >= 65 && actual <= 90 ? actual | 0x20 : actual
                if folded != byte { return false }
                index = utf8.index(after: index)
            }
            return true
        }
    }
}
