public import Foundation
import HeraldCore

#if canImport(FoundationNetworking)
public import FoundationNetworking
import HeraldHubWire
#endif

/// A client of a hub's REST API — Herald's, or the established cloud hub's, which it is
/// wire-compatible with — for app backends in Swift: registrations, installations, sends
/// and their telemetry.
///
/// It takes the hub's connection string (`herald hub keys NAME` prints them) and signs every
/// request with a shared access signature made from it:
///
/// ```swift
/// let hub = try NotificationHubClient(
///     connectionString: "Endpoint=sb://push.example.com/;SharedAccessKeyName=DefaultFullSharedAccessSignature;SharedAccessKey=…",
///     hubName: "myhub"
/// )
///
/// // A device's registration, kept by the backend.
/// let id = try await hub.createRegistrationID()
/// var registration = Registration(id: id, platform: .apns, handle: deviceToken, tags: ["username:alice"])
/// registration = try await hub.createOrUpdateRegistration(registration)
///
/// // An installation, patched later.
/// try await hub.createOrUpdateInstallation(Installation(id: "ipad-1", platform: .apns, pushChannel: deviceToken, userId: "alice"))
/// try await hub.patchInstallation(id: "ipad-1", [.add("/tags", value: .array([.string("sports")]))])
///
/// // A send to a tag expression, and what became of it.
/// let alert = HubNotification.apple(json: .object([("aps", .object([("alert", .string("Goal!"))]))]))
/// let notificationID = try await hub.send(alert, tagExpression: "sports && !muted")
/// let details = try await hub.notificationDetails(id: notificationID)
/// print(details.state, details.counts.total(.success))
/// ```
///
/// Every request carries `Authorization: SharedAccessSignature sr=…&sig=…&se=…&skn=…`
/// (signed over the hub's URL, valid for `tokenLifetime`), `x-ms-version: 2020-06` and
/// `?api-version=2020-06`. An answer that is not a success throws a `HeraldError` whose
/// code follows the HTTP status (401 `HeraldError.Code.unauthorized`, 403 `forbidden`, 404
/// `notFound`, 410 `gone`, 412 `preconditionFailed`, 429 `tooManyRequests`, …) and whose
/// message is the `Detail` of the hub's error document. A request that gets no answer throws
/// the `URLSession` error as it is.
///
/// ## Trusting a private certificate authority
///
/// A connection string's `sb://` endpoint is reached over `https`. A hub whose certificate
/// is issued by a private CA (such as the one `herald serve` generates in its data
/// directory) must be trusted by the `URLSession`:
///
/// - **Linux**: `URLSession` (FoundationNetworking) verifies with the system's libcurl
///   against the system trust store only. Install the CA there (Debian and Ubuntu: copy
///   `ca.pem` to `/usr/local/share/ca-certificates/herald.crt` and run
///   `update-ca-certificates`). The `URLSessionCertificateAuthorityInfoFile` environment
///   variable is read by FoundationNetworking on Android only (`_EasyHandle.setCARootBundlePath`
///   checks it under `#if os(Android)`); on Linux it, `SSL_CERT_FILE` and `CURL_CA_BUNDLE` change
///   nothing, and FoundationNetworking raises no server-trust challenge a delegate could answer.
///   This client therefore offers no "trust this PEM file" switch: none would work there.
/// - **Apple platforms**: install the CA in the system trust store (a configuration profile
///   on iOS, the keychain on macOS), or pass a `URLSession` whose delegate answers
///   `NSURLAuthenticationMethodServerTrust` challenges by evaluating the `SecTrust` with
///   `SecTrustSetAnchorCertificates` set to the CA.
/// - A hub on a trusted network can also be reached over plain HTTP: an `Endpoint=http://…`
///   connection string is used as it is.
public final class NotificationHubClient: Sendable {
    /// The hub's name, the first path segment of every request.
    public let hubName: String
    /// The hub's URL, such as `https://push.example.com/myhub`: what the signatures cover.
    public let hubURL: URL
    /// How long each request's signature is valid.
    public let tokenLifetime: Duration

    let keyName: String
    let key: String
    let transport: any NotificationHubTransport
    /// How sends are attempted again (with the same `Idempotency-Key`) when no answer came or
    /// the hub answered 502, 503 or 504.
    public let sendRetry: SendRetry

    /// The hub API version this client speaks.
    public static let apiVersion = "2020-06"

    /// - Parameters:
    ///   - connectionString: `Endpoint=sb://host[:port]/;SharedAccessKeyName=…;SharedAccessKey=…`.
    ///   - hubName: the hub's name (letters, digits, `.`, `-`, `_`).
    ///   - session: the `URLSession` requests go through.
    ///   - tokenLifetime: how long each request's shared access signature is valid.
    ///   - sendRetry: how sends are attempted again, with the same `Idempotency-Key`, when no
    ///     answer came (``SendRetry/standard`` by default).
    /// - Throws: `HeraldError` `badRequest` for a malformed connection string or hub name.
    public convenience init(
        connectionString: String,
        hubName: String,
        session: URLSession = .shared,
        tokenLifetime: Duration = .seconds(3600),
        sendRetry: SendRetry = .standard
    ) throws {
        try self.init(
            connectionString: connectionString,
            hubName: hubName,
            transport: URLSessionTransport(session: session),
            tokenLifetime: tokenLifetime,
            sendRetry: sendRetry
        )
    }

    /// A client whose requests go through `transport` instead of a `URLSession`.
    package init(
        connectionString: String,
        hubName: String,
        transport: any NotificationHubTransport,
        tokenLifetime: Duration = .seconds(3600),
        sendRetry: SendRetry = .standard
    ) throws {
        let connection = try ConnectionString(parsing: connectionString)
        guard !hubName.isEmpty, hubName.utf8.count <= 260, hubName.utf8.allSatisfy(Self.isHubNameByte) else {
            throw HeraldError.badRequest("the hub name '\(hubName)' is not valid: use letters, digits, '.', '-' and '_'")
        }
        guard tokenLifetime > .zero else {
            throw HeraldError.badRequest("tokenLifetime must be positive")
        }
        guard let url = URL(string: connection.httpsBaseURL + hubName), url.host != nil else {
            throw HeraldError.badRequest("the connection string's Endpoint does not make a URL with the hub name")
        }
        self.hubName = hubName
        self.hubURL = url
        self.keyName = connection.keyName
        self.key = connection.key
        self.tokenLifetime = tokenLifetime
        self.transport = transport
        self.sendRetry = sendRetry
    }

    private static func isHubNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: "_"):
            true
        default: false
        }
    }

    // MARK: Requests

    /// A request to `path` (segments, each percent-encoded here) under the hub's URL, signed
    /// and versioned.
    package func makeRequest(
        _ method: String,
        path: [String],
        query: [(name: String, value: String)] = [],
        headers: [String: String] = [:],
        body: Data? = nil,
        contentType: String? = nil,
        now: Date = Date()
    ) -> URLRequest {
        var text = hubURL.absoluteString
        if text.hasSuffix("/") { text.removeLast() }
        for segment in path { text += "/" + Self.pathEncoded(segment) }
        let items = query + [(name: "api-version", value: Self.apiVersion)]
        text += "?" + items.map { "\(Self.queryEncoded($0.name))=\(Self.queryEncoded($0.value))" }.joined(separator: "&")
        // Every piece is percent-encoded above, so the text is always a valid URL.
        var request = URLRequest(url: URL(string: text) ?? hubURL)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.setValue(authorization(now: now), forHTTPHeaderField: "Authorization")
        request.setValue(Self.apiVersion, forHTTPHeaderField: "x-ms-version")
        if let body {
            request.httpBody = body
            if let contentType { request.setValue(contentType, forHTTPHeaderField: "Content-Type") }
        }
        return request
    }

    /// The `Authorization` value: a shared access signature over the hub's URL.
    func authorization(now: Date) -> String {
        let seconds = tokenLifetime.seconds
        return SharedAccessSignature.make(
            resource: hubURL.absoluteString,
            keyName: keyName,
            key: key,
            expiry: now.addingTimeInterval(seconds)
        )
    }

    /// Sends `request`; an answer outside `accepted` throws the hub's error as a `HeraldError`.
    @discardableResult
    func perform(_ request: URLRequest, accepted: Set<Int> = [200, 201]) async throws -> (data: Data, response: HTTPURLResponse) {
        try await perform(request, accepted: accepted, retry: .never)
    }

    /// Sends `request` as a send: under its `Idempotency-Key` (`key`, or a new UUID), attempted
    /// again with the same key as ``sendRetry`` says.
    func performSend(_ request: URLRequest, idempotencyKey key: String?) async throws -> HTTPURLResponse {
        try await perform(try SendRetry.keyed(request, key: key), accepted: [200, 201], retry: sendRetry).response
    }

    private func perform(_ request: URLRequest, accepted: Set<Int>, retry: SendRetry) async throws -> (data: Data, response: HTTPURLResponse) {
        let (data, response) = try await retry.perform(request, retryStatuses: [502, 503, 504]) { try await transport.perform($0) }
        guard accepted.contains(response.statusCode) else {
            throw Self.error(status: response.statusCode, body: data)
        }
        return (data, response)
    }

    /// The hub's error answer as a `HeraldError`: the code from the status, the message from
    /// the error document's `Detail` (or the start of the body, if it is not one).
    static func error(status: Int, body: Data) -> HeraldError {
        let detail: String
        if let document = try? HubErrorDocument(xml: body), !document.detail.isEmpty {
            detail = document.detail
        } else if !body.isEmpty {
            detail = "the hub answered \(status): " + String(decoding: body.prefix(300), as: UTF8.self)
        } else {
            detail = "the hub answered \(status) with no explanation"
        }
        return HeraldError(code: code(status: status), message: detail)
    }

    static func code(status: Int) -> HeraldError.Code {
        switch status {
        case 400: .badRequest
        case 401: .unauthorized
        case 403: .forbidden
        case 404: .notFound
        case 409: .conflict
        case 410: .gone
        case 412: .preconditionFailed
        case 413: .payloadTooLarge
        case 415: .unsupportedMediaType
        case 422: .unprocessableContent
        case 429: .tooManyRequests
        case 503: .unavailable
        case 400..<500: .badRequest
        default: .internalError
        }
    }

    /// The last path segment of the answer's `Location` (or `Content-Location`): the id of
    /// what the request created.
    static func locationID(_ response: HTTPURLResponse, what: String) throws -> String {
        guard let location = response.value(forHTTPHeaderField: "Location") ?? response.value(forHTTPHeaderField: "Content-Location"),
            let url = URL(string: location),
            let last = url.path.split(separator: "/").last, !last.isEmpty
        else {
            throw HeraldError(code: .internalError, message: "the hub accepted the \(what) but its answer has no Location with the id")
        }
        return last.percentDecoded() ?? String(last)
    }

    /// The version an `ETag` such as `W/"3"` or `"3"` names.
    static func version(etag: String?) -> Int? {
        guard var value = etag?.trimmingSpaces() else { return nil }
        if value.hasPrefix("W/") { value.removeFirst(2) }
        return Int(value.trimmingCharacters(in: CharacterSet(charactersIn: "\"")))
    }

    /// RFC 3986's unreserved characters.
    private static let unreserved = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")
    /// What a path segment may hold as it is (RFC 3986 `pchar`): unreserved, sub-delimiters,
    /// `:` and `@`. So ids and tags such as `username:alice` travel as the SDKs send them.
    private static let segmentCharacters = unreserved.union(CharacterSet(charactersIn: "!$&'()*+,;=:@"))
    /// What a query name or value may hold as it is: unreserved and `$` (`$filter`, `$top`).
    private static let queryCharacters = unreserved.union(CharacterSet(charactersIn: "$"))

    /// A path segment with `/`, `?`, `#`, `%`, spaces and non-ASCII percent-encoded (UTF-8).
    static func pathEncoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: segmentCharacters) ?? text
    }

    /// A query name or value with everything but unreserved characters and `$`
    /// percent-encoded, so `&`, `=`, `+`, `'` and spaces in handles and tokens arrive as they are.
    static func queryEncoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: queryCharacters) ?? text
    }
}

/// Where a ``NotificationHubClient``'s requests go: a `URLSession`, or another HTTP client
/// (tests reach a hub over TLS with a private CA this way, which `URLSession` on Linux cannot
/// trust).
package protocol NotificationHubTransport: Sendable {
    func perform(_ request: URLRequest) async throws -> (Data, HTTPURLResponse)
}

/// Requests through a `URLSession`.
struct URLSessionTransport: NotificationHubTransport {
    let session: URLSession

    func perform(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let (data, response) = try await session.data(for: request)
        guard let http = response as? HTTPURLResponse else {
            throw HeraldError(code: .internalError, message: "the hub's answer is not an HTTP response")
        }
        return (data, http)
    }
}
