import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldEmulator
import NIOCore
import NIOHTTP1
import Testing

extension APNsHarness {
    /// A request to the broadcast channel management API, with the harness's provider token.
    func manage(
        _ method: HTTPMethod, _ path: String, channel: String? = nil, body: String? = nil,
        headers: [(String, String)] = [], authorized: Bool = true
    ) async throws -> TestResponse {
        var all = headers
        if authorized { all.append(("authorization", "bearer " + defaultJWT)) }
        if let channel { all.append(("apns-channel-id", channel)) }
        return try await client.send(method, try #require(emulator.broadcastBaseURL) + path, headers: all, body: body)
    }

    func createChannel(policy: Int = 0) async throws -> String {
        let response = try await manage(
            .POST, "/1/apps/\(Self.topic)/channels", body: #"{"message-storage-policy": \#(policy), "push-type": "LiveActivity"}"#)
        #expect(response.status == 201, "\(response.bodyString)")
        return try #require(response.headers.first(name: "apns-channel-id"))
    }

    /// `POST /4/broadcasts/apps/{bundle id}` with `aps` and the headers a broadcast needs (overridable).
    func broadcast(
        channel: String?, aps: [String: Any], headers: [(String, String)]? = nil, authorization: String?? = nil
    ) async throws -> TestResponse {
        let body = String(decoding: try JSONSerialization.data(withJSONObject: ["aps": aps], options: [.sortedKeys]), as: UTF8.self)
        var all = headers ?? [("apns-push-type", "liveactivity"), ("apns-priority", "10"), ("apns-expiration", "0")]
        if let channel { all.append(("apns-channel-id", channel)) }
        return try await send(
            token: "", payload: body, headers: all, authorization: authorization, path: "/4/broadcasts/apps/\(Self.topic)")
    }
}

@Suite("APNs emulator: broadcast channels")
struct BroadcastChannelTests {
    @Test("channels are created, read, listed and deleted on the management port")
    func channelLifecycle() async throws {
        try await APNsHarness.with { apns in
            let port = try #require(apns.emulator.broadcastPort)
            #expect(port != apns.emulator.port)
            let requestID = "2288cf3f-70d8-46a6-97d7-dd5d00867127"
            let created = try await apns.manage(
                .POST, "/1/apps/\(APNsHarness.topic)/channels", body: #"{"message-storage-policy": 1, "push-type": "LiveActivity"}"#,
                headers: [("apns-request-id", requestID)])
            #expect(created.status == 201)
            #expect(created.version == .http2)
            #expect(created.headers.first(name: "apns-request-id") == requestID)
            #expect(created.body.readableBytes == 0)
            let first = try #require(created.headers.first(name: "apns-channel-id"))
            #expect(Data(base64Encoded: first)?.count == 16)
            let second = try await apns.createChannel(policy: 0)

            let read = try await apns.manage(.GET, "/1/apps/\(APNsHarness.topic)/channels", channel: first)
            #expect(read.status == 200)
            #expect(try read.json()["message-storage-policy"] as? Int == 1)
            #expect(try read.json()["push-type"] as? String == "LiveActivity")
            #expect(UUID(uuidString: read.headers.first(name: "apns-request-id") ?? "") != nil)

            let listed = try await apns.manage(.GET, "/1/apps/\(APNsHarness.topic)/all-channels")
            #expect(listed.status == 200)
            #expect(Set(try listed.json()["channels"] as? [String] ?? []) == [first, second])
            let otherApp = try await apns.manage(.GET, "/1/apps/com.example.other/all-channels")
            #expect(try otherApp.json()["channels"] as? [String] == [])

            let deleted = try await apns.manage(.DELETE, "/1/apps/\(APNsHarness.topic)/channels", channel: first)
            #expect(deleted.status == 204)
            let gone = try await apns.manage(.GET, "/1/apps/\(APNsHarness.topic)/channels", channel: first)
            #expect(gone.status == 400)
            #expect(try apns.reason(of: gone) == "ChannelNotRegistered")
            let again = try await apns.manage(.DELETE, "/1/apps/\(APNsHarness.topic)/channels", channel: first)
            #expect(try apns.reason(of: again) == "ChannelNotRegistered")
            let remaining = try await apns.manage(.GET, "/1/apps/\(APNsHarness.topic)/all-channels")
            #expect(try remaining.json()["channels"] as? [String] == [second])
        }
    }

    @Test("channel management refuses what APNs refuses, with its reasons")
    func managementErrors() async throws {
        try await APNsHarness.with(configure: {
            $0.topics = [APNsHarness.topic]
            $0.channelLimit = 2
        }) { apns in
            let channels = "/1/apps/\(APNsHarness.topic)/channels"
            let cases: [(String, HTTPMethod, String, String?, String?, Int, String)] = [
                ("no channel id", .GET, channels, nil, nil, 400, "MissingChannelId"),
                ("channel id not base64", .GET, channels, "not base64!", nil, 400, "BadChannelId"),
                ("unknown channel", .DELETE, channels, "dHN0LXNyY2gtY2hubA==", nil, 400, "ChannelNotRegistered"),
                ("policy 2", .POST, channels, nil, #"{"message-storage-policy": 2, "push-type": "LiveActivity"}"#, 400, "BadRequestParams"),
                ("no policy", .POST, channels, nil, #"{"push-type": "LiveActivity"}"#, 400, "BadRequestParams"),
                ("an unknown field", .POST, channels, nil, #"{"message-storage-policy": 0, "push-type": "LiveActivity", "x": 1}"#, 400, "BadRequestParams"),
                ("no push type", .POST, channels, nil, #"{"message-storage-policy": 0}"#, 400, "MissingPushType"),
                ("another push type", .POST, channels, nil, #"{"message-storage-policy": 0, "push-type": "alert"}"#, 400, "InvalidPushType"),
                ("not JSON", .POST, channels, nil, "policy=0", 400, "BadRequestPayload"),
                ("another app's bundle id", .GET, "/1/apps/com.example.other/all-channels", nil, nil, 403, "TopicMismatch"),
                ("the channel id in the path", .GET, channels + "/dHN0LXNyY2gtY2hubA==", nil, nil, 404, "BadPath"),
                ("another version", .GET, "/2/apps/\(APNsHarness.topic)/all-channels", nil, nil, 404, "BadPath"),
                ("PUT", .PUT, channels, nil, nil, 405, "MethodNotAllowed"),
                ("POST to the list", .POST, "/1/apps/\(APNsHarness.topic)/all-channels", nil, "{}", 405, "MethodNotAllowed"),
            ]
            for (name, method, path, channel, body, status, reason) in cases {
                let response = try await apns.manage(method, path, channel: channel, body: body)
                #expect(response.status == status, "\(name): \(response.bodyString)")
                #expect(try apns.reason(of: response) == reason, "\(name)")
                #expect(response.headers.first(name: "apns-request-id") != nil, "\(name)")
            }
            let anonymous = try await apns.manage(.GET, "/1/apps/\(APNsHarness.topic)/all-channels", authorized: false)
            #expect(anonymous.status == 403)
            #expect(try apns.reason(of: anonymous) == "MissingProviderToken")

            _ = try await apns.createChannel()
            _ = try await apns.createChannel()
            let full = try await apns.manage(.POST, channels, body: #"{"message-storage-policy": 0, "push-type": "LiveActivity"}"#)
            #expect(full.status == 400)
            #expect(try apns.reason(of: full) == "CannotCreateChannelConfig")
        }
    }

    @Test("one broadcast reaches the 1,000 activities listening on its channel")
    func broadcastToAThousand() async throws {
        try await APNsHarness.with { apns in
            let channel = try await apns.createChannel()
            let other = try await apns.createChannel()
            var listeners: [String] = []
            for _ in 0..<1000 {
                let activity = try apns.emulator.startActivity(
                    topic: APNsHarness.topic, attributesType: "MatchAttributes", contentState: .object([("home", .number(0))]),
                    channelID: channel)
                #expect(activity.updateToken == nil)
                listeners.append(activity.id)
            }
            let bystander = try apns.emulator.startActivity(topic: APNsHarness.topic, attributesType: "MatchAttributes", channelID: other)

            let requestID = "eabeae54-14a8-11e5-b60b-1697f925ec7b"
            let response = try await apns.broadcast(
                channel: channel, aps: apns.updateAPS(home: 3),
                headers: [
                    ("apns-push-type", "liveactivity"), ("apns-priority", "10"), ("apns-expiration", "0"),
                    ("apns-request-id", requestID),
                ])
            #expect(response.status == 200, "\(response.bodyString)")
            #expect(response.headers.first(name: "apns-request-id") == requestID)
            #expect(UUID(uuidString: response.headers.first(name: "apns-unique-id") ?? "") != nil)
            #expect(response.body.readableBytes == 0)

            for id in listeners {
                let activity = try #require(apns.emulator.activity(id: id))
                #expect(activity.contentState?["home"] == .number(3))
                #expect(activity.received.count == 1)
                #expect(activity.received.first?.headers["apns-channel-id"] == channel)
            }
            #expect(apns.emulator.activity(id: bystander.id)?.received.isEmpty == true)
            #expect(apns.emulator.acceptedCount == 1)

            // An end on the channel ends them all.
            let end = try await apns.broadcast(channel: channel, aps: apns.updateAPS(home: 4, event: "end"))
            #expect(end.status == 200)
            #expect(listeners.allSatisfy { apns.emulator.activity(id: $0)?.state == .ended })
        }
    }

    @Test("broadcasts are refused with APNs' reasons")
    func broadcastErrors() async throws {
        try await APNsHarness.with { apns in
            let noStorage = try await apns.createChannel(policy: 0)
            let stored = try await apns.createChannel(policy: 1)
            let update = apns.updateAPS(home: 1)
            let required = [("apns-push-type", "liveactivity"), ("apns-priority", "10"), ("apns-expiration", "0")]
            let cases: [(String, String?, [String: Any], [(String, String)], Int, String)] = [
                ("no channel", nil, update, required, 400, "MissingChannelId"),
                ("channel not base64", "%%%", update, required, 400, "BadChannelId"),
                ("unknown channel", "dHN0LXNyY2gtY2hubA==", update, required, 400, "ChannelNotRegistered"),
                ("no push type", noStorage, update, [("apns-priority", "10"), ("apns-expiration", "0")], 400, "MissingPushType"),
                (
                    "alert push type", noStorage, update, [("apns-push-type", "alert"), ("apns-priority", "10"), ("apns-expiration", "0")], 400,
                    "InvalidPushType"
                ),
                ("no priority", noStorage, update, [("apns-push-type", "liveactivity"), ("apns-expiration", "0")], 400, "BadPriority"),
                ("no expiration", noStorage, update, [("apns-push-type", "liveactivity"), ("apns-priority", "5")], 400, "BadExpirationDate"),
                (
                    "stored push on a channel that stores none", noStorage, update,
                    [("apns-push-type", "liveactivity"), ("apns-priority", "5"), ("apns-expiration", "1750003600")], 400, "BadExpirationDate"
                ),
                ("a topic with the liveactivity suffix", noStorage, update, required + [("apns-topic", APNsHarness.liveActivityTopic)], 400, "TopicDisallowed"),
                ("a start", noStorage, apns.startAPS(), required, 400, "BadRequestParams"),
                (
                    "content state over 5 KB", noStorage, apns.updateAPS(home: 1, extra: ["content-state": ["t": String(repeating: "x", count: 5200)]]),
                    required, 413, "PayloadTooLarge"
                ),
            ]
            for (name, channel, aps, headers, status, reason) in cases {
                let response = try await apns.broadcast(channel: channel, aps: aps, headers: headers)
                #expect(response.status == status, "\(name): \(response.bodyString)")
                #expect(try apns.reason(of: response) == reason, "\(name)")
                #expect(response.headers.first(name: "apns-request-id") != nil, "\(name)")
            }
            // A broadcast up to 5 KB passes where a device push would not; a stored channel takes an expiration.
            let large = try await apns.broadcast(
                channel: stored, aps: apns.updateAPS(home: 1, extra: ["content-state": ["t": String(repeating: "x", count: 4500)]]),
                headers: [("apns-push-type", "liveactivity"), ("apns-priority", "5"), ("apns-expiration", "1750003600")])
            #expect(large.status == 200, "\(large.bodyString)")
            let anonymous = try await apns.broadcast(channel: stored, aps: update, headers: required, authorization: .some(nil))
            #expect(anonymous.status == 403)
            #expect(try apns.reason(of: anonymous) == "MissingProviderToken")
            #expect(apns.emulator.acceptedCount == 1)
        }
    }

    @Test("a push-to-start with input-push-channel starts an activity that broadcasts then reach")
    func pushToStartOnAChannel() async throws {
        try await APNsHarness.with { apns in
            let channel = try await apns.createChannel()
            let startToken = apns.emulator.registerPushToStartToken(topic: APNsHarness.topic, attributesType: "MatchAttributes")
            let started = try await apns.sendLiveActivity(token: startToken, aps: apns.startAPS(extra: ["input-push-channel": channel]))
            #expect(started.status == 200, "\(started.bodyString)")
            let activity = try #require(apns.emulator.activities(token: startToken).first)
            #expect(activity.channelID == channel)
            #expect(activity.updateToken == nil)
            let unknown = try await apns.sendLiveActivity(
                token: startToken, aps: apns.startAPS(extra: ["input-push-channel": "dHN0LXNyY2gtY2hubA=="]))
            #expect(try apns.reason(of: unknown) == "ChannelNotRegistered")

            #expect(try await apns.broadcast(channel: channel, aps: apns.updateAPS(home: 2)).status == 200)
            #expect(apns.emulator.activity(id: activity.id)?.contentState?["home"] == .number(2))

            // An app-started activity can join the channel later, through the control API too.
            let late = try apns.emulator.startActivity(topic: APNsHarness.topic, attributesType: "MatchAttributes")
            let joined = try await apns.client.send(
                .POST, apns.emulator.baseURL + "/_emulator/activities/\(late.id)/channel", body: #"{"channel":"\#(channel)"}"#)
            #expect(joined.status == 200, "\(joined.bodyString)")
            #expect(try await apns.broadcast(channel: channel, aps: apns.updateAPS(home: 5)).status == 200)
            #expect(apns.emulator.activity(id: late.id)?.contentState?["home"] == .number(5))
            #expect(apns.emulator.activity(id: activity.id)?.contentState?["home"] == .number(5))
        }
    }
}
