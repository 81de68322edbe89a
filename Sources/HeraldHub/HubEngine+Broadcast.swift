import Foundation
public import HeraldCore
public import HeraldPush
public import HeraldStore
import Logging

extension HubEngine {
    /// The hub's APNs provider, for its broadcast channels; `503` when the hub has no APNs
    /// credentials.
    public func apnsProvider() throws(HeraldError) -> APNsProvider {
        guard let provider = provider(for: .apns) as? APNsProvider else {
            throw .unavailable("this hub has no APNs credentials: broadcast channels are APNs'; set them with herald hub credentials")
        }
        return provider
    }

    /// Sends a Live Activity push to every device subscribed to the APNs broadcast channel
    /// `channelID`, in one request to APNs (no per-device fan-out), and stores the finished
    /// notification with the request's outcome (one ``DeliveryOutcome`` under APNs), so that
    /// ``notification(id:)`` returns it.
    ///
    /// The payload is checked as a Live Activity push (its `apns-push-type` is
    /// `liveactivity` unless it says so itself); a broadcast updates or ends activities, it
    /// cannot start one. `apns-expiration` defaults to 0 (no storage).
    ///
    /// - Throws: ``HeraldError`` `400` for a payload that cannot be broadcast (nothing is sent
    ///   or stored), `503` when the hub has no APNs credentials.
    public func broadcast(
        _ payload: PlatformPayload, toChannel channelID: String, options: SendRequest.Options = .init()
    ) async throws
        -> NotificationRecord
    {
        guard payload.platform == .apns else { throw HeraldError.badRequest("a broadcast channel is APNs': send an apple payload") }
        guard !channelID.isEmpty, Data(base64Encoded: channelID) != nil else {
            throw HeraldError.badRequest("apns-channel-id must be a channel id as APNs gave it (base64)")
        }
        var payload = try payload.applying(options)
        if !payload.headers.contains(where: { $0.name.lowercased() == "apns-push-type" }) {
            payload.headers.append(.init(name: "apns-push-type", value: "liveactivity"))
        }
        guard payload.isLiveActivity else {
            throw HeraldError.badRequest("a broadcast is a Live Activity push: apns-push-type liveactivity")
        }
        try payload.checkLiveActivity(broadcast: true)
        if (try? JSONValue(parsing: payload.body))?["aps"]?["event"] == .string("start") {
            throw HeraldError.badRequest("a broadcast updates or ends activities; it cannot start one (aps.event start)")
        }
        let provider = try apnsProvider()
        guard let notification = try Self.prepareForSending([payload])[.apns] else {
            throw HeraldError.badRequest("the payload is not an APNs notification")
        }
        let started = Date()
        var record = NotificationRecord(
            id: Self.newNotificationID(), tagExpression: nil, payloads: [payload], state: .processing, broadcastChannel: channelID,
            enqueuedAt: started, startedAt: started)
        let result = await provider.broadcast(notification, channelID: channelID)
        record.counts.add(result.outcome, platform: .apns)
        record.state = .completed
        record.endedAt = Date()
        try await store.enqueueNotification(record)
        signal.ring(record.id)
        logger.debug(
            "Broadcast to an APNs channel",
            metadata: ["herald.notification.id": "\(record.id)", "herald.outcome": "\(result.outcome.rawValue)"])
        return record
    }

    /// The broadcasts sent to the channel `channelID` (each with its outcome), newest first,
    /// a page at a time: strictly older than `cursor`, at most `limit` (capped as the
    /// console's pages are).
    public func broadcasts(
        toChannel channelID: String, before cursor: NotificationHistoryCursor? = nil, limit: Int
    ) async throws
        -> [NotificationRecord]
    {
        try await store.broadcasts(toChannel: channelID, before: cursor, limit: Self.consolePageSize(limit))
    }
}
