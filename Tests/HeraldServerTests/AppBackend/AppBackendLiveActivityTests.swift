import Foundation
import HeraldClient
import HeraldCore
import HeraldEmulator
import HeraldSQLite
import HeraldServer
import HeraldStore
import HummingbirdTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The app backend's Live Activities: the app registers an activity's update token under the
/// activity's id, and `POST /api/notifications/liveactivity?to_tag=&activity=` updates and
/// ends it; the user's alerts do not go to it.
@Suite struct AppBackendLiveActivityTests {
    /// The app backend of a test server with demo authentication (user name = password).
    struct Backend {
        let herald: TestHerald
        let base: String

        /// A request as `user`: its status and body.
        func call(_ method: String, _ path: String, user: String = "alice", body: String?) async throws -> (Int, String) {
            let (status, data) = try await NotifyUsersTests.call(base, method, path, user: user, body: body)
            return (status, String(decoding: data, as: UTF8.self))
        }

        /// Registers `handle` for alice with `body`, under an id the backend issues for it.
        func register(_ body: String, handle: String) async throws -> (Int, String) {
            let (_, idData) = try await call("POST", "/api/register?handle=\(handle)", body: nil)
            let id = try JSONDecoder().decode(String.self, from: Data(idData.utf8))
            return try await call("PUT", "/api/register/\(id)", body: body)
        }
    }

    static func withBackend(_ body: @Sendable (Backend) async throws -> Void) async throws {
        try await TestHerald.withHerald(configure: { $0.insecureDemoAuth = true }) { herald in
            try await herald.application().test(.live) { client in
                try await body(Backend(herald: herald, base: "http://127.0.0.1:\(try #require(client.port))"))
            }
        }
    }

    @Test func aUsersActivityIsUpdatedAndEndedByItsID() async throws {
        try await Self.withBackend { backend in
            let herald = backend.herald
            let phone = herald.apns.registerDevice(topic: TestHerald.topic)
            #expect(try await backend.register(#"{"Platform":"apns","Handle":"\#(phone)","Tags":[]}"#, handle: phone).0 == 200)
            let activity = try herald.apns.startActivity(topic: TestHerald.topic, attributesType: "RideAttributes")
            let token = try #require(activity.updateToken)
            let (registered, view) = try await backend.register(#"{"Platform":"apns","Handle":"\#(token)","LiveActivity":"ride-7"}"#, handle: token)
            #expect(registered == 200, "\(view)")
            #expect(view.contains("liveactivity:alice:ride-7"), "\(view)")
            #expect(view.contains(#""kind":"liveActivity""#), "\(view)")

            let now = Int(Date().timeIntervalSince1970)
            let (updated, summary) = try await backend.call(
                "POST", "/api/notifications/liveactivity?to_tag=alice&activity=ride-7", user: "bob",
                body: #"{"event":"update","content-state":{"minutes":4},"stale-date":\#(now + 300)}"#)
            #expect(updated == 200, "\(summary)")
            #expect(summary.contains(#""success":1"#), "\(summary)")
            var current = try #require(herald.apns.activity(id: activity.id))
            #expect(current.contentState?["minutes"] == .number(4))
            #expect(current.staleDate == Date(timeIntervalSince1970: TimeInterval(now + 300)))
            #expect(herald.apns.notifications(for: token).last?.headers["apns-topic"] == TestHerald.topic + ".push-type.liveactivity")

            let (ended, _) = try await backend.call(
                "POST", "/api/notifications/liveactivity?to_tag=alice&activity=ride-7",
                body: #"{"event":"end","timestamp":\#(now + 1),"content-state":{"minutes":0},"dismissal-date":\#(now + 60)}"#)
            #expect(ended == 200)
            current = try #require(herald.apns.activity(id: activity.id))
            #expect(current.state == .ended)
            #expect(current.dismissalDate == Date(timeIntervalSince1970: TimeInterval(now + 60)))

            // Alerts to alice reach her phone, not her activity's token.
            let (alerted, _) = try await backend.call("POST", "/api/notifications?to_tag=alice", user: "bob", body: #""Hi""#)
            #expect(alerted == 200)
            #expect(herald.apns.notifications(for: phone).count == 1)
            #expect(herald.apns.notifications(for: token).count == 2)

            // Refused, naming what is wrong; nothing sent.
            for (path, body, words) in [
                ("to_tag=alice&activity=ride-7", #"{"event":"update"}"#, "aps.content-state"),
                ("to_tag=alice&activity=ride-7", #"{"event":"start","content-state":{}}"#, "push-to-start"),
                ("to_tag=alice", #"{"event":"end"}"#, "activity is required"),
                ("to_tag=alice&activity=ride-7&pns=fcm", #"{"event":"end"}"#, "APNs only"),
            ] {
                let (status, text) = try await backend.call("POST", "/api/notifications/liveactivity?\(path)", body: body)
                #expect(status == 400, "\(path): \(text)")
                #expect(text.contains(words), "\(path): \(text)")
            }
            let (claimed, _) = try await backend.register(#"{"Platform":"apns","Handle":"\#(phone)","Tags":["liveactivity:bob:x"]}"#, handle: phone)
            #expect(claimed == 403)
            #expect(herald.apns.notifications(for: token).count == 2)
        }
    }

    @Test func aUsersPushToStartTokenStartsActivitiesOfItsTypeOnly() async throws {
        try await Self.withBackend { backend in
            let herald = backend.herald
            let phone = herald.apns.registerDevice(topic: TestHerald.topic)
            #expect(try await backend.register(#"{"Platform":"apns","Handle":"\#(phone)","Tags":["fans-lions"]}"#, handle: phone).0 == 200)
            let rides = herald.apns.registerPushToStartToken(topic: TestHerald.topic, attributesType: "RideAttributes")
            let (registered, view) = try await backend.register(
                #"{"Platform":"apns","Handle":"\#(rides)","PushToStart":"RideAttributes","Tags":["fans-lions"]}"#, handle: rides)
            #expect(registered == 200, "\(view)")
            #expect(view.contains(#""kind":"pushToStart""#) && view.contains(#""activityType":"RideAttributes""#), "\(view)")
            #expect(view.contains("username:alice") && view.contains("fans-lions"), "\(view)")
            let matches = herald.apns.registerPushToStartToken(topic: TestHerald.topic, attributesType: "MatchAttributes")
            #expect(try await backend.register(#"{"Platform":"apns","Handle":"\#(matches)","PushToStart":"MatchAttributes"}"#, handle: matches).0 == 200)

            // bob starts a ride on alice's devices: only her RideAttributes token gets it.
            let (started, summary) = try await backend.call(
                "POST", "/api/notifications/liveactivity?to_tag=alice", user: "bob",
                body:
                    #"{"event":"start","content-state":{"minutes":9},"attributes-type":"RideAttributes","attributes":{"driver":"Ann"},"alert":{"title":"Your ride"}}"#
            )
            #expect(started == 200, "\(summary)")
            #expect(summary.contains(#""success":1"#), "\(summary)")
            let ride = try #require(herald.apns.activities(token: rides).first)
            #expect(ride.attributes?["driver"] == .string("Ann"))
            #expect(herald.apns.activities(token: matches).isEmpty)
            #expect(herald.apns.notifications(for: phone).isEmpty)

            // alice's alerts, and a send to the fans, reach her phone and none of the tokens.
            #expect(try await backend.call("POST", "/api/notifications?to_tag=alice", user: "bob", body: #""Hi""#).0 == 200)
            #expect(herald.apns.notifications(for: phone).count == 1)
            #expect(herald.apns.notifications(for: rides).count == 1)
            #expect(herald.apns.notifications(for: matches).isEmpty)

            // Refused, naming what is wrong; nothing written.
            for (body, words) in [
                (#"{"Platform":"fcm","Handle":"fcm-1","PushToStart":"RideAttributes"}"#, "PushToStart goes with Platform apns"),
                (#"{"Platform":"apns","Handle":"\#(rides)","PushToStart":"Ride Attributes"}"#, "PushToStart:"),
                (#"{"Platform":"apns","Handle":"\#(rides)","PushToStart":7}"#, "PushToStart is the activity type"),
                (#"{"Platform":"apns","Handle":"\#(rides)","PushToStart":"A","LiveActivity":"x"}"#, "not both"),
            ] {
                let (status, text) = try await backend.register(body, handle: "x")
                #expect(status == 400, "\(body): \(text)")
                #expect(text.contains(words), "\(body): \(text)")
            }
            let (startWithID, text) = try await backend.call(
                "POST", "/api/notifications/liveactivity?to_tag=alice&activity=ride-7",
                body: #"{"event":"start","content-state":{},"attributes-type":"RideAttributes","attributes":{},"alert":"x"}"#)
            #expect(startWithID == 400 && text.contains("leave out activity"), "\(text)")
        }
    }
}

/// The app SDK's Live Activities: the device registers its push-to-start and update tokens,
/// and another user starts, updates and ends an activity on it.
@Suite struct HeraldClientLiveActivityTests {
    static func bytes(_ hex: String) -> Data {
        var data = Data()
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            data.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return data
    }

    @Test func theSDKRegistersActivityTokensAndStartsUpdatesAndEndsAnActivity() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.live) { client in
                let base = URL(string: "http://127.0.0.1:\(try #require(client.port))")!
                let alice = try await signedUpClient("alice", at: base)
                let bob = try await signedUpClient("bob", at: base)
                let startToken = herald.apns.registerPushToStartToken(topic: TestHerald.topic, attributesType: "RideAttributes")
                let startID = try await alice.registerPushToStart(token: Self.bytes(startToken), activityType: "RideAttributes")
                #expect(try await herald.store.registration(id: startID)?.handleKind == .pushToStart(activityType: "RideAttributes"))

                let started = try await bob.startLiveActivity(
                    user: "alice",
                    aps: .object([
                        ("event", .string("start")), ("content-state", .object([("minutes", .number(9))])),
                        ("attributes-type", .string("RideAttributes")), ("attributes", .object([("driver", .string("Ann"))])),
                        ("alert", .object([("title", .string("Your ride"))])),
                    ]))
                #expect(started.success == 1)
                let activity = try #require(herald.apns.activities(token: startToken).first)
                let updateToken = try #require(activity.updateToken)
                let updateID = try await alice.registerLiveActivity(updateToken: Self.bytes(updateToken), activityID: "ride-7")
                #expect(try await herald.store.registration(id: updateID)?.handleKind == .liveActivity)

                let now = Date().timeIntervalSince1970.rounded(.down)
                _ = try await bob.updateLiveActivity(
                    user: "alice", activityID: "ride-7",
                    aps: .object([("event", .string("update")), ("timestamp", .number(now + 1)), ("content-state", .object([("minutes", .number(3))]))]))
                #expect(herald.apns.activity(id: activity.id)?.contentState?["minutes"] == .number(3))
                _ = try await bob.updateLiveActivity(
                    user: "alice", activityID: "ride-7", aps: .object([("event", .string("end")), ("timestamp", .number(now + 2))]))
                #expect(herald.apns.activity(id: activity.id)?.state == .ended)

                try await alice.unregisterActivityToken(registrationID: updateID)
                #expect(try await herald.store.registration(id: updateID) == nil)
            }
        }
    }
}
