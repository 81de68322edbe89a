import Foundation
import HTTPTypes
import HeraldCore
import HeraldHub
import HeraldPush
import HeraldStore
import Hummingbird
import Logging

/// A hub's APNs broadcast channels (Herald's extension of the hub API, Manage right),
/// forwarded to the APNs broadcast management endpoint with the hub's APNs credentials:
///
/// - `POST /{hub}/broadcastchannels` `{"messageStoragePolicy": 0 or 1}` → `201`
///   `{"id", "messageStoragePolicy"}` with its `Location`;
/// - `GET /{hub}/broadcastchannels` → `{"channels": ["<id>", …]}`;
/// - `GET /{hub}/broadcastchannels/{id}` → `{"id", "messageStoragePolicy"}`;
/// - `DELETE /{hub}/broadcastchannels/{id}` → `204`;
/// - `GET /{hub}/broadcastchannels/{id}/messages?$top=&continuationtoken=` (Send right) → the
///   broadcasts sent to it, newest first, each with its outcome:
///   `{"messages": [{"id", "location", "state", "enqueuedTime", "endTime", "outcome"}, …]}`,
///   and the next page's token in `X-MS-ContinuationToken` while there may be more.
///
/// A channel id is the base64 text APNs gives; in a path, percent-encoded or as base64url.
/// A broadcast is a send: `POST /{hub}/messages` with `apns-channel-id`.
extension HubAPIController {
    struct BroadcastChannelView: Encodable {
        var id: String
        var messageStoragePolicy: Int
    }

    struct BroadcastChannelList: Encodable {
        var channels: [String]
    }

    /// A broadcast as a channel's history lists it.
    struct ChannelBroadcastView: Encodable {
        var id: String
        var location: String
        var state: String
        var enqueuedTime: Date
        var endTime: Date?
        /// What APNs answered the one request, as a notification's outcomes name it.
        var outcome: String?
    }

    struct ChannelBroadcastList: Encodable {
        var messages: [ChannelBroadcastView]
    }

    @Sendable func createBroadcastChannel(request: Request, context: AppRequestContext) async throws -> Response {
        let (name, engine) = try await authorize(request, context: context, right: .manage)
        let body = try await request.bodyData(limit: 1024)
        var policy = 0
        if !body.isEmpty {
            guard let json = try? JSONValue(parsing: body), case .object = json,
                let value = json["messageStoragePolicy"]
            else {
                throw HeraldError.badRequest(#"send {"messageStoragePolicy": 0} (no storage) or {"messageStoragePolicy": 1} (the most recent message)"#)
            }
            guard case .number(let number) = value, number == 0 || number == 1 else {
                throw HeraldError.badRequest("messageStoragePolicy is 0 (no storage) or 1 (the most recent message)")
            }
            policy = Int(number)
        }
        let id = try await engine.apnsProvider().createChannel(messageStoragePolicy: policy)
        context.logger.info("Broadcast channel created", metadata: ["herald.hub": "\(name)"])
        var headers = HTTPFields()
        headers[.location] = "\(hubURL(request, hub: name))/broadcastchannels/\(BroadcastChannelSegment.segment(id))"
        return try .json(BroadcastChannelView(id: id, messageStoragePolicy: policy), status: .created, headers: headers)
    }

    @Sendable func listBroadcastChannels(request: Request, context: AppRequestContext) async throws -> Response {
        let (_, engine) = try await authorize(request, context: context, right: .manage)
        return try .json(BroadcastChannelList(channels: try await engine.apnsProvider().channelIDs()))
    }

    @Sendable func getBroadcastChannel(request: Request, context: AppRequestContext) async throws -> Response {
        let (_, engine) = try await authorize(request, context: context, right: .manage)
        let id = try Self.channelID(context)
        let policy = try await engine.apnsProvider().channelStoragePolicy(id: id)
        return try .json(BroadcastChannelView(id: id, messageStoragePolicy: policy))
    }

    @Sendable func deleteBroadcastChannel(request: Request, context: AppRequestContext) async throws -> Response {
        let (name, engine) = try await authorize(request, context: context, right: .manage)
        try await engine.apnsProvider().deleteChannel(id: try Self.channelID(context))
        context.logger.info("Broadcast channel deleted", metadata: ["herald.hub": "\(name)"])
        return Response(status: .noContent)
    }

    @Sendable func listChannelBroadcasts(request: Request, context: AppRequestContext) async throws -> Response {
        let (name, engine) = try await authorize(request, context: context, right: .send)
        let id = try Self.channelID(context)
        let top = try Self.top(request)
        let cursor = try request.formQuery("continuationtoken").map { token in
            guard let cursor = NotificationHistoryCursor(token: token) else {
                throw HeraldError.badRequest("malformed continuationtoken: pass the X-MS-ContinuationToken of the previous page as it is")
            }
            return cursor
        }
        let page = try await engine.broadcasts(toChannel: id, before: cursor, limit: top)
        var headers = HTTPFields()
        if page.count == top, let last = page.last {
            headers[HTTPField.Name("X-MS-ContinuationToken")!] = NotificationHistoryCursor(after: last).token
        }
        let messages = page.map { record in
            ChannelBroadcastView(
                id: record.id, location: location(record.id, request: request, hub: name), state: record.state.rawValue,
                enqueuedTime: record.enqueuedAt, endTime: record.endedAt,
                outcome: record.broadcastOutcome?.rawValue)
        }
        return try .json(ChannelBroadcastList(messages: messages), headers: headers)
    }

    /// The `{id}` of the path as APNs writes it (see ``BroadcastChannelSegment``).
    static func channelID(_ context: AppRequestContext) throws -> String {
        try BroadcastChannelSegment.channelID(try pathParameter("id", context))
    }
}

/// A broadcast channel's id in a URL path: APNs' base64 text as base64url without padding,
/// and back (a percent-encoded base64 id is read too).
enum BroadcastChannelSegment {
    /// The channel id that a path segment names; `400` when it is not base64.
    static func channelID(_ segment: String) throws -> String {
        var id = segment.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        if !id.contains("="), id.utf8.count % 4 != 0 { id += String(repeating: "=", count: 4 - id.utf8.count % 4) }
        guard !id.isEmpty, Data(base64Encoded: id) != nil else {
            throw HeraldError.badRequest("a channel id is the base64 text APNs gave when the channel was created")
        }
        return id
    }

    /// A channel id as one path segment: base64url without padding.
    static func segment(_ id: String) -> String {
        id.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
}
