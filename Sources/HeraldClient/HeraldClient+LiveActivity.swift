public import Foundation
public import HeraldCore

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Live Activities through the app backend: the app registers an activity's update token
/// under its own id for the activity, and its push-to-start token per activity type; a
/// signed-in user then starts, updates and ends a user's activities.
extension HeraldClient {
    /// Registers a Live Activity's update token (ActivityKit's `pushTokenUpdates`,
    /// hex-encoded) under the app's id for the activity, for this user; returns its
    /// registration id. The activity's updates and end reach it; the user's alerts do not.
    @discardableResult
    public func registerLiveActivity(updateToken: Data, activityID: String) async throws -> String {
        try await registerActivityToken(Self.hex(updateToken), extra: [("LiveActivity", .string(activityID))])
    }

    /// Registers the app's push-to-start token for activities of `activityType` (the name of
    /// their `ActivityAttributes` type; ActivityKit's `pushToStartTokenUpdates`, hex-encoded),
    /// with `tags` of its own; returns its registration id. Starts of that type sent to this
    /// user (``startLiveActivity(user:aps:idempotencyKey:)``) or to the tags reach it.
    @discardableResult
    public func registerPushToStart(token: Data, activityType: String, tags: [String] = []) async throws -> String {
        try await registerActivityToken(
            Self.hex(token), extra: [("PushToStart", .string(activityType)), ("Tags", .array(tags.map { .string($0) }))])
    }

    /// Removes an activity token's registration (from ``registerLiveActivity(updateToken:activityID:)``
    /// or ``registerPushToStart(token:activityType:tags:)``).
    public func unregisterActivityToken(registrationID: String) async throws {
        do {
            _ = try await send("DELETE", "api/register/\(registrationID)", json: nil)
        } catch let error as HeraldClientError where error.status == 404 || error.status == 410 {
            // Already gone.
        }
    }

    /// Updates or ends `user`'s activity `activityID` with the push's `aps` (`event`
    /// `update` or `end`, `content-state`, `stale-date`, `dismissal-date`, …; `timestamp`
    /// defaults to now). Sent under `idempotencyKey` (a new UUID when `nil`).
    @discardableResult
    public func updateLiveActivity(
        user: String, activityID: String, aps: JSONValue, idempotencyKey: String? = nil
    ) async throws
        -> NotificationSummary
    {
        let query = [URLQueryItem(name: "to_tag", value: user), URLQueryItem(name: "activity", value: activityID)]
        let data = try await send("POST", "api/notifications/liveactivity", query: query, json: aps, idempotencyKey: idempotencyKey)
        return try Self.decoder.decode(NotificationSummary.self, from: data)
    }

    /// Starts an activity on `user`'s devices by push-to-start: the `aps` of a `start`
    /// (`attributes-type`, `attributes`, `content-state`, `alert`) reaches the user's
    /// push-to-start tokens of that activity type.
    @discardableResult
    public func startLiveActivity(user: String, aps: JSONValue, idempotencyKey: String? = nil) async throws -> NotificationSummary {
        let data = try await send(
            "POST", "api/notifications/liveactivity", query: [URLQueryItem(name: "to_tag", value: user)], json: aps,
            idempotencyKey: idempotencyKey)
        return try Self.decoder.decode(NotificationSummary.self, from: data)
    }

    /// A registration of `token` (a new id from the server, which de-duplicates by handle)
    /// with `extra` members beside the platform and handle.
    private func registerActivityToken(_ token: String, extra: [(String, JSONValue)]) async throws -> String {
        let data = try await send("POST", "api/register", query: [URLQueryItem(name: "handle", value: token)], json: nil)
        let id = try JSONDecoder().decode(String.self, from: data)
        let body = JSONValue.object([("Platform", .string(Platform.apns.rawValue)), ("Handle", .string(token))] + extra)
        _ = try await send("PUT", "api/register/\(id)", json: body)
        return id
    }
}
