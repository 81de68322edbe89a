import Foundation
import HeraldCore
import Logging
import NIOCore
import Synchronization

/// The WNS emulator's request handling: the OAuth2 token endpoint (`POST /accesstoken.srf`,
/// client credentials), `POST` to a channel URI checked the way WNS checks it, and
/// `/_emulator/…` control routes.
final class WNSResponder: EmulatorResponder {
    struct ConnectionState {}

    static let grantType = "client_credentials"
    /// Scopes WNS issues tokens for (`s.notify.live.net` is the Windows Phone one).
    static let scopes: Set<String> = ["notify.windows.com", "s.notify.live.net"]
    static let tokenPath = "/accesstoken.srf"
    static let channelPath = "/w/"
    static let types: Set<String> = ["wns/toast", "wns/tile", "wns/badge", "wns/raw"]
    /// The longest `X-WNS-Tag` and `X-WNS-Group` accepted.
    static let maxTagLength = 64

    private struct AccessToken {
        var clientID: String
        var expiresAt: Date
    }

    /// A channel as WNS knows it: the app it was created for and whether its device is online.
    private struct Channel {
        var uri: String
        var clientID: String
        var connected = true
    }

    private struct TokenResponse: Encodable {
        var token_type = "bearer"
        var access_token: String
        var expires_in: Int
    }

    private struct OAuthError: Encodable {
        var error: String
        var error_description: String
    }

    let configuration: WNSEmulator.Configuration
    let registry: DeviceRegistry
    let faults = FaultQueue()
    let accepted = AcceptLog()
    /// Its devices' receipts, once told where to post them.
    let receipts = DeviceReceipts()
    let tokenRequests = Atomic<Int>(0)
    private let apps: [String: WNSEmulator.App]
    private let accessTokens = Mutex<[String: AccessToken]>([:])
    /// By the channel's `token` query value, percent-decoded.
    private let channels = Mutex<[String: Channel]>([:])
    private let logger: Logger
    /// Set once the port is known: what channel URIs start with.
    let baseURL = Mutex<String>("")

    init(configuration: WNSEmulator.Configuration, logger: Logger) {
        self.configuration = configuration
        self.registry = DeviceRegistry(inboxLimit: configuration.inboxLimit)
        self.apps = Dictionary(configuration.apps.map { ($0.clientID, $0) }, uniquingKeysWith: { _, last in last })
        self.logger = logger
    }

    func makeConnectionState() -> ConnectionState { ConnectionState() }

    func respond(
        to request: EmulatorRequest, state: inout ConnectionState, allocator: ByteBufferAllocator
    )
        -> EmulatorResponse
    {
        let path = request.path
        if path == Self.tokenPath {
            guard request.method == "POST" else {
                return oauthError(405, "invalid_request", "use POST", allocator: allocator)
            }
            return issueAccessToken(request, allocator: allocator)
        }
        if path == Self.channelPath || path == Self.channelPath.dropLast() {
            return notify(request, allocator: allocator)
        }
        if path.hasPrefix(EmulatorControlAPI.prefix) {
            if path == EmulatorControlAPI.prefix + "channels" || path.hasPrefix(EmulatorControlAPI.prefix + "channels/") {
                return channelControl(request, allocator: allocator)
            }
            return EmulatorControlAPI.respond(to: request, control: self, allocator: allocator)
        }
        return wnsError(404, "The requested resource was not found.", allocator: allocator)
    }

    // MARK: - Token endpoint

    private func issueAccessToken(_ request: EmulatorRequest, allocator: ByteBufferAllocator) -> EmulatorResponse {
        tokenRequests.add(1, ordering: .relaxed)
        let form = FCMResponder.parseForm(request.body.map { String(buffer: $0) } ?? "")
        guard let grantType = form["grant_type"] else {
            return oauthError(400, "invalid_request", "Missing grant_type", allocator: allocator)
        }
        guard grantType == Self.grantType else {
            return oauthError(400, "unsupported_grant_type", "Unsupported grant_type", allocator: allocator)
        }
        guard let clientID = form["client_id"], let secret = form["client_secret"], let app = apps[clientID],
            Self.constantTimeEqual(secret, app.clientSecret)
        else {
            return oauthError(400, "invalid_client", "Invalid client id or client secret", allocator: allocator)
        }
        guard let scope = form["scope"], Self.scopes.contains(scope) else {
            return oauthError(400, "invalid_scope", "Invalid scope", allocator: allocator)
        }

        let now = configuration.now()
        // Base64 like Microsoft's, '+', '/' and '=' included: clients must send it untouched.
        var generator = SystemRandomNumberGenerator()
        let token = Data((0..<96).map { _ in generator.next() as UInt8 }).base64EncodedString()
        let lifetime = configuration.accessTokenLifetime
        accessTokens.withLock { tokens in
            if tokens.count >= 1024 {
                tokens = tokens.filter { $0.value.expiresAt > now }
            }
            tokens[token] = AccessToken(clientID: app.clientID, expiresAt: now.addingTimeInterval(Double(lifetime)))
        }
        var response = json(200, TokenResponse(access_token: token, expires_in: lifetime), allocator: allocator)
        response.headers.append(("cache-control", "no-store"))
        return response
    }

    /// Compares secrets without stopping at the first difference.
    static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8)
        let y = Array(b.utf8)
        var difference = UInt8(truncatingIfNeeded: x.count ^ y.count)
        for index in 0..<max(x.count, y.count) {
            difference |= (index < x.count ? x[index] : 0) ^ (index < y.count ? y[index] : 0)
        }
        return difference == 0
    }

    // MARK: - Notifications

    private func notify(_ request: EmulatorRequest, allocator: ByteBufferAllocator) -> EmulatorResponse {
        guard request.method == "POST" else {
            var response = wnsError(405, "Only POST is supported.", allocator: allocator)
            response.headers.append(("allow", "POST"))
            return response
        }
        let now = configuration.now()

        // The sender: a bearer token from the token endpoint that has not expired.
        guard let authorization = request.headers.first("authorization"), authorization.count > 7,
            authorization.prefix(7).lowercased() == "bearer "
        else {
            return unauthorized("Missing token", allocator: allocator)
        }
        let presented = String(authorization.dropFirst(7)).trimmingSpaces()
        guard let token = accessTokens.withLock({ $0[presented] }) else {
            return unauthorized("Invalid token", allocator: allocator)
        }
        guard token.expiresAt > now else {
            return unauthorized("Token expired", allocator: allocator)
        }

        // The channel.
        guard let key = Self.channelKey(target: request.target),
            let channel = channels.withLock({ $0[key] })
        else {
            return wnsError(404, "The channel URI is not valid or is not recognized.", allocator: allocator)
        }
        if case .unregistered = registry.status(of: channel.uri) {
            return wnsError(410, "The channel has expired.", allocator: allocator)
        }
        guard channel.clientID == token.clientID else {
            return wnsError(403, "The access token does not match the app that requested the channel URI.", allocator: allocator)
        }

        // Headers.
        let headers = request.headers
        guard headers.count("x-wns-type") == 1, let type = headers.first("x-wns-type")?.lowercased() else {
            return badRequest(
                headers.count("x-wns-type") == 0 ? "X-WNS-Type is missing." : "X-WNS-Type is repeated.",
                allocator: allocator)
        }
        guard Self.types.contains(type) else {
            return badRequest("X-WNS-Type must be wns/toast, wns/tile, wns/badge or wns/raw.", allocator: allocator)
        }
        let expectedContentType = type == "wns/raw" ? "application/octet-stream" : "text/xml"
        guard let contentType = headers.first("content-type"),
            contentType.split(separator: ";").first?.trimmingSpaces().lowercased()
                == expectedContentType
        else {
            return badRequest("Content-Type must be \(expectedContentType) for \(type).", allocator: allocator)
        }
        if let ttl = headers.first("x-wns-ttl") {
            guard !ttl.isEmpty, ttl.utf8.count <= 10, ttl.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
                return badRequest("X-WNS-TTL must be a number of seconds.", allocator: allocator)
            }
        }
        for name in ["x-wns-tag", "x-wns-group"] {
            if let value = headers.first(name), value.isEmpty || value.count > Self.maxTagLength {
                return badRequest("\(name) must have 1 to \(Self.maxTagLength) characters.", allocator: allocator)
            }
        }
        if let policy = headers.first("x-wns-cache-policy"), !["cache", "no-cache"].contains(policy.lowercased()) {
            return badRequest("X-WNS-Cache-Policy must be cache or no-cache.", allocator: allocator)
        }
        if let status = headers.first("x-wns-requestforstatus"), !["true", "false"].contains(status.lowercased()) {
            return badRequest("X-WNS-RequestForStatus must be true or false.", allocator: allocator)
        }

        // Body.
        guard let body = request.body, body.readableBytes > 0 else {
            return badRequest("The notification payload is empty.", allocator: allocator)
        }
        guard body.readableBytes <= 5000 else {
            return wnsError(413, "The notification payload exceeds the 5000 byte limit.", allocator: allocator)
        }
        if type != "wns/raw" {
            let root = String(type.dropFirst("wns/".count))
            guard let element = WNSXMLSyntax.rootElement(of: body) else {
                return badRequest("The notification payload is not well-formed XML.", allocator: allocator)
            }
            guard element == root else {
                return badRequest("The root element of a \(type) payload must be <\(root)>.", allocator: allocator)
            }
        }

        if let fault = faults.next() {
            return self.fault(fault, allocator: allocator)
        }

        // Offline devices: tiles and badges are cached unless told not to be; toasts are
        // dropped; raw notifications are dropped unless told to be cached.
        let messageID = RandomIdentifier.hex(byteCount: 8).uppercased()
        let policy = headers.first("x-wns-cache-policy")?.lowercased()
        if !channel.connected {
            let cached: Bool
            switch type {
            case "wns/toast": cached = false
            case "wns/raw": cached = policy == "cache"
            default: cached = policy != "no-cache"
            }
            if !cached {
                return EmulatorResponse(
                    status: 200,
                    headers: [
                        ("x-wns-status", "dropped"), ("x-wns-msg-id", messageID),
                        ("x-wns-deviceconnectionstatus", "disconnected"),
                    ])
            }
        }

        if configuration.recordsPayloads {
            var recorded: [String: String] = [:]
            headers.forEach(withPrefix: "x-wns-") { name, value in recorded[name] = value }
            recorded["x-wns-type"] = type
            recorded["content-type"] = contentType
            let payload =
                type == "wns/raw"
                ? Data(body.readableBytesView).base64EncodedString()
                : String(buffer: body)
            registry.record(
                ReceivedNotification(id: messageID, token: channel.uri, headers: recorded, payload: payload, receivedAt: now))
        }
        accepted.record()
        return EmulatorResponse(
            status: 200,
            headers: [
                ("x-wns-status", "received"), ("x-wns-msg-id", messageID),
                ("x-wns-deviceconnectionstatus", channel.connected ? "connected" : "disconnected"),
            ])
    }

    /// The percent-decoded `token` query value of a channel request target (`/w/?token=…`).
    static func channelKey(target: some StringProtocol) -> String? {
        guard let question = target.firstIndex(of: "?") else { return nil }
        for pair in target[target.index(after: question)...].split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if parts.count == 2, parts[0] == "token", !parts[1].isEmpty {
                return parts[1].percentDecoded() ?? String(parts[1])
            }
        }
        return nil
    }

    // MARK: - Responses

    /// 406 with `X-WNS-Status: channelthrottled` for ``Fault/throttled`` and any 406; other
    /// faults are answered with their status and the reason as `X-WNS-Error-Description`.
    private func fault(_ fault: Fault, allocator: ByteBufferAllocator) -> EmulatorResponse {
        var response: EmulatorResponse
        if fault.status == 406 || (fault.status == 429 && fault.reason == Fault.throttled.reason) {
            response = wnsError(406, "The cloud service exceeded its throttle limit.", allocator: allocator)
            response.headers.append(("x-wns-status", "channelthrottled"))
        } else {
            response = wnsError(fault.status, fault.reason, allocator: allocator)
        }
        if let retryAfter = fault.retryAfter {
            response.headers.append(("retry-after", String(retryAfter)))
        }
        return response
    }

    private func unauthorized(_ description: String, allocator: ByteBufferAllocator) -> EmulatorResponse {
        var response = wnsError(401, description, allocator: allocator)
        response.headers.append(("www-authenticate", "Bearer error=\"invalid_token\",error_description=\"\(description)\""))
        return response
    }

    private func badRequest(_ description: String, allocator: ByteBufferAllocator) -> EmulatorResponse {
        wnsError(400, description, allocator: allocator)
    }

    /// WNS answers errors with headers and no body.
    private func wnsError(_ status: Int, _ description: String, allocator: ByteBufferAllocator) -> EmulatorResponse {
        logger.trace("wns emulator refused a request", metadata: ["herald.wns.status": "\(status)"])
        return EmulatorResponse(
            status: status,
            headers: [
                ("x-wns-error-description", description),
                ("x-wns-msg-id", RandomIdentifier.hex(byteCount: 8).uppercased()),
            ])
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
            headers: [("content-type", "application/json")],
            body: allocator.buffer(bytes: data)
        )
    }

    // MARK: - Channel control

    private struct ChannelRequest: Decodable {
        var clientID: String?
    }
    private struct ChannelResponse: Encodable {
        var channel: String
    }
    private struct ConnectionRequest: Decodable {
        var channel: String
        var connected: Bool
    }
    private struct ControlErrorBody: Encodable {
        var error: String
    }

    /// `POST /_emulator/channels` `{"clientID"?}` → `{"channel"}`;
    /// `POST /_emulator/channels/connection` `{"channel", "connected"}` → `{"channel"}`.
    private func channelControl(_ request: EmulatorRequest, allocator: ByteBufferAllocator) -> EmulatorResponse {
        let rest = request.path.dropFirst((EmulatorControlAPI.prefix + "channels").count)
        let body = request.body.map { Data($0.readableBytesView) } ?? Data()
        switch (request.method, rest) {
        case ("POST", ""), ("POST", "/"):
            var clientID: String?
            if !body.isEmpty {
                guard let decoded = try? JSONDecoder().decode(ChannelRequest.self, from: body) else {
                    return json(400, ControlErrorBody(error: "body must be {\"clientID\": \"…\"}"), allocator: allocator)
                }
                clientID = decoded.clientID
            }
            do {
                return json(200, ChannelResponse(channel: try registerChannel(clientID: clientID)), allocator: allocator)
            } catch {
                return json(error.status, ControlErrorBody(error: error.message), allocator: allocator)
            }
        case ("POST", "/connection"):
            guard let decoded = try? JSONDecoder().decode(ConnectionRequest.self, from: body) else {
                return json(
                    400, ControlErrorBody(error: "body must be {\"channel\": \"…\", \"connected\": false}"),
                    allocator: allocator)
            }
            guard setConnected(decoded.connected, channel: decoded.channel) else {
                return json(404, ControlErrorBody(error: "no such channel"), allocator: allocator)
            }
            return json(200, ChannelResponse(channel: decoded.channel), allocator: allocator)
        default:
            return json(404, ControlErrorBody(error: "no such emulator control route"), allocator: allocator)
        }
    }

    /// A new channel URI for an app (the first configured one by default).
    func registerChannel(clientID: String?) throws(ControlError) -> String {
        guard let clientID = clientID ?? configuration.apps.first?.clientID else {
            throw ControlError(status: 400, message: "the emulator has no app configured")
        }
        guard apps[clientID] != nil else {
            throw ControlError(status: 400, message: "no app with client id \(clientID)")
        }
        // Microsoft's channel tokens are percent-encoded base64; so are these.
        var generator = SystemRandomNumberGenerator()
        let token = Data((0..<72).map { _ in generator.next() as UInt8 }).base64EncodedString()
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let encoded = token.addingPercentEncoding(withAllowedCharacters: allowed) ?? token
        let uri = baseURL.withLock { $0 } + Self.channelPath + "?token=" + encoded
        channels.withLock { $0[token] = Channel(uri: uri, clientID: clientID) }
        registry.register(token: uri, topic: clientID)
        return uri
    }

    /// The channel's URI, from its URI (however encoded) or its token.
    private func channelURI(_ reference: String) -> String? {
        let key = Self.channelKey(target: reference) ?? reference.percentDecoded() ?? reference
        return channels.withLock { $0[key]?.uri }
    }

    func setConnected(_ connected: Bool, channel reference: String) -> Bool {
        let key = Self.channelKey(target: reference) ?? reference.percentDecoded() ?? reference
        return channels.withLock { channels in
            guard channels[key] != nil else { return false }
            channels[key]?.connected = connected
            return true
        }
    }

    var tokenRequestCount: Int { tokenRequests.load(ordering: .relaxed) }
}

extension WNSResponder: EmulatorControl {
    /// `POST /_emulator/devices` `{"topic": clientID?}` registers a channel: `{"token": channelURI}`.
    func controlRegisterDevice(topic: String?) throws(ControlError) -> String {
        try registerChannel(clientID: topic)
    }

    func notifications(for channel: String) -> [ReceivedNotification] {
        guard let uri = channelURI(channel) else { return [] }
        return registry.notifications(for: uri)
    }

    func controlUnregister(token channel: String) -> Date {
        let now = configuration.now()
        if let uri = channelURI(channel) {
            registry.unregister(token: uri, at: now)
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
