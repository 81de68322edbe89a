public import Foundation
import HeraldCore

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A hub's APNs broadcast channels (Herald's extension of the hub API): channels are created,
/// listed and deleted at APNs with the hub's credentials, and one broadcast reaches every
/// device subscribed to a channel.
extension NotificationHubClient {
    /// A broadcast channel as the hub reports it.
    public struct BroadcastChannel: Sendable, Hashable, Decodable {
        /// The channel's id as APNs gave it (base64): what an app subscribes its activities to.
        public var id: String
        /// 0: APNs stores no message for an offline device; 1: it stores the most recent one.
        public var messageStoragePolicy: Int
    }

    /// A broadcast as a channel's history lists it.
    public struct ChannelBroadcast: Sendable, Hashable, Decodable {
        /// The notification's id, for ``NotificationHubClient/notificationDetails(id:)``.
        public var id: String
        /// `Completed` once APNs answered.
        public var state: String
        public var enqueuedTime: Date
        public var endTime: Date?
        /// What APNs answered the one request, as a notification's outcomes name it
        /// (`Success`, `InvalidNotificationFormat`, …).
        public var outcome: String?
    }

    /// Creates a broadcast channel. Needs the Manage right.
    ///
    /// - Parameter messageStoragePolicy: 0 (no storage) or 1 (the most recent message).
    public func createBroadcastChannel(messageStoragePolicy: Int = 0) async throws -> BroadcastChannel {
        let body = Data(#"{"messageStoragePolicy":\#(messageStoragePolicy)}"#.utf8)
        let answer = try await perform(
            makeRequest("POST", path: ["broadcastchannels"], body: body, contentType: "application/json"), accepted: [201])
        return try JSONDecoder().decode(BroadcastChannel.self, from: answer.data)
    }

    /// The ids of the hub's broadcast channels. Needs the Manage right.
    public func broadcastChannelIDs() async throws -> [String] {
        struct List: Decodable { var channels: [String] }
        let answer = try await perform(makeRequest("GET", path: ["broadcastchannels"]), accepted: [200])
        return try JSONDecoder().decode(List.self, from: answer.data).channels
    }

    /// The channel `id`; `HeraldError` `notFound` when APNs does not know it. Needs the Manage right.
    public func broadcastChannel(id: String) async throws -> BroadcastChannel {
        let answer = try await perform(makeRequest("GET", path: ["broadcastchannels", id]), accepted: [200])
        return try JSONDecoder().decode(BroadcastChannel.self, from: answer.data)
    }

    /// Deletes the channel `id`; `HeraldError` `notFound` when APNs does not know it. Needs
    /// the Manage right.
    public func deleteBroadcastChannel(id: String) async throws {
        try await perform(makeRequest("DELETE", path: ["broadcastchannels", id]), accepted: [204])
    }

    /// One page of the broadcasts sent to channel `id`, newest first, each with what APNs
    /// answered. Pass the page's ``Page/continuationToken`` to read older ones. Needs the Send
    /// right.
    public func broadcasts(toChannel id: String, top: Int = 100, continuationToken: String? = nil) async throws -> Page<ChannelBroadcast> {
        struct List: Decodable { var messages: [ChannelBroadcast] }
        let query = try Self.pageQuery(top: top, continuationToken: continuationToken)
        let (data, response) = try await perform(makeRequest("GET", path: ["broadcastchannels", id, "messages"], query: query), accepted: [200])
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return Page(
            items: try decoder.decode(List.self, from: data).messages,
            continuationToken: response.value(forHTTPHeaderField: "X-MS-ContinuationToken"))
    }

    /// Sends a Live Activity update or end to every device subscribed to channel `channelID`,
    /// in one request to APNs. Needs the Send right.
    ///
    /// ```swift
    /// let channel = try await hub.createBroadcastChannel()
    /// let id = try await hub.broadcast(
    ///     .liveActivity(event: .update, contentState: .object([("home", .number(1))])), channelID: channel.id)
    /// ```
    ///
    /// - Returns: the notification's id, for ``notificationDetails(id:)``.
    @discardableResult
    public func broadcast(_ notification: HubNotification, channelID: String) async throws -> String {
        guard notification.format == .apple else {
            throw HeraldError.badRequest("a broadcast channel is APNs': broadcast an apple notification")
        }
        var request = try sendRequest(notification, path: ["messages"])
        request.setValue(channelID, forHTTPHeaderField: "apns-channel-id")
        let answer = try await perform(request, accepted: [201])
        return try Self.locationID(answer.response, what: "broadcast")
    }
}
