import Crypto
import Foundation
import HeraldTLS
import Logging
import NIOCore
import NIOSSL
import Synchronization

/// The APNs emulator's request handling: `POST /3/device/<token>` checked the way APNs checks it,
/// and `/_emulator/…` control routes.
final class APNsResponder: EmulatorResponder {
    /// A provider token that was accepted once. Only its age is checked again.
    struct VerifiedToken {
        var keyID: String
        var teamID: String
        var issuedAt: Int
    }

    /// Per connection: the last authorization header and what it verified to, so that a
    /// connection that reuses its token (the normal case) costs one string comparison.
    struct ConnectionState {
        var authorization: String?
        var token: VerifiedToken?
        /// The topic of the connection's client certificate, when it was issued by
        /// ``APNsEmulator/Configuration/clientCertificateAuthority`` and was valid at the handshake.
        var certificateTopic: String?
    }

    private struct ProviderTokens {
        /// Accepted JWTs (the string after `bearer `).
        var accepted: [String: VerifiedToken] = [:]
        /// When each key last presented a new token.
        var lastNewToken: [String: Date] = [:]
    }

    private struct ErrorBody: Encodable {
        var reason: String
        var timestamp: Int64?
    }

    private struct JWTHeader: Decodable {
        var alg: String
        var kid: String
    }

    private struct JWTClaims: Decodable {
        var iss: String
        var iat: Int
    }

    static let pushTypes: Set<String> = [
        "alert", "background", "voip", "location", "complication", "fileprovider", "mdm", "liveactivity",
        "pushtotalk", "widgets",
    ]
    /// Topic suffixes APNs accepts for the same app (VoIP, complications, file provider, Live Activities).
    static let topicSuffixes = [".voip", ".complication", ".pushkit.fileprovider", ".push-type.liveactivity"]

    let configuration: APNsEmulator.Configuration
    let registry: DeviceRegistry
    let faults = FaultQueue()
    let accepted = Atomic<Int>(0)
    private let keys: [String: APNsEmulator.SigningKey]
    private let tokens = Mutex(ProviderTokens())
    private let errorBodies: [APNsReason: ByteBuffer]
    private let logger: Logger

    init(configuration: APNsEmulator.Configuration, logger: Logger) {
        self.configuration = configuration
        self.registry = DeviceRegistry(inboxLimit: configuration.inboxLimit)
        self.keys = Dictionary(configuration.signingKeys.map { ($0.keyID, $0) }, uniquingKeysWith: { _, last in last })
        self.logger = logger
        var bodies: [APNsReason: ByteBuffer] = [:]
        for reason in APNsReason.known {
            bodies[reason] = Self.encode(ErrorBody(reason: reason.rawValue))
        }
        self.errorBodies = bodies
    }

    func makeConnectionState() -> ConnectionState { ConnectionState() }

    func makeConnectionState(clientCertificate: NIOSSLCertificate?) -> ConnectionState {
        var state = ConnectionState()
        if let clientCertificate, let authority = configuration.clientCertificateAuthority,
            let verified = ClientCertificate.verified(clientCertificate, issuedBy: authority, now: configuration.now())
        {
            // A certificate without a UID names no app: it authorizes no topic.
            state.certificateTopic = verified.topic ?? ""
        }
        return state
    }

    // MARK: - Requests

    func respond(to request: EmulatorRequest, state: inout ConnectionState, allocator: ByteBufferAllocator)
        -> EmulatorResponse
    {
        let path = request.path
        let devicePrefix = "/3/device/"
        guard path.hasPrefix(devicePrefix) || path == "/3/device" else {
            if path.hasPrefix(EmulatorControlAPI.prefix) {
                return EmulatorControlAPI.respond(to: request, control: self, allocator: allocator)
            }
            return error(404, .badPath, request: request)
        }
        guard request.method == "POST" else {
            return error(405, .methodNotAllowed, request: request)
        }

        // Provider token, or else the connection's client certificate.
        let now = configuration.now()
        var certificateTopic: String?
        if let authorization = request.headers.first("authorization") {
            if let failure = checkProviderToken(authorization, state: &state, now: now) {
                return error(failure.status, failure.reason, request: request)
            }
        } else if let topic = state.certificateTopic {
            certificateTopic = topic
        } else {
            return error(403, .missingProviderToken, request: request)
        }

        // Device token.
        var deviceToken = String(path.dropFirst(devicePrefix.utf8.count))
        if deviceToken.isEmpty {
            return error(400, .missingDeviceToken, request: request)
        }
        switch Self.checkDeviceToken(deviceToken) {
        case .invalid: return error(400, .badDeviceToken, request: request)
        case .lowercase: break
        case .mixedCase: deviceToken = deviceToken.lowercased()
        }
        var deviceTopic: String?
        switch registry.status(of: deviceToken) {
        case .unknown:
            if !configuration.openDeviceRegistry {
                return error(400, .badDeviceToken, request: request)
            }
        case .unregistered(let at):
            return unregistered(at: at, request: request)
        case .active(let topic):
            deviceTopic = topic
        }

        // Headers.
        guard let topic = request.headers.first("apns-topic"), !topic.isEmpty else {
            return error(400, .missingTopic, request: request)
        }
        if !configuration.topics.isEmpty, !Self.topic(topic, isAllowedIn: configuration.topics) {
            return error(400, .topicDisallowed, request: request)
        }
        if let certificateTopic, !Self.topic(topic, belongsTo: certificateTopic) {
            return error(400, .topicDisallowed, request: request)
        }
        if let deviceTopic, !Self.topic(topic, belongsTo: deviceTopic) {
            return error(400, .deviceTokenNotForTopic, request: request)
        }
        let pushType = request.headers.first("apns-push-type")
        if let pushType, !Self.pushTypes.contains(pushType) {
            return error(400, .invalidPushType, request: request)
        }
        if let priority = request.headers.first("apns-priority") {
            guard priority == "10" || priority == "5" || priority == "1" else {
                return error(400, .badPriority, request: request)
            }
            if pushType == "background", priority != "5" {
                return error(400, .badPriority, request: request)
            }
        }
        if let expiration = request.headers.first("apns-expiration") {
            guard let seconds = Int64(expiration), seconds >= 0 else {
                return error(400, .badExpirationDate, request: request)
            }
        }
        if let collapseID = request.headers.first("apns-collapse-id"), collapseID.utf8.count > 64 {
            return error(400, .badCollapseId, request: request)
        }
        let apnsID = request.headers.first("apns-id")
        if let apnsID, UUID(uuidString: apnsID) == nil {
            return error(400, .badMessageId, request: request)
        }

        // Payload.
        let size = request.bodyCount
        guard size > 0, let body = request.body else {
            return error(400, .payloadEmpty, request: request)
        }
        let limit = (pushType == "voip" || topic.hasSuffix(".voip")) ? 5120 : 4096
        if size > limit {
            return error(413, .payloadTooLarge, request: request)
        }
        guard JSONSyntax.isObject(body) else {
            return error(400, .badPayload, request: request)
        }

        if let fault = faults.next() {
            return self.fault(fault, request: request)
        }

        // Accepted.
        let id = apnsID ?? RandomIdentifier.uuid()
        if configuration.recordsPayloads {
            var headers: [String: String] = [:]
            request.headers.forEach(withPrefix: "apns-") { name, value in headers[name] = value }
            registry.record(
                ReceivedNotification(
                    id: id,
                    token: deviceToken,
                    headers: headers,
                    payload: String(buffer: body),
                    receivedAt: now
                )
            )
        }
        accepted.add(1, ordering: .relaxed)
        return EmulatorResponse(status: 200, headers: [("apns-id", id), ("apns-unique-id", RandomIdentifier.uuid())])
    }

    // MARK: - Provider tokens

    /// Checks the request's provider token, reusing the connection's last verification when
    /// the header is the same; `nil` when the token is accepted.
    private func checkProviderToken(_ authorization: String, state: inout ConnectionState, now: Date) -> TokenFailure? {
        let token: VerifiedToken
        if let cached = state.token, state.authorization == authorization {
            token = cached
        } else {
            switch verifyProviderToken(authorization, now: now) {
            case .success(let verified):
                token = verified
                state.authorization = authorization
                state.token = verified
            case .failure(let failure):
                return failure
            }
        }
        let age = now.timeIntervalSince1970 - Double(token.issuedAt)
        if age > configuration.providerTokenLifetime {
            return TokenFailure(status: 403, reason: .expiredProviderToken)
        }
        if age < -60 {
            return TokenFailure(status: 403, reason: .invalidProviderToken)
        }
        return nil
    }

    private struct TokenFailure: Error {
        var status: Int
        var reason: APNsReason
    }

    /// Checks a provider token the first time it is seen: form, key, team, signature, age and
    /// update rate. Accepted tokens are remembered, so each distinct JWT is verified once.
    private func verifyProviderToken(_ authorization: String, now: Date) -> Result<VerifiedToken, TokenFailure> {
        let invalid = TokenFailure(status: 403, reason: .invalidProviderToken)
        let utf8 = authorization.utf8
        guard utf8.count > 7,
            authorization.prefix(7).lowercased() == "bearer "
        else { return .failure(invalid) }
        let jwt = String(authorization.dropFirst(7).trimmingCharacters(in: .whitespaces))

        if let known = tokens.withLock({ $0.accepted[jwt] }) {
            return .success(known)
        }

        guard let parsed = CompactJWT(jwt[...]),
            let header = parsed.decodeHeader(JWTHeader.self), header.alg == "ES256", !header.kid.isEmpty,
            let claims = parsed.decodeClaims(JWTClaims.self)
        else { return .failure(invalid) }
        guard let key = keys[header.kid], key.teamID == claims.iss else {
            return .failure(invalid)
        }
        guard parsed.signature.count == 64,
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: parsed.signature),
            key.publicKey.isValidSignature(signature, for: parsed.signingInput)
        else { return .failure(invalid) }

        let age = now.timeIntervalSince1970 - Double(claims.iat)
        if age > configuration.providerTokenLifetime {
            return .failure(TokenFailure(status: 403, reason: .expiredProviderToken))
        }
        if age < -60 {
            return .failure(invalid)
        }

        let verified = VerifiedToken(keyID: header.kid, teamID: claims.iss, issuedAt: claims.iat)
        let interval = configuration.minimumProviderTokenInterval
        let lifetime = configuration.providerTokenLifetime
        return tokens.withLock { tokens -> Result<VerifiedToken, TokenFailure> in
            if let known = tokens.accepted[jwt] { return .success(known) }
            if let last = tokens.lastNewToken[header.kid], now.timeIntervalSince(last) < interval {
                return .failure(TokenFailure(status: 429, reason: .tooManyProviderTokenUpdates))
            }
            tokens.lastNewToken[header.kid] = now
            if tokens.accepted.count >= 1024 {
                let oldest = now.timeIntervalSince1970 - lifetime
                tokens.accepted = tokens.accepted.filter { Double($0.value.issuedAt) >= oldest }
            }
            tokens.accepted[jwt] = verified
            return .success(verified)
        }
    }

    // MARK: - Checks

    enum DeviceTokenForm { case invalid, lowercase, mixedCase }

    /// Even-length hex, 64 to 200 characters.
    static func checkDeviceToken(_ token: String) -> DeviceTokenForm {
        let utf8 = token.utf8
        guard utf8.count >= 64, utf8.count <= 200, utf8.count % 2 == 0 else { return .invalid }
        var form = DeviceTokenForm.lowercase
        for byte in utf8 {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"): continue
            case UInt8(ascii: "A")...UInt8(ascii: "F"): form = .mixedCase
            default: return .invalid
            }
        }
        return form
    }

    /// `topic` is the app's topic or the app's topic with one of APNs' suffixes.
    static func topic(_ topic: String, belongsTo appTopic: String) -> Bool {
        topic == appTopic || topicSuffixes.contains { topic == appTopic + $0 }
    }

    static func topic(_ topic: String, isAllowedIn allowed: Set<String>) -> Bool {
        if allowed.contains(topic) { return true }
        for suffix in topicSuffixes where topic.hasSuffix(suffix) {
            if allowed.contains(String(topic.dropLast(suffix.count))) { return true }
        }
        return false
    }

    // MARK: - Responses

    private func error(_ status: Int, _ reason: APNsReason, request: EmulatorRequest) -> EmulatorResponse {
        logger.trace("apns emulator refused a request", metadata: ["herald.apns.reason": "\(reason.rawValue)"])
        return EmulatorResponse(
            status: status,
            headers: [
                ("apns-id", request.headers.first("apns-id") ?? RandomIdentifier.uuid()),
                ("content-type", "application/json"),
            ],
            body: errorBodies[reason] ?? Self.encode(ErrorBody(reason: reason.rawValue))
        )
    }

    private func unregistered(at date: Date, request: EmulatorRequest) -> EmulatorResponse {
        let body = ErrorBody(reason: APNsReason.unregistered.rawValue, timestamp: Int64(date.timeIntervalSince1970 * 1000))
        return EmulatorResponse(
            status: 410,
            headers: [
                ("apns-id", request.headers.first("apns-id") ?? RandomIdentifier.uuid()),
                ("content-type", "application/json"),
            ],
            body: Self.encode(body)
        )
    }

    private func fault(_ fault: Fault, request: EmulatorRequest) -> EmulatorResponse {
        var response = error(fault.status, APNsReason(rawValue: fault.reason), request: request)
        if let retryAfter = fault.retryAfter {
            response.headers.append(("retry-after", String(retryAfter)))
        }
        return response
    }

    private static func encode(_ body: ErrorBody) -> ByteBuffer {
        // Encoding an Encodable struct cannot fail.
        let data = (try? JSONEncoder().encode(body)) ?? Data()
        return ByteBuffer(bytes: data)
    }
}

extension APNsResponder: EmulatorControl {
    func controlRegisterDevice(topic: String?) throws(ControlError) -> String {
        guard let topic, !topic.isEmpty else {
            throw ControlError(status: 400, message: "topic is required")
        }
        return registerDevice(topic: topic)
    }

    func registerDevice(topic: String) -> String {
        let token = RandomIdentifier.hex(byteCount: 32)
        registry.register(token: token, topic: topic)
        return token
    }

    func notifications(for token: String) -> [ReceivedNotification] {
        registry.notifications(for: token.lowercased())
    }

    func controlUnregister(token: String) -> Date {
        let now = configuration.now()
        registry.unregister(token: token.lowercased(), at: now)
        return now
    }

    func injectFaults(_ fault: Fault, count: Int) {
        faults.inject(fault, count: count)
    }

    func clearFaults() {
        faults.clear()
    }

    var acceptedCount: Int { accepted.load(ordering: .relaxed) }
    var reach: DeviceRegistry.Reach { registry.reach }
}
