import Foundation
import HeraldCore
public import HeraldHub
import HeraldHubWire
public import Hummingbird
import Logging

/// The app backend of the notify-users tutorial, with its holes closed.
///
/// - `POST /api/register?handle=` → a registration id (JSON string), reusing the caller's
///   registration of that handle and deleting the caller's duplicates.
/// - `PUT /api/register/{id}` `{Platform, Handle, Tags}` → creates or updates it, adding the
///   tag `username:<caller>`; 410 when the id is not (or no longer) valid.
/// - `DELETE /api/register/{id}`.
/// - `POST /api/notifications?pns=&to_tag=` with a JSON string → notifies that user's devices.
/// - `POST /api/receipts` `{"notificationId", "registrationId"}` → `204`: the caller's device
///   received the notification (``Receipt``).
/// - `POST /api/notifications/liveactivity?to_tag=&activity=` with an `aps` object → updates
///   or ends that user's Live Activity, whose update token the app registered with
///   `{"Platform": "apns", "Handle": "<update token>", "LiveActivity": "<activity id>"}`.
public struct AppBackendController: Sendable {
    let devices: any UserDevices
    let configuration: ServerConfiguration

    /// Tags a device may not claim: they are set by the backend.
    static let reservedTagPrefixes = ["username:", "from:", "$", liveActivityTagPrefix]

    public init(devices: any UserDevices, configuration: ServerConfiguration) {
        self.devices = devices
        self.configuration = configuration
    }

    public func addRoutes(to group: RouterGroup<AppRequestContext>) {
        group.post("register", use: newRegistrationID)
        group.put("register/{id}", use: upsertRegistration)
        group.delete("register/{id}", use: deleteRegistration)
        group.post("notifications", use: notifyUser)
        group.post("notifications/liveactivity", use: updateLiveActivity)
        group.post("receipts", use: confirmReceipt)
    }

    // MARK: Receipts

    /// `POST /api/receipts` `{"notificationId": "<herald.id>", "registrationId": "<id>"}` →
    /// `204`: the caller's device received the notification (or `"notificationIds": […]`).
    @Sendable func confirmReceipt(request: Request, context: AppRequestContext) async throws -> Response {
        let user = try context.requireUser()
        let body = try await request.decodeJSONBody(context: context)
        let ids = try ReceiptBody.notificationIDs(in: body)
        guard let registration = try ReceiptBody.string("registrationId", in: body) else {
            throw HeraldError.badRequest("registrationId is required: the registration of the device that received it")
        }
        try await devices.confirm(ids, registrationID: registration, user: user)
        return Response(status: .noContent)
    }

    // MARK: Registrations

    @Sendable func newRegistrationID(request: Request, context: AppRequestContext) async throws -> Response {
        let user = try context.requireUser()
        let id = try await devices.registrationID(handle: request.uri.queryParameters.get("handle").map { String($0) }, user: user)
        context.logger.debug("Issued a registration id")
        return try .json(id)
    }

    @Sendable func upsertRegistration(request: Request, context: AppRequestContext) async throws -> Response {
        let user = try context.requireUser()
        let id = try context.parameters.require("id")
        guard RegistrationID.isWellFormed(id) else { throw HeraldError.badRequest("malformed registration id") }
        let body = try await request.decodeJSONBody(context: context)
        guard case .object = body else {
            throw HeraldError.badRequest(#"send {"Platform": "apns", "Handle": "<device token>", "Tags": []}"#)
        }
        guard let platformName = body.member("Platform")?.stringValue else {
            throw HeraldError.badRequest("Platform is required: apns, fcm (or gcm), wns or webpush")
        }
        let platform = try Platform(parsing: platformName)
        guard let rawHandle = body.member("Handle")?.stringValue else {
            throw HeraldError.badRequest("Handle is required: the device's push token or channel")
        }
        let handle = try Registration.normalizedHandle(rawHandle, platform: platform)
        let requestedTags = try Self.tags(from: body.member("Tags"))
        let keys = try Self.webPushKeys(from: body, platform: platform)
        var tags = requestedTags + ["username:\(user)"]
        var handleKind = HandleKind.device
        if let activity = body.member("LiveActivity") {
            // An activity's update token: reached by the activity's sends only, not the user's alerts.
            guard platform == .apns else { throw HeraldError.badRequest("LiveActivity goes with Platform apns: Live Activities are iOS's") }
            guard requestedTags.isEmpty else { throw HeraldError.badRequest("a LiveActivity registration takes no Tags") }
            guard body.member("PushToStart") == nil else {
                throw HeraldError.badRequest("a registration is an activity's update token (LiveActivity) or a push-to-start token (PushToStart), not both")
            }
            guard let activityID = activity.stringValue else { throw HeraldError.badRequest("LiveActivity is the activity's id, a string") }
            tags = [try Self.liveActivityTag(user: user, activity: activityID)]
            handleKind = .liveActivity
        }
        if let activityType = body.member("PushToStart") {
            // The app's push-to-start token for one activity type: reached by starts of that
            // type sent to the user (or to the tags it asks for), not by the user's alerts.
            guard let type = activityType.stringValue else {
                throw HeraldError.badRequest("PushToStart is the activity type's name (its ActivityAttributes type), a string")
            }
            guard platform == .apns else { throw HeraldError.badRequest("PushToStart goes with Platform apns: Live Activities are iOS's") }
            handleKind = .pushToStart(activityType: type)
            try handleKind.validate(platform: platform, field: "PushToStart")
        }
        let registration = Registration(
            id: id,
            platform: platform,
            handle: handle,
            handleKind: handleKind,
            webPushKeys: keys,
            tags: tags,
            owner: user
        )
        // One device, one registration: whoever signed in last on this device owns it.
        let saved = try await devices.saveRegistration(registration, user: user)
        return try .json(RegistrationView(saved))
    }

    @Sendable func deleteRegistration(request: Request, context: AppRequestContext) async throws -> Response {
        let user = try context.requireUser()
        let id = try context.parameters.require("id")
        guard RegistrationID.isWellFormed(id) else { throw HeraldError.badRequest("malformed registration id") }
        try await devices.deleteRegistration(id: id, user: user)
        return Response(status: .ok)
    }

    /// Tags a device asks for: validated, and none of the backend's reserved tags.
    static func tags(from value: JSONValue?) throws -> [String] {
        guard let value, value != .null else { return [] }
        guard case .array(let items) = value else { throw HeraldError.badRequest("Tags is an array of strings") }
        var tags: [String] = []
        for item in items {
            guard case .string(let tag) = item else { throw HeraldError.badRequest("Tags is an array of strings") }
            if let prefix = reservedTagPrefixes.first(where: { tag.lowercased().hasPrefix($0) }) {
                throw HeraldError.forbidden("tag '\(tag)' is reserved: tags starting with '\(prefix)' are set by the server")
            }
            try Tag.validate(tag)
            tags.append(tag)
        }
        // One slot stays free for username:<user>.
        guard Set(tags).count < Tag.maxPerRegistration else {
            throw HeraldError.badRequest("a device has at most \(Tag.maxPerRegistration - 1) tags of its own")
        }
        return tags
    }

    static func webPushKeys(from body: JSONValue, platform: Platform) throws -> WebPushKeys? {
        guard platform == .webpush else { return nil }
        let keys = body.member("Keys") ?? body
        guard let p256dh = keys.member("p256dh")?.stringValue, let auth = keys.member("auth")?.stringValue,
            !p256dh.isEmpty, !auth.isEmpty
        else {
            throw HeraldError.badRequest(#"a webpush registration needs "Keys": {"p256dh": "…", "auth": "…"} from the browser's subscription"#)
        }
        return WebPushKeys(p256dh: p256dh, auth: auth)
    }

    // MARK: Notifications

    @Sendable func notifyUser(request: Request, context: AppRequestContext) async throws -> Response {
        let user = try context.requireUser()
        let target = try NotifyTarget(request: request, platforms: devices.platforms)
        let body = try await request.decodeJSONBody(context: context)
        let content: NotificationContent
        switch body {
        case .string(let message):
            content = .notifyUser(from: user, message: message)
        case .object:
            guard let message = (body.member("message") ?? body.member("body"))?.stringValue else {
                throw HeraldError.badRequest(#"send the message as a JSON string, or {"message": "…", "title": "…"}"#)
            }
            var c = NotificationContent.notifyUser(from: user, message: message)
            c.title = body.member("title")?.stringValue
            content = c
        default:
            throw HeraldError.badRequest("send the message as a JSON string")
        }
        let payloads = try target.platforms.map { try content.payload(for: $0) }
        let (sent, status) = try await target.withIdempotencyKey(of: request, user: user, body: body)
            .send(payloads, devices: devices, wait: configuration.notifyWait, logger: context.logger)
        return try Response.json(NotificationSummary(sent.record), status: status).markedReplayed(sent.replay != nil)
    }
}

// MARK: Live Activities

extension AppBackendController {
    /// The tag of a user's Live Activity registrations: `liveactivity:<user>:<activity id>`.
    static let liveActivityTagPrefix = "liveactivity:"

    /// The tag of `user`'s activity `activity`; `400` when the id cannot be part of a tag.
    static func liveActivityTag(user: String, activity: String) throws -> String {
        let tag = "\(liveActivityTagPrefix)\(user):\(activity)"
        guard !activity.isEmpty, (try? Tag.validate(tag)) != nil else {
            throw HeraldError.badRequest(
                "the activity id must be 1 to \(Tag.maxLength - tag.count + activity.count) characters of letters, digits and _ @ # . : -")
        }
        return tag
    }

    /// `POST /api/notifications/liveactivity?to_tag=<user>&activity=<id>` with the push's
    /// `aps` (`event` `update` or `end`, `content-state`, `stale-date`, `dismissal-date`,
    /// `relevance-score`, `alert`; `timestamp` defaults to now): sent with
    /// `apns-push-type: liveactivity` to that activity's registrations, checked as APNs does.
    /// Without `activity`, a `start` (push-to-start): to the user's push-to-start tokens of
    /// the `attributes-type` it names.
    @Sendable func updateLiveActivity(request: Request, context: AppRequestContext) async throws -> Response {
        let user = try context.requireUser()
        var target = try NotifyTarget(request: request, platforms: [.apns])
        guard target.platforms == [.apns] else { throw HeraldError.badRequest("a Live Activity is sent with APNs only: pns=apns or none") }
        let body = try await request.decodeJSONBody(context: context)
        guard case .object(var aps) = body else {
            throw HeraldError.badRequest(#"send the activity's aps: {"event": "update", "content-state": {…}}"#)
        }
        let isStart = body["event"] == .string("start")
        let activity = request.uri.queryParameters.get("activity").map { String($0) }
        switch (isStart, activity) {
        case (true, nil):
            // The user's devices: the push's kind picks their push-to-start tokens of its type.
            break
        case (false, let activity?):
            do {
                target.tags = try SendRequest.Tags(parsing: try Self.liveActivityTag(user: target.recipient, activity: activity))
            } catch let error as TagExpressionSyntaxError {
                throw error.heraldError
            }
        case (true, _?):
            throw HeraldError.badRequest(
                "an activity is started by a push to the app's push-to-start token, not to an activity's: leave out activity to start one")
        case (false, nil):
            throw HeraldError.badRequest("activity is required: the id the app registered the activity's update token under")
        }
        if body["timestamp"] == nil {
            aps.insert((key: "timestamp", value: .number(Date().timeIntervalSince1970.rounded(.down))), at: 0)
        }
        let payload = PlatformPayload(
            platform: .apns, body: try JSONEncoder().encode(JSONValue.object([("aps", .object(aps))])),
            headers: [.init(name: "apns-push-type", value: "liveactivity"), .init(name: "apns-priority", value: "10")])
        let (sent, status) = try await target.withIdempotencyKey(of: request, user: user, body: body)
            .send([payload], devices: devices, wait: configuration.notifyWait, logger: context.logger)
        return try Response.json(NotificationSummary(sent.record), status: status).markedReplayed(sent.replay != nil)
    }
}

/// A registration as the app backend shows it to its owner.
struct RegistrationView: Encodable {
    var id: String
    var platform: String
    /// `liveActivity` or `pushToStart` for a Live Activity's token; absent for a device's.
    var kind: String?
    /// A push-to-start token's activity type.
    var activityType: String?
    var tags: [String]
    var version: Int
    var updatedAt: Date

    init(_ r: Registration) {
        id = r.id
        platform = r.platform.rawValue
        kind = r.handleKind.wireName
        activityType = r.handleKind.activityType
        tags = r.tags
        version = r.version
        updatedAt = r.updatedAt
    }
}
