import Crypto
import Foundation
import HeraldCore
import Logging
import NIOCore
import Synchronization
import _CryptoExtras

/// The FCM emulator's request handling: Google's OAuth2 token endpoint for service accounts
/// (`POST /token`), FCM HTTP v1 `messages:send`, and `/_emulator/…` control routes.
final class FCMResponder: EmulatorResponder {
    struct ConnectionState {}

    static let grantType = "urn:ietf:params:oauth:grant-type:jwt-bearer"
    static let messagingScope = "https://www.googleapis.com/auth/firebase.messaging"
    static let accessTokenLifetime = 3600

    private struct AccessToken {
        var clientEmail: String
        var expiresAt: Date
    }

    private struct JWTHeader: Decodable {
        var alg: String
    }

    private struct JWTClaims: Decodable {
        var iss: String
        var scope: String
        var aud: String
        var iat: Int
        var exp: Int
    }

    private struct TokenResponse: Encodable {
        var access_token: String
        var expires_in: Int
        var token_type: String
    }

    private struct OAuthError: Encodable {
        var error: String
        var error_description: String
    }

    private struct GoogleError: Encodable {
        struct Body: Encodable {
            var code: Int
            var message: String
            var status: String
            var details: [Detail]?
        }
        struct Detail: Encodable {
            var type = "type.googleapis.com/google.firebase.fcm.v1.FcmError"
            var errorCode: String
            enum CodingKeys: String, CodingKey {
                case type = "@type"
                case errorCode
            }
        }
        var error: Body
    }

    private struct SendResponse: Encodable {
        var name: String
    }

    let configuration: FCMEmulator.Configuration
    let registry: DeviceRegistry
    let faults = FaultQueue()
    let accepted = AcceptLog()
    /// Its devices' receipts, once told where to post them.
    let receipts = DeviceReceipts()
    /// Messages accepted that came over HTTP/2.
    let acceptedOverHTTP2 = Atomic<Int>(0)
    private let messageCounter = Atomic<Int>(0)
    private let accounts: [String: FCMEmulator.ServiceAccount]
    private let accessTokens = Mutex<[String: AccessToken]>([:])
    private let logger: Logger
    /// Set once the port is known: the `aud` that assertions must carry.
    let tokenURI = Mutex<String>("")

    init(configuration: FCMEmulator.Configuration, logger: Logger) {
        self.configuration = configuration
        self.registry = DeviceRegistry(inboxLimit: configuration.inboxLimit)
        self.accounts = Dictionary(
            configuration.serviceAccounts.map { ($0.clientEmail, $0) },
            uniquingKeysWith: { _, last in last }
        )
        self.logger = logger
    }

    func makeConnectionState() -> ConnectionState { ConnectionState() }

    func respond(
        to request: EmulatorRequest, state: inout ConnectionState, allocator: ByteBufferAllocator
    )
        -> EmulatorResponse
    {
        let path = request.path
        if path == "/token" {
            guard request.method == "POST" else {
                return oauthError(405, "invalid_request", "use POST", allocator: allocator)
            }
            return issueAccessToken(request, allocator: allocator)
        }
        if path.hasPrefix("/v1/projects/"), path.hasSuffix("/messages:send") {
            let project = path.dropFirst("/v1/projects/".count).dropLast("/messages:send".count)
            guard request.method == "POST" else {
                return googleError(405, "Method not allowed.", status: "UNIMPLEMENTED", allocator: allocator)
            }
            return send(request, project: project, allocator: allocator)
        }
        if path.hasPrefix(EmulatorControlAPI.prefix) {
            return EmulatorControlAPI.respond(to: request, control: self, allocator: allocator)
        }
        return googleError(404, "The requested URL was not found on this server.", status: "NOT_FOUND", allocator: allocator)
    }

    // MARK: - OAuth2 token endpoint

    private func issueAccessToken(_ request: EmulatorRequest, allocator: ByteBufferAllocator) -> EmulatorResponse {
        let form = Self.parseForm(request.body.map { String(buffer: $0) } ?? "")
        guard let grantType = form["grant_type"] else {
            return oauthError(400, "invalid_request", "Missing required parameter: grant_type", allocator: allocator)
        }
        guard grantType == Self.grantType else {
            return oauthError(400, "unsupported_grant_type", "Invalid grant_type: \(grantType)", allocator: allocator)
        }
        guard let assertion = form["assertion"], !assertion.isEmpty else {
            return oauthError(400, "invalid_request", "Missing required parameter: assertion", allocator: allocator)
        }
        guard let jwt = CompactJWT(assertion[...]),
            let header = jwt.decodeHeader(JWTHeader.self),
            let claims = jwt.decodeClaims(JWTClaims.self)
        else {
            return oauthError(400, "invalid_grant", "Invalid JWT: malformed or missing claims.", allocator: allocator)
        }
        guard header.alg == "RS256" else {
            return oauthError(400, "invalid_grant", "Invalid JWT: unsupported algorithm.", allocator: allocator)
        }
        guard let account = accounts[claims.iss] else {
            return oauthError(400, "invalid_grant", "Invalid grant: account not found", allocator: allocator)
        }
        let signature = _RSA.Signing.RSASignature(rawRepresentation: jwt.signature)
        guard account.publicKey.isValidSignature(signature, for: jwt.signingInput, padding: .insecurePKCS1v1_5) else {
            return oauthError(400, "invalid_grant", "Invalid JWT Signature.", allocator: allocator)
        }
        guard claims.aud == tokenURI.withLock({ $0 }) else {
            return oauthError(400, "invalid_grant", "Invalid JWT: Failed audience check.", allocator: allocator)
        }
        let now = configuration.now()
        let nowSeconds = Int(now.timeIntervalSince1970)
        guard claims.exp > claims.iat, claims.exp - claims.iat <= Self.accessTokenLifetime,
            claims.exp > nowSeconds, claims.iat <= nowSeconds + 60
        else {
            return oauthError(
                400,
                "invalid_grant",
                "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. "
                    + "Check your iat and exp values in the JWT claim.",
                allocator: allocator
            )
        }
        guard claims.scope.split(separator: " ").contains(where: { $0 == Self.messagingScope }) else {
            return oauthError(400, "invalid_scope", "Invalid OAuth scope or ID token audience provided.", allocator: allocator)
        }

        let token = "ya29.herald-emulator." + RandomIdentifier.token(count: 86)
        let lifetime = Self.accessTokenLifetime
        accessTokens.withLock { tokens in
            if tokens.count >= 1024 {
                tokens = tokens.filter { $0.value.expiresAt > now }
            }
            tokens[token] = AccessToken(clientEmail: account.clientEmail, expiresAt: now.addingTimeInterval(Double(lifetime)))
        }
        return json(200, TokenResponse(access_token: token, expires_in: lifetime, token_type: "Bearer"), allocator: allocator)
    }

    /// `application/x-www-form-urlencoded` fields; the first value of each name wins.
    static func parseForm(_ body: String) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in body.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ text: Substring) -> String {
                text.percentDecoded(plusIsSpace: true) ?? text.replacingOccurrences(of: "+", with: " ")
            }
            let name = decode(parts[0])
            if fields[name] == nil {
                fields[name] = parts.count > 1 ? decode(parts[1]) : ""
            }
        }
        return fields
    }

    // MARK: - messages:send

    private func send(_ request: EmulatorRequest, project: Substring, allocator: ByteBufferAllocator) -> EmulatorResponse {
        let now = configuration.now()
        guard let authorization = request.headers.first("authorization"),
            authorization.count > 7, authorization.prefix(7).lowercased() == "bearer ",
            let token = accessTokens.withLock({ $0[String(authorization.dropFirst(7))] }),
            token.expiresAt > now
        else {
            return googleError(
                401,
                "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie "
                    + "or other valid authentication credential.",
                status: "UNAUTHENTICATED",
                allocator: allocator
            )
        }
        guard project == configuration.projectID else {
            return googleError(
                403,
                "SenderId mismatch",
                status: "PERMISSION_DENIED",
                errorCode: "SENDER_ID_MISMATCH",
                allocator: allocator
            )
        }

        guard let body = request.body,
            let parsed = try? JSONValue(parsing: body.readableBytesView),
            case .object = parsed
        else {
            return invalidArgument("Invalid JSON payload received.", allocator: allocator)
        }
        guard let message = parsed["message"], case .object = message else {
            return invalidArgument("Invalid JSON payload received. Missing field \"message\".", allocator: allocator)
        }
        var targets: [(kind: String, value: String)] = []
        for kind in ["token", "topic", "condition"] {
            if let value = message[kind] {
                guard case .string(let string) = value, !string.isEmpty else {
                    return invalidArgument("Invalid value at 'message.\(kind)' (TYPE_STRING)", allocator: allocator)
                }
                targets.append((kind, string))
            }
        }
        guard targets.count == 1 else {
            return invalidArgument(
                targets.isEmpty
                    ? "Recipient of the message is not set."
                    : "Only one of token, topic or condition may be set.",
                allocator: allocator
            )
        }
        if let data = message["data"] {
            guard case .object(let members) = data else {
                return invalidArgument("Invalid value at 'message.data' (type.googleapis.com/google.protobuf.Struct)", allocator: allocator)
            }
            for (index, member) in members.enumerated() {
                guard case .string = member.value else {
                    return invalidArgument("Invalid value at 'message.data[\(index)].value' (TYPE_STRING)", allocator: allocator)
                }
            }
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        guard let messageData = try? encoder.encode(message) else {
            return invalidArgument("Invalid JSON payload received.", allocator: allocator)
        }
        if messageData.count > 4096 {
            return invalidArgument("Message is too big", allocator: allocator)
        }

        let target = targets[0]
        let recipient: String
        switch target.kind {
        case "token":
            guard Self.isWellFormedToken(target.value) else {
                return invalidArgument("The registration token is not a valid FCM registration token", allocator: allocator)
            }
            switch registry.status(of: target.value) {
            case .unknown:
                if !configuration.openDeviceRegistry {
                    return invalidArgument(
                        "The registration token is not a valid FCM registration token",
                        allocator: allocator
                    )
                }
            case .unregistered:
                return googleError(
                    404,
                    "Requested entity was not found.",
                    status: "NOT_FOUND",
                    errorCode: "UNREGISTERED",
                    allocator: allocator
                )
            case .active:
                break
            }
            recipient = target.value
        case "topic":
            recipient = "/topics/" + target.value
        default:
            recipient = "condition:" + target.value
        }

        if case .bool(true)? = parsed["validate_only"] {
            // A dry run: checked like a real send, neither delivered nor counted.
            return json(200, SendResponse(name: "projects/\(project)/messages/fake_message_id"), allocator: allocator)
        }

        if let fault = faults.next() {
            return self.fault(fault, allocator: allocator)
        }

        let number = messageCounter.wrappingAdd(1, ordering: .relaxed).newValue
        let name = "projects/\(project)/messages/\(Int(now.timeIntervalSince1970 * 1000) * 1000 + number % 1000)"
        if configuration.recordsPayloads, target.kind != "condition" {
            registry.record(
                ReceivedNotification(
                    id: name,
                    token: recipient,
                    headers: [:],
                    payload: String(decoding: messageData, as: UTF8.self),
                    receivedAt: now
                )
            )
        }
        accepted.record()
        if target.kind == "token" { receipts.received(messageData, platform: .fcm, token: recipient) }
        if case .http2 = request.headers { acceptedOverHTTP2.add(1, ordering: .relaxed) }
        return json(200, SendResponse(name: name), allocator: allocator)
    }

    /// FCM registration tokens: `[A-Za-z0-9_:-]`, at most 4096 characters.
    static func isWellFormedToken(_ token: String) -> Bool {
        let utf8 = token.utf8
        guard !utf8.isEmpty, utf8.count <= 4096 else { return false }
        return utf8.allSatisfy { byte in
            (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ":")
        }
    }

    // MARK: - Responses

    private func fault(_ fault: Fault, allocator: ByteBufferAllocator) -> EmulatorResponse {
        let status: String
        let errorCode: String
        switch (fault.status, fault.reason) {
        case (429, Fault.throttled.reason):
            (status, errorCode) = ("RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED")
        case (503, Fault.unavailable.reason):
            (status, errorCode) = ("UNAVAILABLE", "UNAVAILABLE")
        case (500, Fault.internalError.reason):
            (status, errorCode) = ("INTERNAL", "INTERNAL")
        default:
            (status, errorCode) = (Self.googleStatus(for: fault.status), fault.reason)
        }
        var response = googleError(
            fault.status,
            "Injected fault.",
            status: status,
            errorCode: errorCode,
            allocator: allocator
        )
        if let retryAfter = fault.retryAfter {
            response.headers.append(("retry-after", String(retryAfter)))
        }
        return response
    }

    static func googleStatus(for code: Int) -> String {
        switch code {
        case 400: "INVALID_ARGUMENT"
        case 401: "UNAUTHENTICATED"
        case 403: "PERMISSION_DENIED"
        case 404: "NOT_FOUND"
        case 409: "ABORTED"
        case 429: "RESOURCE_EXHAUSTED"
        case 501: "UNIMPLEMENTED"
        case 503: "UNAVAILABLE"
        case 504: "DEADLINE_EXCEEDED"
        default: code >= 500 ? "INTERNAL" : "FAILED_PRECONDITION"
        }
    }

    private func invalidArgument(_ message: String, allocator: ByteBufferAllocator) -> EmulatorResponse {
        googleError(400, message, status: "INVALID_ARGUMENT", errorCode: "INVALID_ARGUMENT", allocator: allocator)
    }

    private func googleError(
        _ code: Int,
        _ message: String,
        status: String,
        errorCode: String? = nil,
        allocator: ByteBufferAllocator
    ) -> EmulatorResponse {
        logger.trace("fcm emulator refused a request", metadata: ["herald.fcm.status": "\(status)"])
        let body = GoogleError(
            error: .init(
                code: code,
                message: message,
                status: status,
                details: errorCode.map { [GoogleError.Detail(errorCode: $0)] }
            )
        )
        return json(code, body, allocator: allocator)
    }

    private func oauthError(
        _ code: Int, _ error: String, _ description: String, allocator: ByteBufferAllocator
    )
        -> EmulatorResponse
    {
        json(code, OAuthError(error: error, error_description: description), allocator: allocator)
    }

    private func json(_ status: Int, _ value: some Encodable, allocator: ByteBufferAllocator) -> EmulatorResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        let data = (try? encoder.encode(value)) ?? Data()
        return EmulatorResponse(
            status: status,
            headers: [("content-type", "application/json; charset=UTF-8")],
            body: allocator.buffer(bytes: data)
        )
    }
}

extension FCMResponder: EmulatorControl {
    func controlRegisterDevice(topic: String?) throws(ControlError) -> String {
        registerDevice()
    }

    /// A token shaped like FCM's: 22 characters, `:APA91b`, then 134 characters.
    func registerDevice() -> String {
        let token = RandomIdentifier.token(count: 22) + ":APA91b" + RandomIdentifier.token(count: 134)
        registry.register(token: token, topic: nil)
        return token
    }

    func notifications(for token: String) -> [ReceivedNotification] {
        registry.notifications(for: token)
    }

    func controlUnregister(token: String) -> Date {
        let now = configuration.now()
        registry.unregister(token: token, at: now)
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
    var acceptedOverHTTP2Count: Int { acceptedOverHTTP2.load(ordering: .relaxed) }
    var reach: DeviceRegistry.Reach { registry.reach }
}
