import Foundation
import HeraldCore
public import HeraldHub
public import HeraldStore
public import Hummingbird
import Logging

/// Secure push: content that must not travel through a push service.
///
/// - `POST /api/notifications/secure?to_tag=<user>[&pns=…]` with any JSON value → seals it
///   (AES-GCM, ``ServerConfiguration/secureKey``) and stores it for
///   ``ServerConfiguration/secureRetention``, then sends an id-only silent notification
///   (``SilentNotification/secure(id:)``) to every device of the user. Answers like
///   `POST /api/notifications`, plus `"secureId"`.
/// - `GET /api/notifications/{id}` of a secure payload's id (``ContentController``) →
///   `{"Id", "Payload", "Read"}` (``SecurePayload``) to the addressed user only, and marks it
///   read. Anyone else, an unknown and an expired id all get the same 404.
///
/// Ids are ``ContentID``s of the secure kind. Without a key, both answer 503. Payloads and
/// keys are never logged.
public struct SecurePushController: Sendable {
    let store: any ContentStore
    let devices: any UserDevices
    let configuration: ServerConfiguration

    public init(store: any ContentStore, devices: any UserDevices, configuration: ServerConfiguration) {
        self.store = store
        self.devices = devices
        self.configuration = configuration
    }

    public func addRoutes(to group: RouterGroup<AppRequestContext>) {
        group.post("notifications/secure", use: send)
    }

    private func key() throws -> SecurePayloadKey {
        guard let key = configuration.secureKey else {
            throw HeraldError.unavailable("secure push is not enabled on this server: it has no key to seal payloads with")
        }
        return key
    }

    @Sendable func send(request: Request, context: AppRequestContext) async throws -> Response {
        let user = try context.requireUser()
        let key = try key()
        let target = try NotifyTarget(request: request, platforms: devices.platforms)
        let payload = try await request.decodeJSONBody(context: context)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let plaintext = try encoder.encode(payload)
        // Checked before anything is stored: a malformed key changes nothing.
        _ = try target.withIdempotencyKey(of: request, user: user, canonicalBody: plaintext)
        let now = configuration.now()
        // Sealed under each id tried: the id is part of the associated data.
        let id = try await ContentID.save(.secure, random: configuration.contentIDRandom) { id in
            try await store.saveSecureMessage(
                SecureMessage(
                    id: id,
                    recipient: target.recipient,
                    sender: user,
                    sealed: try key.seal(plaintext, id: id, recipient: target.recipient),
                    createdAt: now,
                    expiresAt: now.addingTimeInterval(configuration.secureRetention.seconds)
                )
            )
        }
        let notifications = try target.platforms.map { try SilentNotification.secure(id: id).payload(for: $0) }
        // A repeat of a send under its key answers the first one's content id; the payload
        // sealed for the repeat is never announced, and expires unread.
        let (sent, status) = try await target.withIdempotencyKey(of: request, user: user, canonicalBody: plaintext, answer: id)
            .send(notifications, devices: devices, wait: configuration.notifyWait, logger: context.logger)
        return try Response.json(
            ContentNotificationView(
                summary: NotificationSummary(sent.record), key: NotificationDataKey.secureID, contentID: sent.replay?.answer ?? id
            ),
            status: status
        ).markedReplayed(sent.replay != nil)
    }

    /// The secure payload `id` as its addressee `user` reads it, and marks it read; `nil` when
    /// `user` may not read it: someone else's, unknown or expired.
    func read(id: String, user: String, context: AppRequestContext) async throws -> Response? {
        let key = try key()
        guard let message = try await store.readSecureMessage(id: id, recipient: user, now: configuration.now()) else {
            return nil
        }
        let payload: JSONValue
        do {
            let plaintext = try key.unseal(message.sealed, id: message.id, recipient: message.recipient)
            payload = try JSONValue(parsing: plaintext)
        } catch {
            // A changed key, or bytes changed in the database. The id is safe to log.
            context.logger.error("A stored secure payload cannot be opened with the server's key", metadata: ["herald.secure.id": "\(id)"])
            throw HeraldError(code: .internalError, message: "the secure payload cannot be opened with this server's key")
        }
        return try .json(
            SecurePayload(id: id, payload: payload, read: message.readCount > 0),
            headers: [.cacheControl: "no-store"]
        )
    }
}
