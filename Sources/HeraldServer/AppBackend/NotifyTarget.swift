import Foundation
import HeraldCore
import HeraldHub
import Hummingbird
import Logging

/// Whom a notify route sends to and on which platforms: its `to_tag` (a user name) and
/// optional `pns`, `ttl`, `priority`, `collapse_id` and `spread` query parameters. Shared by `POST /api/notifications` and the secure and
/// rich routes.
struct NotifyTarget {
    /// The lowercased user name whose devices are notified.
    var recipient: String
    /// `pns` if given, else every platform the hub has a provider for.
    var platforms: [Platform]
    /// The optional `ttl` (seconds), `priority` (high, normal, low), `collapse_id` and
    /// `spread` (seconds) query parameters, as each platform's own headers or fields.
    var options = SendRequest.Options()
    /// Tags narrower than the recipient's devices (a Live Activity's registrations); `nil`
    /// for every device of the recipient.
    var tags: SendRequest.Tags?

    init(request: Request, platforms configured: Set<Platform>) throws {
        guard let toTag = request.uri.queryParameters.get("to_tag"), !toTag.isEmpty else {
            throw HeraldError.badRequest("to_tag is required: the user name to notify")
        }
        recipient = try Accounts.normalizedUsername(toTag)
        if let pns = request.uri.queryParameters.get("pns"), !pns.isEmpty {
            platforms = [try Platform(parsing: pns)]
        } else {
            platforms = Platform.allCases.filter { configured.contains($0) }
            guard !platforms.isEmpty else {
                throw HeraldError.unavailable("no push service is configured on this server")
            }
        }
        let query = request.uri.queryParameters
        if let ttl = query.get("ttl") {
            guard let seconds = Int(ttl), seconds >= 0 else {
                throw HeraldError.badRequest("ttl is a number of seconds, not '\(ttl)'")
            }
            options.timeToLive = .seconds(seconds)
        }
        if let priority = query.get("priority") { options.priority = try SendRequest.Priority(parsing: priority) }
        if let spread = query.get("spread") {
            guard let seconds = Int(spread) else {
                throw HeraldError.badRequest("spread is a number of seconds to spread the sends over, not '\(spread)'")
            }
            options.spread = .seconds(seconds)
        }
        options.collapseID = query.get("collapse_id")
    }

    /// Enqueues `payloads` for the recipient's devices and waits up to `wait` for delivery to
    /// end. Returns the notification as it is then, and the status to answer with (503 if it
    /// was abandoned). Sent under an idempotency key (``withIdempotencyKey(of:user:body:answer:)``)
    /// that was used before for the same request, the first notification is answered again,
    /// with ``SendResult/replay``, and nothing is sent.
    func send(
        _ payloads: [PlatformPayload],
        devices: any UserDevices,
        wait: Duration,
        logger: Logger
    ) async throws -> (SendResult, HTTPResponse.Status) {
        let request = SendRequest(
            target: tags.map { SendRequest.Target.tags($0) } ?? .user(recipient), content: .native(options.replacingDefaults(in: payloads)), options: options)
        let sent = try await devices.send(request, wait: wait)
        let outcome = sent.record
        logger.info(
            sent.replay == nil ? "Notification sent" : "Notification replayed",
            metadata: ["herald.notification.id": "\(outcome.id)", "herald.platforms": "\(platforms.map(\.rawValue))"]
        )
        return (sent, outcome.state == .abandoned ? .serviceUnavailable : .ok)
    }

    /// This target with the request's `Idempotency-Key`, if it has one, in the scope of
    /// `user`'s keys: `body` is the request's JSON body as the digest reads it (sorted keys,
    /// so that key order does not matter), `answer` what the answer carries beside the
    /// notification (a secure send's content id).
    func withIdempotencyKey(of request: Request, user: String, body: JSONValue, answer: String? = nil) throws -> NotifyTarget {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try withIdempotencyKey(of: request, user: user, canonicalBody: try encoder.encode(body), answer: answer)
    }

    /// As ``withIdempotencyKey(of:user:body:answer:)``, for a body encoded already.
    func withIdempotencyKey(of request: Request, user: String, canonicalBody: Data, answer: String? = nil) throws -> NotifyTarget {
        var target = self
        target.options.idempotencyKey = try request.idempotencyKey(
            scope: IdempotencyKey.userScope(user), body: canonicalBody, retention: IdempotencyKey.defaultRetention, answer: answer
        )
        return target
    }
}

/// A ``NotificationSummary`` with the id of the content it announces beside its own keys:
/// `{…, "secureId": "…"}` or `{…, "richId": "…"}`.
struct ContentNotificationView: Encodable {
    var summary: NotificationSummary
    var key: String
    var contentID: String

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    func encode(to encoder: any Encoder) throws {
        try summary.encode(to: encoder)
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(contentID, forKey: Key(stringValue: key))
    }
}
