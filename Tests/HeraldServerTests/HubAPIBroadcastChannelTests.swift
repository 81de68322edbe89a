import Foundation
import HeraldCore
import HeraldEmulator
import HeraldServer
import Testing

/// A hub's APNs broadcast channels through the hub REST API (`/{hub}/broadcastchannels`,
/// Manage), forwarded to the emulator's broadcast management port with the hub's APNs
/// credentials, and a broadcast as one send with `apns-channel-id`: one request to APNs that
/// reaches every activity on the channel, recorded as a notification with its outcome.
@Suite struct HubAPIBroadcastChannelTests {
    static let hub = HubTestServer.hubName
    static let version = HubTestServer.apiVersion
    static let path = "/\(hub)/broadcastchannels"

    static func create(_ server: HubTestServer, _ body: String?, auth: WireAuth = .full) async throws -> WireResponse {
        try await server.wire(
            .POST, "\(path)?\(version)", headers: [("Content-Type", "application/json")], body: body.map { Data($0.utf8) }, auth: auth)
    }

    @Test func channelsAreCreatedListedReadAndDeleted() async throws {
        try await HubTestServer.withServer { server in
            let created = try await Self.create(server, #"{"messageStoragePolicy":1}"#)
            #expect(created.status == 201, "\(created.text)")
            let view = try #require(try created.json() as? [String: Any])
            let id = try #require(view["id"] as? String)
            #expect(view["messageStoragePolicy"] as? Int == 1)
            #expect(Data(base64Encoded: id) != nil)
            let location = try #require(created.header("Location"))
            let segment = try #require(location.split(separator: "/").last.map(String.init))
            #expect(!segment.contains("/") && !segment.contains("+") && !segment.contains("="))
            let unstoredResponse = try await Self.create(server, nil)
            let unstored = try #require(try unstoredResponse.json() as? [String: Any])
            let other = try #require(unstored["id"] as? String)
            #expect(unstored["messageStoragePolicy"] as? Int == 0)

            let list = try await server.wire(.GET, "\(Self.path)?\(Self.version)")
            #expect(list.status == 200, "\(list.text)")
            #expect(Set((try list.json() as? [String: Any])?["channels"] as? [String] ?? []) == [id, other])
            // Read by the Location's segment (base64url) and by the id percent-encoded.
            let read = try await server.wire(.GET, location)
            #expect((try read.json() as? [String: Any])?["messageStoragePolicy"] as? Int == 1, "\(read.text)")
            let encoded = try #require(other.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
            let readOther = try await server.wire(.GET, "\(Self.path)/\(encoded)?\(Self.version)")
            #expect((try readOther.json() as? [String: Any])?["id"] as? String == other, "\(readOther.text)")

            // Listen cannot manage channels; a bad policy is a 400 and creates nothing.
            expectHubError(try await Self.create(server, nil, auth: .listen), 403)
            expectHubError(try await server.wire(.GET, "\(Self.path)?\(Self.version)", auth: .listen), 403)
            #expect(expectHubError(try await Self.create(server, #"{"messageStoragePolicy":2}"#), 400).contains("messageStoragePolicy"))
            expectHubError(try await Self.create(server, "[1]"), 400)

            let deleted = try await server.wire(.DELETE, "\(Self.path)/\(encoded)?\(Self.version)")
            #expect(deleted.status == 204, "\(deleted.text)")
            expectHubError(try await server.wire(.GET, "\(Self.path)/\(encoded)?\(Self.version)"), 404)
            expectHubError(try await server.wire(.DELETE, "\(Self.path)/\(encoded)?\(Self.version)"), 404)
            let after = try await server.wire(.GET, "\(Self.path)?\(Self.version)")
            #expect((try after.json() as? [String: Any])?["channels"] as? [String] == [id])
        }
    }

    @Test func oneSendReachesAThousandActivitiesOnTheChannel() async throws {
        try await HubTestServer.withServer { server in
            let herald = server.herald
            let createdResponse = try await Self.create(server, #"{"messageStoragePolicy":0}"#)
            let created = try #require(try createdResponse.json() as? [String: Any])
            let channel = try #require(created["id"] as? String)
            let listeners = try (0..<1000).map { _ in
                try herald.apns.startActivity(
                    topic: TestHerald.topic, attributesType: "MatchAttributes", contentState: .object([("home", .number(0))]), channelID: channel
                ).id
            }
            let accepted = herald.apns.acceptedCount
            let now = Int(Date().timeIntervalSince1970)
            let update = #"{"aps":{"timestamp":\#(now),"event":"update","content-state":{"home":1}}}"#
            let sent = try await server.send(format: "apple", update, headers: [("apns-channel-id", channel), ("apns-push-type", "liveactivity")])
            let id = try server.acceptedID(sent)
            let details = try await server.finishedDetails(id)
            #expect(details.value("State") == "Completed")
            #expect(HubAPISendTests.count(details, "ApnsOutcomeCounts") == 1)
            #expect(herald.apns.acceptedCount == accepted + 1, "one request to APNs")
            for activity in listeners {
                #expect(herald.apns.activity(id: activity)?.contentState?["home"] == .number(1))
            }

            // What cannot be broadcast: a start, tags beside the channel, another format.
            let start = #"{"aps":{"timestamp":\#(now),"event":"start","content-state":{},"attributes-type":"A","attributes":{},"alert":"x"}}"#
            #expect(expectHubError(try await server.send(format: "apple", start, headers: [("apns-channel-id", channel)]), 400).contains("start"))
            expectHubError(try await server.send(format: "apple", update, tags: "fans", headers: [("apns-channel-id", channel)]), 400)
            expectHubError(try await server.send(format: "fcmv1", #"{"message":{}}"#, headers: [("apns-channel-id", channel)]), 400)
            #expect(herald.apns.acceptedCount == accepted + 1)

            // A broadcast may carry 5 KB (a device's Live Activity push, 4 KB); more is a 413.
            let padding = String(repeating: "x", count: 4800)
            let large = #"{"aps":{"timestamp":\#(now),"event":"update","content-state":{"home":2,"note":"\#(padding)"}}}"#
            let largeSent = try server.acceptedID(try await server.send(format: "apple", large, headers: [("apns-channel-id", channel)]))
            #expect(try await server.finishedDetails(largeSent).value("State") == "Completed")
            #expect(herald.apns.acceptedCount == accepted + 2)
            #expect(herald.apns.activity(id: listeners[0])?.contentState?["home"] == .number(2))
            let tooLarge = large.replacingOccurrences(of: padding, with: padding + String(repeating: "x", count: 400))
            #expect(expectHubError(try await server.send(format: "apple", tooLarge, headers: [("apns-channel-id", channel)]), 413).contains("5120"))

            // A channel APNs does not know: accepted, and its outcome says what APNs answered.
            let unknown = try server.acceptedID(
                try await server.send(format: "apple", update, headers: [("apns-channel-id", "dW5rbm93bg==")]))
            let failed = try await server.finishedDetails(unknown)
            #expect(HubAPISendTests.count(failed, "ApnsOutcomeCounts", "InvalidNotificationFormat") == 1)

            // Each channel's sends, newest first with APNs' answer, a page at a time.
            let segment = channel.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            let firstPage = try await server.wire(.GET, "\(Self.path)/\(segment)/messages?$top=1&\(Self.version)")
            #expect(firstPage.status == 200, "\(firstPage.text)")
            let newest = try #require((try firstPage.json() as? [String: Any])?["messages"] as? [[String: Any]])
            #expect(newest.map { $0["id"] as? String } == [largeSent])
            #expect(newest.first?["outcome"] as? String == "Success")
            #expect(newest.first?["state"] as? String == "Completed")
            #expect((newest.first?["location"] as? String)?.contains("/messages/\(largeSent)") == true)
            let token = try #require(firstPage.header("X-MS-ContinuationToken"))
            let rest = try await server.wire(.GET, "\(Self.path)/\(segment)/messages?$top=1&continuationtoken=\(token)&\(Self.version)")
            #expect(((try rest.json() as? [String: Any])?["messages"] as? [[String: Any]])?.map { $0["id"] as? String } == [id])
            let unknownSends = try await server.wire(.GET, "\(Self.path)/dW5rbm93bg/messages?\(Self.version)")
            let unknownPage = try #require((try unknownSends.json() as? [String: Any])?["messages"] as? [[String: Any]])
            #expect(unknownPage.map { $0["id"] as? String } == [unknown])
            #expect(unknownPage.first?["outcome"] as? String == "InvalidNotificationFormat")
            expectHubError(try await server.wire(.GET, "\(Self.path)/\(segment)/messages?continuationtoken=*&\(Self.version)"), 400)
            expectHubError(try await server.wire(.GET, "\(Self.path)/\(segment)/messages?\(Self.version)", auth: .listen), 403)
        }
    }
}
