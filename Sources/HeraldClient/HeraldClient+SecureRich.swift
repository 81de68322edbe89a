public import Foundation
public import HeraldCore

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What `POST /api/notifications/secure` answered: the payload's id and the notification's
/// outcome.
public struct SecureNotificationReceipt: Sendable, Hashable {
    /// The id the recipient's devices received (`SecurePayload.id`).
    public var secureID: String
    public var notification: NotificationSummary

    public init(secureID: String, notification: NotificationSummary) {
        self.secureID = secureID
        self.notification = notification
    }
}

/// What `POST /api/notifications/rich` answered: the content's id and the notification's
/// outcome.
public struct RichNotificationReceipt: Sendable, Hashable {
    public var richID: String
    public var notification: NotificationSummary

    public init(richID: String, notification: NotificationSummary) {
        self.richID = richID
        self.notification = notification
    }
}

extension HeraldClient {
    // MARK: Secure push

    /// Stores `payload` on the server (sealed at rest) and sends `user`'s devices a silent
    /// notification that carries only its id; the devices fetch it with
    /// ``fetchSecurePayload(id:)``. Sent under `idempotencyKey` (a new UUID when `nil`), as
    /// ``notify(user:message:platform:idempotencyKey:)`` is.
    @discardableResult
    public func sendSecure(
        to user: String, payload: JSONValue, platform: Platform? = nil, idempotencyKey: String? = nil
    ) async throws -> SecureNotificationReceipt {
        let data = try await send(
            "POST", "api/notifications/secure", query: Self.notifyQuery(user, platform), json: payload, idempotencyKey: idempotencyKey
        )
        struct ID: Decodable { var secureId: String }
        return SecureNotificationReceipt(
            secureID: try Self.decoder.decode(ID.self, from: data).secureId,
            notification: try Self.decoder.decode(NotificationSummary.self, from: data)
        )
    }

    /// Fetches the secure payload a notification announced (`IncomingNotification.secure(id:)`)
    /// from `GET /api/notifications/{id}`. Only the user it was sent to may; anyone else, and
    /// an expired id, get a 404 ``HeraldClientError``.
    public func fetchSecurePayload(id: String) async throws -> SecurePayload {
        let data = try await send("GET", "api/notifications/\(id)", json: nil)
        return try Self.decoder.decode(SecurePayload.self, from: data)
    }

    // MARK: Rich push

    /// Uploads rich content with its media type (`image/png`, `audio/mpeg`, …).
    public func uploadRich(_ data: Data, type: String) async throws -> RichUpload {
        var request = makeRequest("POST", "api/rich")
        request.setValue(type, forHTTPHeaderField: "Content-Type")
        request.httpBody = data
        let (body, _) = try await perform(request)
        return try Self.decoder.decode(RichUpload.self, from: body)
    }

    /// Sends content this user uploaded to `user`'s devices: a silent notification with its id,
    /// type and `message` (`RichNotificationStyle.silent`), or a visible one with the message
    /// as its text that an iOS notification service extension can enrich
    /// (`RichNotificationStyle.alert`). `user` may then fetch the content. Sent under
    /// `idempotencyKey` (a new UUID when `nil`), as ``notify(user:message:platform:idempotencyKey:)`` is.
    @discardableResult
    public func sendRich(
        to user: String,
        richID: String,
        message: String,
        style: RichNotificationStyle = .silent,
        platform: Platform? = nil,
        idempotencyKey: String? = nil
    ) async throws -> RichNotificationReceipt {
        var query = Self.notifyQuery(user, platform)
        query.append(URLQueryItem(name: "style", value: style.rawValue))
        let body = JSONValue.object([("message", .string(message)), ("richId", .string(richID))])
        let data = try await send("POST", "api/notifications/rich", query: query, json: body, idempotencyKey: idempotencyKey)
        return RichNotificationReceipt(richID: richID, notification: try Self.decoder.decode(NotificationSummary.self, from: data))
    }

    /// Downloads rich content a notification announced (`IncomingNotification.rich(id:type:message:url:)`)
    /// with its media type, from `GET /api/notifications/{id}` like the payload of a secure
    /// push. Only its uploader and the users it was sent to may; anyone else, and an expired
    /// id, get a 404 ``HeraldClientError``.
    public func fetchRichContent(id: String) async throws -> (data: Data, type: String) {
        let (data, response) = try await perform(makeRequest("GET", "api/notifications/\(id)"))
        return (data, response.value(forHTTPHeaderField: "Content-Type") ?? "application/octet-stream")
    }

    static func notifyQuery(_ user: String, _ platform: Platform?) -> [URLQueryItem] {
        var query = [URLQueryItem(name: "to_tag", value: user)]
        if let platform { query.append(URLQueryItem(name: "pns", value: platform.rawValue)) }
        return query
    }
}
