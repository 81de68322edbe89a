public import Foundation
public import HeraldCore

extension HubNotification {
    /// What a Live Activity push does: `aps.event`.
    public struct LiveActivityEvent: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// Starts an activity (push-to-start, iOS 17.2 and later): sent to the app's
        /// push-to-start token, with the activity's attributes type and attributes.
        public static let start = LiveActivityEvent(rawValue: "start")
        /// Changes a running activity's content state: sent to the activity's update token.
        public static let update = LiveActivityEvent(rawValue: "update")
        /// Ends an activity, which stays on the Lock Screen until its dismissal date.
        public static let end = LiveActivityEvent(rawValue: "end")

        public var description: String { rawValue }
    }

    /// A Live Activity push: an APNs notification with `apns-push-type: liveactivity`, which
    /// the hub sends on the app's `<bundle id>.push-type.liveactivity` topic.
    ///
    /// ```swift
    /// let update = HubNotification.liveActivity(
    ///     event: .update,
    ///     contentState: .object([("home", .number(2)), ("away", .number(1))]),
    ///     staleDate: Date().addingTimeInterval(600)
    /// )
    /// _ = try await client.send(update, tagExpression: "match-42")
    /// ```
    ///
    /// The hub checks the payload as APNs does and refuses, with a `400` naming the field,
    /// an `update` or `start` without a content state and a `start` without its attributes
    /// type, attributes or alert.
    ///
    /// - Parameters:
    ///   - event: start, update or end.
    ///   - contentState: the activity's `ContentState`, as its JSON encoding; required for
    ///     `start` and `update`.
    ///   - timestamp: when this state was current (whole seconds are sent); a device drops an
    ///     update older than the newest it has.
    ///   - staleDate: when the system shows the state as out of date.
    ///   - dismissalDate: for `end`, when the activity leaves the Lock Screen.
    ///   - relevanceScore: which of the app's activities the system shows first.
    ///   - alert: an alert shown with the push (`{"title": …, "body": …}`); required for `start`.
    ///   - attributesType: for `start`, the name of the activity's `ActivityAttributes` type.
    ///   - attributes: for `start`, the activity's attributes as their JSON encoding.
    ///   - priority: `apns-priority`, 10 (the default, budgeted by the system) or 5.
    public static func liveActivity(
        event: LiveActivityEvent,
        contentState: JSONValue? = nil,
        timestamp: Date = Date(),
        staleDate: Date? = nil,
        dismissalDate: Date? = nil,
        relevanceScore: Double? = nil,
        alert: JSONValue? = nil,
        attributesType: String? = nil,
        attributes: JSONValue? = nil,
        priority: Int = 10
    ) -> HubNotification {
        func seconds(_ date: Date) -> JSONValue { .number(date.timeIntervalSince1970.rounded(.down)) }
        var aps: [(key: String, value: JSONValue)] = [("timestamp", seconds(timestamp)), ("event", .string(event.rawValue))]
        if let contentState { aps.append(("content-state", contentState)) }
        if let staleDate { aps.append(("stale-date", seconds(staleDate))) }
        if let dismissalDate { aps.append(("dismissal-date", seconds(dismissalDate))) }
        if let relevanceScore { aps.append(("relevance-score", .number(relevanceScore))) }
        if let attributesType { aps.append(("attributes-type", .string(attributesType))) }
        if let attributes { aps.append(("attributes", attributes)) }
        if let alert { aps.append(("alert", alert)) }
        return apple(
            json: .object([("aps", .object(aps))]),
            headers: ["apns-push-type": "liveactivity", "apns-priority": String(priority)])
    }
}
