import Crypto
public import Foundation
public import HeraldCore
public import HeraldMetrics
import HeraldTLS
public import Logging
import NIOCore
import NIOHPACK
import Synchronization

/// Sends notifications through Apple Push Notification service (HTTP/2; token or certificate
/// authentication).
///
/// Requests are `POST {endpoint}/3/device/{token}` with an ES256 provider token shared by
/// every provider of the same team and key (``APNsTokenCache``) or, with certificate
/// authentication, no `authorization` header and the client certificate presented on every
/// TLS connection; they are spread round-robin over
/// ``APNsConfiguration/connections`` HTTP/2 connections (``HTTP2Client``: frames written per
/// burst and flushed once, no child channel per stream). The notification's body bytes are
/// sent as they are and every `apns-*` header is passed through; `apns-topic` defaults to
/// the configured topic (with `.push-type.liveactivity` appended for
/// `apns-push-type: liveactivity`) and `apns-push-type` to `alert`.
///
/// Run it in a `ServiceGroup` or call ``shutdown()`` when done.
public final class APNsProvider: PushProvider {
    public let platform: Platform = .apns
    public let configuration: APNsConfiguration

    /// The team and key id (or the certificate's topic), and the service it sends to.
    public var credentialID: String {
        let signer = configuration.clientCertificate == nil ? "\(configuration.teamID).\(configuration.keyID)" : "certificate:\(configuration.topic)"
        return "\(signer)@\(configuration.endpoint)"
    }

    let logger: Logger
    /// The token-signing key; `nil` with certificate authentication.
    let signingKey: P256.Signing.PrivateKey?
    /// The provider-token slot of this provider's team and key (shared through the cache);
    /// `nil` with certificate authentication.
    let tokenEntry: APNsTokenCache.Entry?
    let tokenLifetime: TimeInterval
    let client: HTTP2Client
    /// The broadcast channel management endpoint's client (``APNsConfiguration/broadcastManagementEndpoint``).
    let managementClient: HTTP2Client
    /// The path of ``APNsConfiguration/broadcastManagementEndpoint``, before `/1/apps/…`.
    let managementPath: String
    /// The path of ``APNsConfiguration/endpoint``, before `/3/device/…` and `/4/broadcasts/…`.
    let basePath: String
    private let devicePathPrefix: String
    let timeout: TimeAmount
    private let metrics: HeraldMetrics?
    private let pause: Mutex<APNsPause>
    /// Whether ``pause`` holds a pause: read without the lock, so that a send takes the lock
    /// only while the provider is paused.
    private let isPaused = Atomic<Bool>(false)
    /// Counts a token this provider signed (made once, not per send).
    let tokenSigned: @Sendable () -> Void
    private let pauseLength: Duration
    /// Whether APNs last accepted the token or certificate.
    private let credential: PushCredentialRecorder

    /// - Parameters:
    ///   - configuration: endpoint, credentials and limits; validated here.
    ///   - logger: receives debug messages per failed send and warnings for refused credentials.
    ///   - tokenCache: where provider tokens are shared; the process-wide cache unless a test
    ///     injects one with its own clock.
    /// - Throws: ``PushProviderError`` when the configuration or the key is invalid.
    public init(
        configuration: APNsConfiguration,
        logger: Logger,
        tokenCache: APNsTokenCache = .shared,
        metrics: HeraldMetrics? = nil
    ) throws {
        try configuration.validate()
        if configuration.clientCertificate != nil {
            self.signingKey = nil
            self.tokenEntry = nil
        } else {
            let key: P256.Signing.PrivateKey
            do {
                key = try P256.Signing.PrivateKey(pemRepresentation: configuration.privateKeyPEM)
            } catch {
                throw PushProviderError.invalidPrivateKey(
                    "the APNs key \(configuration.keyID) is not a PEM P-256 private key (.p8 contents)")
            }
            self.signingKey = key
            self.tokenEntry = tokenCache.entry(teamID: configuration.teamID, keyID: configuration.keyID, publicKey: key.publicKey)
        }
        self.configuration = configuration
        self.logger = logger
        self.metrics = metrics
        self.tokenLifetime = Double(configuration.tokenLifetime.components.seconds)
        self.timeout = TimeAmount(configuration.timeout)
        self.pause = Mutex(APNsPause())
        self.pauseLength = configuration.tokenUpdatePause
        self.credential = PushCredentialRecorder(
            method: configuration.clientCertificate == nil ? "token (.p8 key)" : "certificate")
        self.tokenSigned = { [metrics] in metrics?.tokenRefresh(platform: .apns, succeeded: true) }
        let endpoint = try HTTPEndpoint(configuration.endpoint, name: "APNs endpoint")
        self.devicePathPrefix = endpoint.path + "/3/device/"
        var clientConfiguration = endpoint.clientConfiguration(
            trustRoots: configuration.trustRoots, connections: configuration.connections,
            connectTimeout: configuration.connectTimeout, timeout: configuration.timeout)
        clientConfiguration.clientIdentity = configuration.clientCertificate?.identity
        self.basePath = endpoint.path
        let management = try HTTPEndpoint(configuration.broadcastManagementEndpoint, name: "APNs broadcast management endpoint")
        self.managementPath = management.path
        var managementConfiguration = management.clientConfiguration(
            trustRoots: configuration.trustRoots, connections: 1,
            connectTimeout: configuration.connectTimeout, timeout: configuration.timeout)
        managementConfiguration.clientIdentity = configuration.clientCertificate?.identity
        do {
            self.client = try HTTP2Client(configuration: clientConfiguration)
            self.managementClient = try HTTP2Client(configuration: managementConfiguration)
        } catch {
            throw PushProviderError.invalidConfiguration("APNs TLS configuration is not usable: \(error)")
        }
    }

    public func send(_ notification: PushNotification, to target: PushTarget) async -> PushResult {
        // A send that cannot go anyway is answered before it could take the probe's turn.
        if Self.isSendable(notification, to: target) == nil, !client.isShutDown, case .wait(let remaining) = admit() {
            return PushResult(
                disposition: .providerPaused(retryAfter: remaining.seconds), outcome: .throttled,
                reason: APNsReason.tooManyProviderTokenUpdates.rawValue)
        }
        return await transmit([PushSend(notification, to: target)])[0]
    }

    /// Sends the batch's requests together: one provider token, one burst per connection, one
    /// wait. While the provider is paused, each send is admitted on its own (so that one of
    /// them probes when the pause ends).
    public func send(_ batch: [PushSend]) async -> [PushResult] {
        guard batch.count > 1, !isPaused.load(ordering: .relaxed) else { return await sendEach(batch) }
        return await transmit(batch)
    }

    /// Why `notification` cannot be sent to `target` at all, checked before anything is sent.
    private static func isSendable(_ notification: PushNotification, to target: PushTarget) -> PushResult? {
        guard case .bytes = notification.body else {
            return .rejectedLocally(.invalidNotificationFormat, reason: "APNs notifications need a byte body")
        }
        guard isWellFormedDeviceToken(target.handle) else {
            return .rejectedLocally(.badChannel, reason: APNsReason.badDeviceToken.rawValue)
        }
        return nil
    }

    /// The provider token requests carry (`nil` with a client certificate): the current one
    /// without a suspension, signed (or read from the stored tokens) only when it is missing
    /// or old.
    func currentProviderToken() async throws -> APNsProviderToken? {
        guard let tokenEntry, let signingKey else { return nil }
        if let current = tokenEntry.currentToken(lifetime: tokenLifetime) { return current }
        return try await tokenEntry.token(key: signingKey, lifetime: tokenLifetime, signed: tokenSigned)
    }

    /// The key could not sign a provider token: the credential is failing.
    func tokenSigningFailed() {
        answered()
        metrics?.tokenRefresh(platform: .apns, succeeded: false)
        logger.error("APNs provider token could not be signed", metadata: ["apns.key_id": "\(configuration.keyID)"])
        credential.failed("the provider token of key \(configuration.keyID) could not be signed")
    }

    /// Sends every notification of `batch` (already admitted) and classifies each answer.
    private func transmit(_ batch: [PushSend]) async -> [PushResult] {
        var results = batch.map { Self.isSendable($0.notification, to: $0.target) }
        guard !client.isShutDown else {
            return results.map { $0 ?? .unreachable(reason: "provider shut down") }
        }

        let providerToken: APNsProviderToken?
        do {
            providerToken = try await currentProviderToken()
        } catch {
            tokenSigningFailed()
            return results.map { $0 ?? .rejectedLocally(.invalidCredentials, reason: "token signing failed") }
        }

        var requests: [HTTP2Client.BatchRequest] = []
        requests.reserveCapacity(batch.count)
        var sent: [Int] = []
        sent.reserveCapacity(batch.count)
        // The fields after `:path` are the same for every device of a notification: built (and
        // checked) once for each run of devices that share its headers.
        var fields: (of: [(name: String, value: String)], block: HPACKHeaders?)?
        for index in batch.indices where results[index] == nil {
            let item = batch[index]
            guard case .bytes(let body) = item.notification.body else { continue }
            if fields == nil || !Self.same(fields!.of, item.notification.headers) {
                fields = (item.notification.headers, requestFields(for: item.notification, authorization: providerToken?.authorization))
            }
            guard let tail = fields!.block else {
                answered()
                results[index] = .rejectedLocally(.invalidNotificationFormat, reason: "an apns-* header is not a valid HTTP field")
                continue
            }
            var headers = client.headerBlock(path: devicePathPrefix + item.target.handle, reservingCapacity: tail.count)
            headers.add(contentsOf: tail)
            requests.append(HTTP2Client.BatchRequest(headers: headers, body: body))
            sent.append(index)
        }

        let start = ContinuousClock.now
        let answers = await client.send(batch: requests, deadline: .now() + timeout)
        for (index, answer) in zip(sent, answers) {
            results[index] = result(of: answer, sentAt: start, providerToken: providerToken, handle: batch[index].target.handle)
        }
        return results.map { $0! }
    }

    /// The result of one request, from APNs' answer or the lack of one.
    private func result(
        of answer: HTTP2Client.BatchAnswer,
        sentAt start: ContinuousClock.Instant,
        providerToken: APNsProviderToken?,
        handle: String
    ) -> PushResult {
        let response: HTTP2Client.Response
        switch answer.result {
        case .success(let answered):
            response = answered
        case .failure(let error):
            answered()
            metrics?.pushRequest(platform: .apns, status: nil, duration: answer.completedAt - start)
            logger.debug(
                "APNs send failed without a response",
                metadata: ["herald.device": "\(redacted(handle))", "error": "\(error)"])
            return .unreachable()
        }
        metrics?.pushRequest(platform: .apns, status: response.status, duration: answer.completedAt - start)
        return result(of: response, providerToken: providerToken, handle: handle)
    }

    /// The result of an answer from APNs, to a send to a device or a broadcast to a channel
    /// (`handle`, logged redacted): a refused credential marks it failing, an expired or
    /// too-early provider token is dealt with, `retry-after` is kept.
    func result(of response: HTTP2Client.Response, providerToken: APNsProviderToken?, handle: String) -> PushResult {
        if response.status == 200 {
            answered()
            credential.succeeded()
            return .delivered
        }
        return failure(response, providerToken: providerToken, handle: handle)
    }

    private func failure(
        _ response: HTTP2Client.Response,
        providerToken: APNsProviderToken?,
        handle: String
    ) -> PushResult {
        struct ErrorBody: Decodable { var reason: String? }
        let status = response.status
        var reason: APNsReason?
        if let bytes = response.body,
            let decoded = try? JSONDecoder().decode(ErrorBody.self, from: Data(bytes.readableBytesView)),
            let raw = decoded.reason
        {
            reason = APNsReason(raw)
        }
        let retryAfter = response.header("retry-after").flatMap { RetryAfter.parse($0, now: tokenEntry?.now() ?? Date()) }
        if status == 429, reason == .tooManyProviderTokenUpdates, let tokenEntry, let providerToken {
            return tooManyUpdates(providerToken, entry: tokenEntry, retryAfter: retryAfter)
        }
        answered()
        if status == 403, reason == .expiredProviderToken, let tokenEntry, let providerToken {
            let refreshed = tokenEntry.expired(providerToken)
            logger.debug("APNs provider token expired", metadata: ["apns.refreshed": "\(refreshed)"])
        }
        let result = Self.classify(status: status, reason: reason, retryAfter: retryAfter)
        if status == 403, reason != .expiredProviderToken {
            let why = "\(reason?.rawValue ?? "no reason") (HTTP 403)"
            credential.failed(
                configuration.clientCertificate == nil
                    ? "APNs refused the provider token of key \(configuration.keyID): \(why)"
                    : "APNs refused the client certificate: \(why)")
            if let certificate = configuration.clientCertificate {
                logger.warning(
                    "APNs refused the client certificate",
                    metadata: [
                        "apns.certificate": "\(certificate)", "apns.topic": "\(configuration.topic)",
                        "apns.reason": "\(reason?.rawValue ?? "")",
                    ])
            } else {
                logger.warning(
                    "APNs refused the provider token",
                    metadata: ["apns.key_id": "\(configuration.keyID)", "apns.reason": "\(reason?.rawValue ?? "")"])
            }
        } else {
            // Any answer but throttling, a server error or an expired token came after the
            // credential was accepted.
            if status < 500, status != 429, status != 403 { credential.succeeded() }
            logger.debug(
                "APNs send not delivered",
                metadata: [
                    "herald.device": "\(redacted(handle))", "apns.status": "\(status)",
                    "apns.reason": "\(reason?.rawValue ?? "")",
                ])
        }
        return result
    }

    /// Whether a send may go now; the lock is taken only while paused.
    private func admit() -> APNsPause.Admission {
        guard isPaused.load(ordering: .relaxed) else { return .send }
        return pause.withLock { $0.admit(now: .now) }
    }

    /// A send was answered without a token refusal: a pause, if any, ends.
    private func answered() {
        guard isPaused.load(ordering: .relaxed) else { return }
        pause.withLock { pause in
            pause.answered()
            isPaused.store(false, ordering: .relaxed)
        }
    }

    /// APNs refused `token` because it accepted another token of the key less than 20 minutes
    /// ago: a problem of the provider, not of the device. Goes back to the token still valid if
    /// there is one (and the send is repeated at once); otherwise every send pauses for
    /// ``APNsConfiguration/tokenUpdatePause``, after which one send tries again.
    private func tooManyUpdates(_ token: APNsProviderToken, entry tokenEntry: APNsTokenCache.Entry, retryAfter: Double?) -> PushResult {
        let reason = APNsReason.tooManyProviderTokenUpdates.rawValue
        switch tokenEntry.tooManyUpdates(token) {
        case .retry, .reverted:
            answered()
            logger.debug("APNs refused a provider token update; the earlier token is used again")
            return PushResult(disposition: .providerPaused(retryAfter: 0), outcome: .throttled, status: 429, reason: reason)
        case .pause:
            let length = max(pauseLength, .milliseconds(Int64((retryAfter ?? 0) * 1000)))
            let started = pause.withLock { pause in
                isPaused.store(true, ordering: .relaxed)
                return pause.pause(until: .now + length)
            }
            if started {
                metrics?.tokenRefresh(platform: .apns, succeeded: false)
                credential.failed(
                    "APNs refuses the provider token of key \(configuration.keyID) as an update too soon after another (TooManyProviderTokenUpdates): sends wait \(Int(length.seconds.rounded(.up))) s"
                )
                logger.warning(
                    "APNs refuses this key's provider token as an update too soon after another; sends pause and try again",
                    metadata: ["apns.key_id": "\(configuration.keyID)", "herald.pause_seconds": "\(length.seconds)"])
            }
            return PushResult(
                disposition: .providerPaused(retryAfter: length.seconds), outcome: .throttled, status: 429, reason: reason)
        }
    }

    /// The header fields of a request after the pseudo-header fields: authorization (token
    /// authentication only), topic, push type and every `apns-*` header of the notification,
    /// names lowercased as HTTP/2 requires. `nil` when an `apns-*` header is not a valid HTTP
    /// field (its name a token, its value without CR, LF or NUL): the HTTP/2 client sends header
    /// blocks unchecked.
    private func requestFields(for notification: PushNotification, authorization: String?) -> HPACKHeaders? {
        var headers = HPACKHeaders()
        headers.reserveCapacity(notification.headers.count + 3)
        if let authorization { headers.add(name: "authorization", value: authorization) }
        var hasTopic = false
        var hasPushType = false
        var isLiveActivity = false
        for header in notification.headers where header.name.hasCaseInsensitivePrefix("apns-") {
            guard Self.isValidFieldName(header.name), Self.isValidFieldValue(header.value) else { return nil }
            if header.name.utf8.count == 10, header.name.hasCaseInsensitivePrefix("apns-topic") {
                hasTopic = true
            } else if header.name.utf8.count == 14, header.name.hasCaseInsensitivePrefix("apns-push-type") {
                hasPushType = true
                isLiveActivity = header.value.trimmingSpaces().lowercased() == "liveactivity"
            }
            let isLowercase = !header.name.utf8.contains { $0 >= 65 && $0 <= 90 }
            headers.add(name: isLowercase ? header.name : header.name.lowercased(), value: header.value)
        }
        if !hasTopic {
            // Live Activity pushes go to the app's `<bundle id>.push-type.liveactivity` topic.
            headers.add(name: "apns-topic", value: isLiveActivity ? configuration.topic + ".push-type.liveactivity" : configuration.topic)
        }
        if !hasPushType { headers.add(name: "apns-push-type", value: "alert") }
        return headers
    }

    /// Whether two notifications' headers are the same, field for field (cheap for the
    /// notification that a fan-out shares: its strings are the same storage).
    private static func same(_ a: [(name: String, value: String)], _ b: [(name: String, value: String)]) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { $0.name == $1.name && $0.value == $1.value }
    }

    /// An HTTP token (RFC 9110 §5.1): letters, digits and ``!#$%&'*+-.^_`|~``.
    static func isValidFieldName(_ name: String) -> Bool {
        !name.isEmpty
            && name.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"):
                    return true
                default:
                    return "!#$%&'*+-.^_`|~".utf8.contains(byte)
                }
            }
    }

    /// No CR, LF or NUL (RFC 9113 §8.2.1).
    static func isValidFieldValue(_ value: String) -> Bool {
        !value.utf8.contains { $0 == 0 || $0 == 10 || $0 == 13 }
    }

    /// Non-empty, hexadecimal: anything else cannot be a device token and would not even
    /// form a valid URL path.
    static func isWellFormedDeviceToken(_ handle: String) -> Bool {
        !handle.isEmpty && handle.utf8.count <= 400
            && handle.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) || ($0 >= 65 && $0 <= 70) }
    }

    /// Closes the connections once the sends in flight are answered (or reach their timeout).
    /// Later sends report ``DeliveryOutcome/pnsUnreachable``.
    /// HTTP/2 connections to APNs open now.
    public var openConnections: Int? { client.openConnections }

    /// Set while the provider is paused because APNs refuses the key's token update.
    public var problem: String? {
        guard let until = pause.withLock({ $0.until }) else { return nil }
        let left = max(0, (until - .now).seconds)
        return
            "APNs refuses the provider token of key \(configuration.keyID) as an update too soon after another (TooManyProviderTokenUpdates): sends wait, the next try in \(Int(left.rounded(.up))) s"
    }

    /// When the client certificate expires; `nil` with token authentication.
    public var credentialExpiry: Date? { configuration.clientCertificate?.notValidAfter }

    /// Whether APNs last accepted the provider token or the client certificate; failing while
    /// sends are paused for a token update, and once the certificate has expired.
    public var credentialHealth: PushCredentialHealth {
        credential.health(expiresAt: credentialExpiry)
    }

    public func shutdown() async throws {
        await client.shutdown()
        await managementClient.shutdown()
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

/// Whether an ``APNsProvider`` may send: paused while APNs refuses its token as an update that
/// came too soon, with one send let through at the end of each pause to try again.
struct APNsPause: Sendable {
    enum Admission: Equatable {
        case send
        case wait(Duration)
    }

    private(set) var until: ContinuousClock.Instant?
    private var probing = false

    /// Whether a send may go now: always when not paused; once the pause is over, to the
    /// first send only (the probe) until it is answered.
    mutating func admit(now: ContinuousClock.Instant) -> Admission {
        guard let until else { return .send }
        if now < until { return .wait(until - now) }
        if probing { return .wait(.seconds(1)) }
        probing = true
        return .send
    }

    /// APNs refused the token again: pause until `end`. Returns whether a pause began (the
    /// provider was sending until now).
    mutating func pause(until end: ContinuousClock.Instant) -> Bool {
        let began = until == nil
        until = end
        probing = false
        return began
    }

    /// A send was answered without a token refusal: sending goes on.
    mutating func answered() {
        guard until != nil else { return }
        until = nil
        probing = false
    }
}
