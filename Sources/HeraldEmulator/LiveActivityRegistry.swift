import Foundation
import HeraldCore
import Synchronization

/// The Live Activity side of the APNs emulator's virtual devices: push-to-start tokens (per app
/// and activity type), activities with their update tokens, broadcast channels and who listens
/// on them. Every change happens under one lock, so a check (a start budget, a channel) and
/// what it allows are one step.
final class LiveActivityRegistry: Sendable {
    /// What a push-to-start or an update did not do, and the APNs answer for it.
    struct Refusal: Error {
        var status: Int
        var reason: APNsReason
    }

    enum TokenKind {
        case pushToStart
        case update
    }

    private struct PushToStartToken {
        var topic: String
        var attributesType: String
        /// When it started activities, within the budget's window.
        var starts: [Date] = []
    }

    private struct Channel {
        var topic: String
        var messageStoragePolicy: Int
        /// Activity ids, in the order they subscribed.
        var subscribers: [String] = []
    }

    private struct State {
        var activities: [String: LiveActivity] = [:]
        var updateTokens: [String: String] = [:]
        var pushToStartTokens: [String: PushToStartToken] = [:]
        var channels: [String: Channel] = [:]
    }

    private let state = Mutex(State())
    private let inboxLimit: Int

    init(inboxLimit: Int) {
        self.inboxLimit = max(1, inboxLimit)
    }

    // MARK: - Tokens and activities

    func registerPushToStartToken(_ token: String, topic: String, attributesType: String) {
        state.withLock { $0.pushToStartTokens[token] = PushToStartToken(topic: topic, attributesType: attributesType) }
    }

    func kind(of token: String) -> TokenKind? {
        state.withLock { state in
            if state.updateTokens[token] != nil { return .update }
            if state.pushToStartTokens[token] != nil { return .pushToStart }
            return nil
        }
    }

    /// An activity the app starts itself, with an update token, or listening on `channelID`.
    func startInApp(
        topic: String, attributesType: String, attributes: JSONValue?, contentState: JSONValue?, channelID: String?,
        updateToken: String?, now: Date
    ) throws(Refusal) -> LiveActivity {
        try state.withLock { state throws(Refusal) -> LiveActivity in
            let activity = LiveActivity(
                id: RandomIdentifier.uuid(), topic: topic, attributesType: attributesType, attributes: attributes,
                contentState: contentState, state: .active, updateToken: updateToken, channelID: channelID,
                startedBy: nil, timestamp: Int(now.timeIntervalSince1970), startedAt: now, received: []
            )
            try Self.add(activity, to: &state)
            return activity
        }
    }

    /// A push-to-start push to `token`: starts an activity (its update token is `newUpdateToken`
    /// unless it subscribes to a channel) within `budget`.
    func start(
        token: String, payload: LiveActivityPayload, notification: ReceivedNotification,
        budget: APNsEmulator.PushToStartBudget?, newUpdateToken: String, now: Date
    ) throws(Refusal) -> LiveActivity {
        let limit = inboxLimit
        return try state.withLock { state throws(Refusal) -> LiveActivity in
            guard var startToken = state.pushToStartTokens[token] else { throw Refusal(status: 400, reason: .badDeviceToken) }
            guard payload.event == .start else { throw Refusal(status: 400, reason: .badPayload) }
            guard payload.attributesType == startToken.attributesType else {
                // The device cannot decode attributes of another type: the start would fail there.
                throw Refusal(status: 400, reason: .badPayload)
            }
            if let budget {
                startToken.starts.removeAll { now.timeIntervalSince($0) >= budget.interval }
                if startToken.starts.count >= budget.starts {
                    state.pushToStartTokens[token] = startToken
                    throw Refusal(status: 429, reason: .tooManyRequests)
                }
            }
            var activity = LiveActivity(
                id: RandomIdentifier.uuid(), topic: startToken.topic, attributesType: startToken.attributesType,
                attributes: payload.attributes, contentState: payload.contentState, state: .active,
                updateToken: payload.inputPushChannel == nil ? newUpdateToken : nil, channelID: payload.inputPushChannel,
                startedBy: token, timestamp: payload.timestamp, startedAt: now, received: []
            )
            activity.apply(payload, now: now)
            activity.record(notification, limit: limit)
            try Self.add(activity, to: &state)
            startToken.starts.append(now)
            state.pushToStartTokens[token] = startToken
            return activity
        }
    }

    /// An `update` or `end` push to an activity's update token. A push older than the newest
    /// applied one, or to an ended activity, arrives and changes nothing (as on a device).
    func update(token: String, payload: LiveActivityPayload, notification: ReceivedNotification, now: Date) throws(Refusal) {
        let limit = inboxLimit
        try state.withLock { state throws(Refusal) in
            guard let id = state.updateTokens[token], var activity = state.activities[id] else {
                throw Refusal(status: 400, reason: .badDeviceToken)
            }
            guard payload.event != .start else { throw Refusal(status: 400, reason: .badPayload) }
            activity.apply(payload, now: now)
            activity.record(notification, limit: limit)
            state.activities[id] = activity
        }
    }

    func activity(id: String, now: Date) -> LiveActivity? {
        state.withLock { $0.activities[id] }.map { $0.seen(at: now) }
    }

    /// The activities whose update token is `token`, or that the push-to-start token `token` started.
    func activities(token: String, now: Date) -> [LiveActivity] {
        state.withLock { state in
            if let id = state.updateTokens[token], let activity = state.activities[id] { return [activity] }
            return state.activities.values.filter { $0.startedBy == token }.sorted { $0.startedAt < $1.startedAt }
        }.map { $0.seen(at: now) }
    }

    func subscribe(activityID: String, channelID: String) throws(Refusal) {
        try state.withLock { state throws(Refusal) in
            guard var activity = state.activities[activityID] else { throw Refusal(status: 404, reason: .badPath) }
            guard var channel = state.channels[channelID], channel.topic == activity.topic else {
                throw Refusal(status: 400, reason: .channelNotRegistered)
            }
            if let previous = activity.channelID, previous != channelID {
                state.channels[previous]?.subscribers.removeAll { $0 == activityID }
            }
            if !channel.subscribers.contains(activityID) { channel.subscribers.append(activityID) }
            state.channels[channelID] = channel
            activity.channelID = channelID
            state.activities[activityID] = activity
        }
    }

    private static func add(_ activity: LiveActivity, to state: inout State) throws(Refusal) {
        if let channelID = activity.channelID {
            guard state.channels[channelID]?.topic == activity.topic else {
                throw Refusal(status: 400, reason: .channelNotRegistered)
            }
            state.channels[channelID]?.subscribers.append(activity.id)
        }
        state.activities[activity.id] = activity
        if let token = activity.updateToken { state.updateTokens[token] = activity.id }
    }

    // MARK: - Channels

    /// A new channel of `topic`, unless the app has `limit` already.
    func createChannel(topic: String, messageStoragePolicy: Int, limit: Int) throws(Refusal) -> String {
        try state.withLock { state throws(Refusal) -> String in
            let count = state.channels.values.count { $0.topic == topic }
            guard count < limit else { throw Refusal(status: 400, reason: .cannotCreateChannelConfig) }
            var id: String
            repeat { id = RandomIdentifier.base64(byteCount: 16) } while state.channels[id] != nil
            state.channels[id] = Channel(topic: topic, messageStoragePolicy: messageStoragePolicy)
            return id
        }
    }

    func channel(id: String, topic: String) -> BroadcastChannel? {
        state.withLock { state in
            guard let channel = state.channels[id], channel.topic == topic else { return nil }
            return BroadcastChannel(
                id: id, topic: topic, messageStoragePolicy: channel.messageStoragePolicy, subscribers: channel.subscribers.count)
        }
    }

    /// Whether there was such a channel. Its activities keep their content; broadcasts to it fail from now on.
    func deleteChannel(id: String, topic: String) -> Bool {
        state.withLock { state in
            guard state.channels[id]?.topic == topic else { return false }
            state.channels[id] = nil
            return true
        }
    }

    /// The ids of `topic`'s channels, in a stable order.
    func channelIDs(topic: String) -> [String] {
        state.withLock { state in state.channels.filter { $0.value.topic == topic }.keys.sorted() }
    }

    /// Delivers a broadcast to every activity listening on the channel; how many it reached.
    func broadcast(
        channelID: String, topic: String, payload: LiveActivityPayload, notification: ReceivedNotification, now: Date,
        checkExpiration: (_ messageStoragePolicy: Int) -> Bool
    ) throws(Refusal) -> Int {
        let limit = inboxLimit
        return try state.withLock { state throws(Refusal) -> Int in
            guard let channel = state.channels[channelID], channel.topic == topic else {
                throw Refusal(status: 400, reason: .channelNotRegistered)
            }
            guard checkExpiration(channel.messageStoragePolicy) else {
                throw Refusal(status: 400, reason: .badExpirationDate)
            }
            for id in channel.subscribers {
                guard var activity = state.activities[id], activity.channelID == channelID else { continue }
                activity.apply(payload, now: now)
                activity.record(notification, limit: limit)
                state.activities[id] = activity
            }
            return channel.subscribers.count
        }
    }
}

extension LiveActivity {
    /// What a push does to the activity on the device.
    fileprivate mutating func apply(_ payload: LiveActivityPayload, now: Date) {
        guard endedAt == nil, payload.timestamp >= timestamp else { return }
        timestamp = payload.timestamp
        if let contentState = payload.contentState { self.contentState = contentState }
        if let stale = payload.staleDate { staleDate = Date(timeIntervalSince1970: TimeInterval(stale)) }
        if let score = payload.relevanceScore { relevanceScore = score }
        if payload.event == .end {
            endedAt = now
            if let dismissal = payload.dismissalDate {
                dismissalDate = Date(timeIntervalSince1970: TimeInterval(dismissal))
            }
        }
    }

    fileprivate mutating func record(_ notification: ReceivedNotification, limit: Int) {
        received.append(notification)
        if received.count > limit + limit / 8 { received.removeFirst(received.count - limit) }
    }

    /// The activity with its state at `now` (stale and dismissed follow the dates).
    fileprivate func seen(at now: Date) -> LiveActivity {
        var activity = self
        if let endedAt {
            let dismissal = dismissalDate ?? endedAt.addingTimeInterval(Self.defaultDismissalInterval)
            activity.state = now >= dismissal ? .dismissed : .ended
        } else if let staleDate, now >= staleDate {
            activity.state = .stale
        } else {
            activity.state = .active
        }
        return activity
    }
}
