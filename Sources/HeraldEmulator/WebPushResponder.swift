import Crypto
import Foundation
import HeraldCore
import HeraldTLS
import HeraldWebPushCrypto
import Logging
import NIOCore
import Synchronization

/// The Web Push emulator's request handling: `POST /push/<id>` checked the way push services
/// check it (TTL, VAPID, content coding, size, decryption), `POST /_emulator/subscriptions`, and
/// the shared `/_emulator/…` control routes.
final class WebPushResponder: EmulatorResponder {
    /// A VAPID token that verified once on this connection; only its `exp` is checked again.
    struct VerifiedToken {
        /// `k`: the application server's public key, uncompressed.
        var publicKey: [UInt8]
        var exp: Double
    }

    /// Per connection: the last `Authorization` header and what it verified to, so that a client
    /// that reuses its token (the normal case) costs one string comparison.
    struct ConnectionState {
        var authorization: String?
        var token: VerifiedToken?
    }

    /// What the virtual browser keeps for a subscription.
    private struct Subscription: Sendable {
        var privateKey: P256.KeyAgreement.PrivateKey
        var authSecret: [UInt8]
        /// The key that VAPID tokens must be signed with (RFC 8292 §4.2), if restricted.
        var applicationServerKey: [UInt8]?
    }

    /// A refusal: status, a machine-readable reason and a human-readable message.
    struct Refusal: Error {
        var status: Int
        var reason: String
        var message: String
    }

    /// The `reason` values of the emulator's error bodies.
    enum Reason {
        static let noSuchSubscription = "NoSuchSubscription"
        static let unsubscribed = "Unsubscribed"
        static let methodNotAllowed = "MethodNotAllowed"
        static let missingTTL = "MissingTTL"
        static let badTTL = "BadTTL"
        static let badUrgency = "BadUrgency"
        static let badTopic = "BadTopic"
        static let missingAuthorization = "MissingAuthorization"
        static let badAuthorization = "BadAuthorization"
        static let badSignature = "BadSignature"
        static let badAudience = "BadAudience"
        static let expiredToken = "ExpiredToken"
        static let expirationTooFar = "ExpirationTooFar"
        static let badSubject = "BadSubject"
        static let keyMismatch = "KeyMismatch"
        static let payloadTooLarge = "PayloadTooLarge"
        static let unsupportedContentEncoding = "UnsupportedContentEncoding"
        static let decryptionFailed = "DecryptionFailed"
    }

    /// RFC 8292: a token's `exp` must be no more than 24 hours away.
    static let maximumTokenValidity: Double = 24 * 3600
    /// Clock skew allowed on that limit.
    static let clockSkew: Double = 60

    let configuration: WebPushEmulator.Configuration
    let registry: DeviceRegistry
    let faults = FaultQueue()
    let accepted = AcceptLog()
    /// Its devices' receipts, once told where to post them.
    let receipts = DeviceReceipts()
    private let subscriptions = Mutex<[String: Subscription]>([:])
    private let publicBase = Mutex<(url: String, origin: String)>(("", ""))
    private let logger: Logger

    init(configuration: WebPushEmulator.Configuration, logger: Logger) {
        self.configuration = configuration
        self.registry = DeviceRegistry(inboxLimit: configuration.inboxLimit)
        self.logger = logger
    }

    /// Set once the port is known: the base of endpoints and the origin `aud` must name.
    func setPublicBaseURL(_ url: String) {
        var base = url
        while base.hasSuffix("/") { base.removeLast() }
        let origin = Self.origin(of: base) ?? base
        publicBase.withLock { $0 = (base, origin) }
    }

    var origin: String { publicBase.withLock { $0.origin } }

    func makeConnectionState() -> ConnectionState { ConnectionState() }

    // MARK: - Requests

    func respond(
        to request: EmulatorRequest, state: inout ConnectionState, allocator: ByteBufferAllocator
    )
        -> EmulatorResponse
    {
        let path = request.path
        if path.hasPrefix("/push/") {
            let id = String(path.dropFirst("/push/".count))
            switch push(request, id: id, state: &state) {
            case .success(let response): return response
            case .failure(let refusal): return self.refusal(refusal, allocator: allocator)
            }
        }
        if path == "/_emulator/subscriptions" {
            return controlSubscribe(request, allocator: allocator)
        }
        if path.hasPrefix(EmulatorControlAPI.prefix) {
            return EmulatorControlAPI.respond(to: request, control: self, allocator: allocator)
        }
        return refusal(Refusal(status: 404, reason: Reason.noSuchSubscription, message: "no such resource"), allocator: allocator)
    }

    private func push(_ request: EmulatorRequest, id: String, state: inout ConnectionState) -> Result<EmulatorResponse, Refusal> {
        // Subscription.
        guard let subscription = subscriptions.withLock({ $0[id] }) else {
            return .failure(Refusal(status: 404, reason: Reason.noSuchSubscription, message: "no subscription has this endpoint"))
        }
        guard request.method == "POST" else {
            return .failure(Refusal(status: 405, reason: Reason.methodNotAllowed, message: "push messages are POSTed"))
        }
        if case .unregistered = registry.status(of: id) {
            return .failure(Refusal(status: 410, reason: Reason.unsubscribed, message: "the subscription was cancelled"))
        }

        // RFC 8030 headers.
        guard let ttl = request.headers.first("ttl")?.trimmingSpaces() else {
            return .failure(Refusal(status: 400, reason: Reason.missingTTL, message: "the TTL header is required"))
        }
        guard !ttl.isEmpty, ttl.utf8.count <= 10, ttl.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else {
            return .failure(Refusal(status: 400, reason: Reason.badTTL, message: "TTL must be a number of seconds"))
        }

        // VAPID.
        let now = configuration.now()
        if let authorization = request.headers.first("authorization") {
            let token: VerifiedToken
            if let cached = state.token, state.authorization == authorization {
                token = cached
            } else {
                switch verifyVAPID(authorization, now: now) {
                case .success(let verified):
                    token = verified
                    state.authorization = authorization
                    state.token = verified
                case .failure(let refusal):
                    return .failure(refusal)
                }
            }
            if let refusal = Self.checkExpiry(token.exp, now: now) { return .failure(refusal) }
            if let restriction = subscription.applicationServerKey, restriction != token.publicKey {
                return .failure(
                    Refusal(
                        status: 403, reason: Reason.keyMismatch,
                        message: "the subscription is restricted to another application server key"))
            }
        } else if configuration.requiresVAPID || subscription.applicationServerKey != nil {
            return .failure(
                Refusal(status: 401, reason: Reason.missingAuthorization, message: "a VAPID Authorization header is required"))
        }

        var headers = ["ttl": ttl]
        if let urgency = request.headers.first("urgency") {
            guard ["very-low", "low", "normal", "high"].contains(urgency) else {
                return .failure(
                    Refusal(status: 400, reason: Reason.badUrgency, message: "Urgency must be very-low, low, normal or high"))
            }
            headers["urgency"] = urgency
        }
        if let topic = request.headers.first("topic") {
            guard Self.isValidTopic(topic) else {
                return .failure(
                    Refusal(status: 400, reason: Reason.badTopic, message: "Topic must be at most 32 base64url characters"))
            }
            headers["topic"] = topic
        }

        // Body.
        let size = request.bodyCount
        guard size <= configuration.maxMessageSize else {
            return .failure(
                Refusal(
                    status: 413, reason: Reason.payloadTooLarge,
                    message: "the body is \(size) bytes; at most \(configuration.maxMessageSize) are accepted"))
        }
        var plaintext: [UInt8] = []
        if let body = request.body, size > 0 {
            let coding = request.headers.first("content-encoding")?.trimmingSpaces().lowercased()
            guard coding == "aes128gcm" else {
                return .failure(
                    Refusal(
                        status: 415, reason: Reason.unsupportedContentEncoding,
                        message: "the body must be encrypted with Content-Encoding: aes128gcm"))
            }
            do throws(WebPushCryptoError) {
                plaintext = try WebPushCrypto.decrypt(
                    Array(body.readableBytesView),
                    userAgentPrivateKey: subscription.privateKey,
                    authSecret: subscription.authSecret
                )
            } catch {
                return .failure(
                    Refusal(status: 400, reason: Reason.decryptionFailed, message: "the body does not decrypt: \(error.message)"))
            }
        }

        if let fault = faults.next() {
            return .success(faultResponse(fault))
        }

        // Accepted.
        let messageID = RandomIdentifier.uuid()
        if configuration.recordsPayloads {
            let payload: String
            if let text = String(validating: plaintext, as: UTF8.self) {
                payload = text
            } else {
                payload = Data(plaintext).base64EncodedString()
                headers["x-herald-payload-encoding"] = "base64"
            }
            registry.record(
                ReceivedNotification(id: messageID, token: id, headers: headers, payload: payload, receivedAt: now)
            )
        }
        accepted.record()
        let base = publicBase.withLock { $0.url }
        receipts.received(plaintext, platform: .webpush, token: base + "/push/" + id)
        return .success(EmulatorResponse(status: 201, headers: [("location", base + "/m/" + messageID), ("ttl", ttl)]))
    }

    // MARK: - VAPID

    private struct JWTHeader: Decodable {
        var alg: String
    }

    private struct JWTClaims: Decodable {
        var aud: String?
        var exp: Double?
        var sub: String?
    }

    /// Checks a VAPID `Authorization` header the first time a connection presents it: form, key,
    /// signature, audience, expiry and subject.
    func verifyVAPID(_ authorization: String, now: Date) -> Result<VerifiedToken, Refusal> {
        func malformed(_ message: String) -> Result<VerifiedToken, Refusal> {
            .failure(Refusal(status: 401, reason: Reason.badAuthorization, message: message))
        }
        guard let (t, k) = Self.vapidParameters(authorization) else {
            return malformed("the Authorization header must be 'vapid t=<JWT>, k=<public key>'")
        }
        guard let keyBytes = Base64URL.decode(k), keyBytes.count == 65, keyBytes[0] == 0x04,
            let key = try? P256.Signing.PublicKey(x963Representation: keyBytes)
        else { return malformed("k is not an uncompressed P-256 public key in base64url") }
        guard let jwt = CompactJWT(t), let header = jwt.decodeHeader(JWTHeader.self),
            let claims = jwt.decodeClaims(JWTClaims.self)
        else { return malformed("t is not a JSON Web Token") }
        guard header.alg == "ES256" else { return malformed("the token must be signed with ES256") }
        guard jwt.signature.count == 64,
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: jwt.signature),
            key.isValidSignature(signature, for: jwt.signingInput)
        else {
            return .failure(Refusal(status: 403, reason: Reason.badSignature, message: "the token's signature does not verify with k"))
        }
        let origin = self.origin
        guard let aud = claims.aud, Self.origin(of: aud) == origin else {
            return .failure(Refusal(status: 403, reason: Reason.badAudience, message: "aud must be the origin \(origin)"))
        }
        guard let exp = claims.exp else { return malformed("the token has no exp") }
        if let refusal = Self.checkExpiry(exp, now: now) { return .failure(refusal) }
        if let sub = claims.sub {
            let lowered = sub.lowercased()
            guard (lowered.hasPrefix("mailto:") && sub.count > 7) || (lowered.hasPrefix("https://") && sub.count > 8) else {
                return .failure(Refusal(status: 403, reason: Reason.badSubject, message: "sub must be a mailto: or https: URI"))
            }
        }
        return .success(VerifiedToken(publicKey: keyBytes, exp: exp))
    }

    static func checkExpiry(_ exp: Double, now: Date) -> Refusal? {
        let seconds = now.timeIntervalSince1970
        if exp <= seconds {
            return Refusal(status: 403, reason: Reason.expiredToken, message: "the token has expired")
        }
        if exp > seconds + maximumTokenValidity + clockSkew {
            return Refusal(status: 403, reason: Reason.expirationTooFar, message: "exp must be at most 24 hours away")
        }
        return nil
    }

    /// `t` and `k` of `vapid t=…, k=…` (RFC 8292 §3); parameters in any order, with or without
    /// spaces after commas, values optionally quoted.
    static func vapidParameters(_ authorization: String) -> (t: Substring, k: Substring)? {
        let trimmed = authorization.trimmingSpaces()
        guard let space = trimmed.firstIndex(of: " "), trimmed[..<space].lowercased() == "vapid" else { return nil }
        var t: Substring?
        var k: Substring?
        for parameter in trimmed[space...].split(separator: ",") {
            let item = parameter.drop(while: { $0 == " " })
            guard let equals = item.firstIndex(of: "=") else { return nil }
            var value = item[item.index(after: equals)...]
            while value.last == " " { value = value.dropLast() }
            if value.count >= 2, value.first == "\"", value.last == "\"" { value = value.dropFirst().dropLast() }
            switch item[..<equals].lowercased() {
            case "t": t = value
            case "k": k = value
            default: continue
            }
        }
        guard let t, let k, !t.isEmpty, !k.isEmpty else { return nil }
        return (t, k)
    }

    /// `scheme://host[:port]` of an http(s) URL with no path (or `/`), lowercased, without the
    /// scheme's default port; `nil` for anything else.
    static func origin(of url: String) -> String? {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            scheme == "https" || scheme == "http", var host = components.host?.lowercased(), !host.isEmpty,
            components.path.isEmpty || components.path == "/", components.query == nil, components.fragment == nil,
            components.user == nil
        else { return nil }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        var origin = scheme + "://" + (host.contains(":") ? "[\(host)]" : host)
        if let port = components.port, port != (scheme == "https" ? 443 : 80) {
            origin += ":\(port)"
        }
        return origin
    }

    /// RFC 8030 §5.4: at most 32 characters of the base64url alphabet.
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

    // MARK: - Subscriptions

    func subscribe(applicationServerKey: P256.Signing.PublicKey?) -> WebPushSubscription {
        let privateKey = P256.KeyAgreement.PrivateKey()
        var generator = SystemRandomNumberGenerator()
        let auth = (0..<WebPushCrypto.authSecretSize).map { _ in generator.next() as UInt8 }
        let id = RandomIdentifier.token(count: 43)
        subscriptions.withLock {
            $0[id] = Subscription(
                privateKey: privateKey,
                authSecret: auth,
                applicationServerKey: applicationServerKey.map { Array($0.x963Representation) }
            )
        }
        registry.register(token: id, topic: nil)
        let base = publicBase.withLock { $0.url }
        return WebPushSubscription(
            endpoint: base + "/push/" + id,
            keys: WebPushKeys(
                p256dh: Base64URL.encode(privateKey.publicKey.x963Representation),
                auth: Base64URL.encode(auth)
            )
        )
    }

    private struct SubscribeRequest: Decodable {
        var applicationServerKey: String?
    }

    /// `POST /_emulator/subscriptions` `{"applicationServerKey": …}?` → the subscription's JSON.
    private func controlSubscribe(_ request: EmulatorRequest, allocator: ByteBufferAllocator) -> EmulatorResponse {
        guard request.method == "POST" else {
            return json(405, ["error": "use POST"], allocator: allocator)
        }
        var key: P256.Signing.PublicKey?
        if let body = request.body, body.readableBytes > 0 {
            guard let decoded = try? JSONDecoder().decode(SubscribeRequest.self, from: Data(body.readableBytesView)) else {
                return json(400, ["error": "body must be {\"applicationServerKey\": \"<base64url public key>\"} or empty"], allocator: allocator)
            }
            if let text = decoded.applicationServerKey {
                guard let bytes = Base64URL.decode(text[...]), let parsed = try? P256.Signing.PublicKey(x963Representation: bytes)
                else {
                    return json(400, ["error": "applicationServerKey is not a base64url P-256 public key"], allocator: allocator)
                }
                key = parsed
            }
        }
        return json(200, subscribe(applicationServerKey: key), allocator: allocator)
    }

    // MARK: - Responses

    private struct ErrorBody: Encodable {
        var reason: String
        var message: String
    }

    private func refusal(_ refusal: Refusal, allocator: ByteBufferAllocator) -> EmulatorResponse {
        logger.trace("web push emulator refused a request", metadata: ["herald.webpush.reason": "\(refusal.reason)"])
        var response = json(refusal.status, ErrorBody(reason: refusal.reason, message: refusal.message), allocator: allocator)
        if refusal.status == 401 {
            response.headers.append(("www-authenticate", "vapid"))
        }
        return response
    }

    private func faultResponse(_ fault: Fault) -> EmulatorResponse {
        var response = json(fault.status, ErrorBody(reason: fault.reason, message: "injected fault"), allocator: ByteBufferAllocator())
        if let retryAfter = fault.retryAfter {
            response.headers.append(("retry-after", String(retryAfter)))
        }
        return response
    }

    private func json(_ status: Int, _ value: some Encodable, allocator: ByteBufferAllocator) -> EmulatorResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(value)) ?? Data()
        return EmulatorResponse(
            status: status,
            headers: [("content-type", "application/json")],
            body: allocator.buffer(bytes: data)
        )
    }
}

extension WebPushResponder: EmulatorControl {
    /// Web Push subscriptions need keys, which `POST /_emulator/devices` cannot return.
    func controlRegisterDevice(topic: String?) throws(ControlError) -> String {
        throw ControlError(status: 400, message: "Web Push subscriptions are issued by POST /_emulator/subscriptions")
    }

    func notifications(for token: String) -> [ReceivedNotification] {
        registry.notifications(for: WebPushSubscription.id(fromEndpoint: token))
    }

    func controlUnregister(token: String) -> Date {
        let now = configuration.now()
        let id = WebPushSubscription.id(fromEndpoint: token)
        // Only issued subscriptions can be cancelled; an unknown id stays unknown (404).
        if subscriptions.withLock({ $0[id] != nil }) {
            registry.unregister(token: id, at: now)
        }
        return now
    }

    func injectFaults(_ fault: Fault, count: Int) {
        faults.inject(fault, count: count)
    }

    func clearFaults() {
        faults.clear()
    }

    var acceptedCount: Int { accepted.count }
    func acceptPauses(since moment: Date) -> AcceptLog.Pauses { accepted.pauses(since: moment) }
    var reach: DeviceRegistry.Reach { registry.reach }
}
