import Foundation
import HeraldCore
import HeraldEmulator
import HeraldServer
import HummingbirdTesting
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The app backend's Live Activities: the app registers an activity's update token under the
/// activity's id, and `POST /api/notifications/liveactivity?to_tag=&activity=` updates and
/// ends it; the user's alerts do not go to it.
@Suite struct AppBackendLiveActivityTests {
    @Test func aUsersActivityIsUpdatedAndEndedByItsID() async throws {
        try await TestHerald.withHerald(configure: { $0.insecureDemoAuth = true }) { herald in
            try await herald.application().test(.live) { client in
                let base = "http://127.0.0.1:\(try #require(client.port))"
                func call(_ method: String, _ path: String, user: String = "alice", body: String?) async throws -> (Int, String) {
                    let (status, data) = try await NotifyUsersTests.call(base, method, path, user: user, body: body)
                    return (status, String(decoding: data, as: UTF8.self))
                }
                func register(_ body: String, handle: String) async throws -> (Int, String) {
                    let (_, idData) = try await call("POST", "/api/register?handle=\(handle)", body: nil)
                    let id = try JSONDecoder().decode(String.self, from: Data(idData.utf8))
                    return try await call("PUT", "/api/register/\(id)", body: body)
                }
                let phone = herald.apns.registerDevice(topic: TestHerald.topic)
                #expect(try await register(#"{"Platform":"apns","Handle":"\#(phone)","Tags":[]}"#, handle: phone).0 == 200)
                let activity = try herald.apns.startActivity(topic: TestHerald.topic, attributesType: "RideAttributes")
                let token = try #require(activity.updateToken)
                let (registered, view) = try await register(#"{"Platform":"apns","Handle":"\#(token)","LiveActivity":"ride-7"}"#, handle: token)
                #expect(registered == 200, "\(view)")
                #expect(view.contains("liveactivity:alice:ride-7"), "\(view)")

                let now = Int(Date().timeIntervalSince1970)
                let (updated, summary) = try await call(
                    "POST", "/api/notifications/liveactivity?to_tag=alice&activity=ride-7", user: "bob",
                    body: #"{"event":"update","content-state":{"minutes":4},"stale-date":\#(now + 300)}"#)
                #expect(updated == 200, "\(summary)")
                #expect(summary.contains(#""success":1"#), "\(summary)")
                var current = try #require(herald.apns.activity(id: activity.id))
                #expect(current.contentState?["minutes"] == .number(4))
                #expect(current.staleDate == Date(timeIntervalSince1970: TimeInterval(now + 300)))
                #expect(herald.apns.notifications(for: token).last?.headers["apns-topic"] == TestHerald.topic + ".push-type.liveactivity")

                let (ended, _) = try await call(
                    "POST", "/api/notifications/liveactivity?to_tag=alice&activity=ride-7",
                    body: #"{"event":"end","timestamp":\#(now + 1),"content-state":{"minutes":0},"dismissal-date":\#(now + 60)}"#)
                #expect(ended == 200)
                current = try #require(herald.apns.activity(id: activity.id))
                #expect(current.state == .ended)
                #expect(current.dismissalDate == Date(timeIntervalSince1970: TimeInterval(now + 60)))

                // Alerts to alice reach her phone, not her activity's token.
                let (alerted, _) = try await call("POST", "/api/notifications?to_tag=alice", user: "bob", body: #""Hi""#)
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
                    let (status, text) = try await call("POST", "/api/notifications/liveactivity?\(path)", body: body)
                    #expect(status == 400, "\(path): \(text)")
                    #expect(text.contains(words), "\(path): \(text)")
                }
                let (claimed, _) = try await register(#"{"Platform":"apns","Handle":"\#(phone)","Tags":["liveactivity:bob:x"]}"#, handle: phone)
                #expect(claimed == 403)
                #expect(herald.apns.notifications(for: token).count == 2)
            }
        }
    }
}
