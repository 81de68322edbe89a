public import Foundation
public import HeraldCore

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// A client of Herald's app backend, for apps and for backends in Swift.
///
/// ```swift
/// let client = HeraldClient(baseURL: URL(string: "https://push.example.com")!)
/// try await client.signIn(username: "alice", password: "correct horse battery")
/// try await client.register(deviceToken: tokenData, tags: ["sports"])
/// try await client.notify(user: "bob", message: "Dinner at 8?")
/// ```
public final class HeraldClient: Sendable {
    public let baseURL: URL
    let session: URLSession
    let credentials: any CredentialStore
    /// How sends are attempted again (with the same `Idempotency-Key`) when no answer came.
    public let sendRetry: SendRetry

    public init(
        baseURL: URL, credentials: any CredentialStore = InMemoryCredentialStore(), session: URLSession = .shared,
        sendRetry: SendRetry = .standard
    ) {
        self.baseURL = baseURL
        self.credentials = credentials
        self.session = session
        self.sendRetry = sendRetry
    }

    // MARK: Accounts

    /// Creates an account on the server.
    public func signUp(username: String, password: String) async throws {
        _ = try await send("POST", "api/accounts", json: .object([("username", .string(username)), ("password", .string(password))]), authenticated: false)
    }

    /// Signs in and keeps the bearer token in the credential store.
    public func signIn(username: String, password: String) async throws {
        struct TokenResponse: Decodable {
            var token: String
            var username: String
            var expiresAt: Date
        }
        let data = try await send("POST", "api/token", json: .object([("username", .string(username)), ("password", .string(password))]), authenticated: false)
        let response = try Self.decoder.decode(TokenResponse.self, from: data)
        var stored = try credentials.load()
        if stored.username != response.username { stored.registrationID = nil }
        stored.username = response.username
        stored.token = response.token
        stored.tokenExpiresAt = response.expiresAt
        try credentials.save(stored)
    }

    /// Forgets the token locally and revokes it on the server.
    public func signOut() async throws {
        var stored = try credentials.load()
        if stored.token != nil { _ = try? await send("DELETE", "api/token", json: nil) }
        stored.token = nil
        stored.tokenExpiresAt = nil
        try credentials.save(stored)
    }

    public var username: String? { (try? credentials.load())?.username }

    // MARK: Registration

    /// Registers an APNs device token (the `Data` from
    /// `application(_:didRegisterForRemoteNotificationsWithDeviceToken:)`), hex-encoded.
    @discardableResult
    public func register(deviceToken: Data, tags: [String] = []) async throws -> String {
        try await register(handle: Self.hex(deviceToken), platform: .apns, tags: tags)
    }

    /// Registers this device's handle with the app backend and returns the registration id.
    ///
    /// Reuses the stored registration id, or asks the server for one (which de-duplicates
    /// registrations of the same handle), upserts the registration, and on `410 Gone` asks
    /// for a new id and tries once more — the notify-users tutorial's flow.
    @discardableResult
    public func register(handle: String, platform: Platform, tags: [String] = [], webPushKeys: WebPushKeys? = nil) async throws -> String {
        var stored = try credentials.load()
        var id: String
        if let existing = stored.registrationID {
            id = existing
        } else {
            id = try await newRegistrationID(handle: handle)
        }
        do {
            try await upsert(id: id, handle: handle, platform: platform, tags: tags, keys: webPushKeys)
        } catch let error as HeraldClientError where error.status == 410 {
            id = try await newRegistrationID(handle: handle)
            try await upsert(id: id, handle: handle, platform: platform, tags: tags, keys: webPushKeys)
        }
        stored = try credentials.load()
        stored.registrationID = id
        try credentials.save(stored)
        return id
    }

    /// Deletes this device's registration on the server.
    public func unregister() async throws {
        var stored = try credentials.load()
        guard let id = stored.registrationID else { return }
        do {
            _ = try await send("DELETE", "api/register/\(id)", json: nil)
        } catch let error as HeraldClientError where error.status == 404 || error.status == 410 {
            // Already gone.
        }
        stored.registrationID = nil
        try credentials.save(stored)
    }

    private func newRegistrationID(handle: String) async throws -> String {
        let data = try await send("POST", "api/register", query: [URLQueryItem(name: "handle", value: handle)], json: nil)
        return try JSONDecoder().decode(String.self, from: data)
    }

    private func upsert(id: String, handle: String, platform: Platform, tags: [String], keys: WebPushKeys?) async throws {
        var body: [String: JSONValue] = [
            "Platform": .string(platform.rawValue),
            "Handle": .string(handle),
            "Tags": .array(tags.map { .string($0) }),
        ]
        if let keys { body["Keys"] = .object([("p256dh", .string(keys.p256dh)), ("auth", .string(keys.auth))]) }
        _ = try await send("PUT", "api/register/\(id)", json: .object(body.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }))
    }

    // MARK: Receipts

    /// Confirms that this device received the notification `notificationID`: the value its
    /// payload carries under `herald.id` (`Receipt.payloadKey`). Call it from the app, or from
    /// a Notification Service Extension that shares the credential store. A repeat is
    /// harmless: the server counts a device once per notification. Attempted again as
    /// ``sendRetry`` says.
    ///
    /// - Throws: ``HeraldClientError`` 404 when the notification or this device's registration
    ///   is unknown; `badRequest` when this device has not registered yet.
    public func acknowledge(_ notificationID: String) async throws {
        guard let registration = try credentials.load().registrationID else {
            throw HeraldClientError(status: 400, code: "badRequest", message: "this device has no registration yet: register it first")
        }
        let body: JSONValue = .object([("notificationId", .string(notificationID)), ("registrationId", .string(registration))])
        var request = makeRequest("POST", "api/receipts")
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = try JSONEncoder().encode(body)
        _ = try await perform(request, retry: sendRetry)
    }

    // MARK: Notifications

    /// Notifies every device of `user` (on one platform, or all) with "From <me>: <message>".
    ///
    /// Sent under `idempotencyKey` (a new UUID when `nil`), which the client's own retries
    /// (``sendRetry``) reuse: the server sends it once, and answers a repeat within the key's
    /// retention with the first notification.
    @discardableResult
    public func notify(user: String, message: String, platform: Platform? = nil, idempotencyKey: String? = nil) async throws -> NotificationSummary {
        var query = [URLQueryItem(name: "to_tag", value: user)]
        if let platform { query.append(URLQueryItem(name: "pns", value: platform.rawValue)) }
        let data = try await send("POST", "api/notifications", query: query, json: .string(message), idempotencyKey: idempotencyKey)
        return try Self.decoder.decode(NotificationSummary.self, from: data)
    }

    // MARK: HTTP

    static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }()

    static func hex(_ data: Data) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(data.count * 2)
        for byte in data {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    func send(
        _ method: String,
        _ path: String,
        query: [URLQueryItem] = [],
        json: JSONValue?,
        authenticated: Bool = true
    ) async throws -> Data {
        var request = makeRequest(method, path, query: query)
        if let json {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = try JSONEncoder().encode(json)
        }
        return try await perform(request, authenticated: authenticated).data
    }

    /// A send: `POST`s `json` under an `Idempotency-Key` (`idempotencyKey`, or a new UUID),
    /// attempted as ``sendRetry`` says with the same key.
    func send(_ method: String, _ path: String, query: [URLQueryItem], json: JSONValue, idempotencyKey: String?) async throws -> Data {
        var request = makeRequest(method, path, query: query)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = try JSONEncoder().encode(json)
        return try await perform(try SendRetry.keyed(request, key: idempotencyKey), retry: sendRetry).data
    }

    /// A request to `path` under ``baseURL``.
    func makeRequest(_ method: String, _ path: String, query: [URLQueryItem] = []) -> URLRequest {
        var components = URLComponents(url: baseURL.appendingPathComponent(path), resolvingAgainstBaseURL: false)!
        if !query.isEmpty { components.queryItems = query }
        var request = URLRequest(url: components.url!)
        request.httpMethod = method
        return request
    }

    /// Sends `request` (with the bearer token if `authenticated`), attempted again as `retry`
    /// says when no answer came or a gateway answered 502 or 504; throws ``HeraldClientError``
    /// for an answer that is not 2xx.
    func perform(
        _ request: URLRequest, authenticated: Bool = true, retry: SendRetry = .never
    ) async throws -> (data: Data, response: HTTPURLResponse) {
        var request = request
        if authenticated {
            guard let token = try credentials.load().token else {
                throw HeraldClientError(status: 401, code: .unauthorized, message: "not signed in")
            }
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        }
        let (data, http) = try await retry.perform(request, retryStatuses: [502, 504]) { request in
            let (data, response) = try await session.data(for: request)
            guard let http = response as? HTTPURLResponse else {
                throw HeraldClientError(status: 0, code: .transport, message: "no HTTP response")
            }
            return (data, http)
        }
        guard (200..<300).contains(http.statusCode) else {
            throw HeraldClientError(status: http.statusCode, body: data)
        }
        return (data, http)
    }
}

/// An error answer from Herald: the HTTP status and Herald's code and message.
///
/// Equality compares the code only (`CodedError`, in HeraldCore).
public struct HeraldClientError: CodedError {
    /// Herald's error code (`notFound`, `unauthorized`, …), `transport` when no HTTP answer
    /// came, or `http<status>` when the answer was not Herald's error document. An open
    /// value: a code this SDK does not know yet is kept as it came.
    public struct Code: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
        public let rawValue: String

        public init(_ rawValue: String) { self.rawValue = rawValue }
        public init(stringLiteral value: String) { self.rawValue = value }

        /// The request got no HTTP answer.
        public static let transport = Code("transport")
        /// The client is not signed in, or the server refused its token.
        public static let unauthorized = Code("unauthorized")

        /// The code as Herald sent it, safe as a metric label.
        public var description: String { rawValue }
    }

    public var status: Int
    public var code: Code
    public var message: String

    public init(status: Int, code: Code, message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    init(status: Int, body: Data) {
        struct Body: Decodable {
            struct Detail: Decodable {
                var code: String
                var message: String
            }
            var error: Detail
        }
        if let parsed = try? JSONDecoder().decode(Body.self, from: body) {
            self.init(status: status, code: Code(parsed.error.code), message: parsed.error.message)
        } else {
            self.init(status: status, code: Code("http\(status)"), message: String(decoding: body.prefix(200), as: UTF8.self))
        }
    }

    public var description: String { "HTTP \(status) \(code): \(message)" }
}
