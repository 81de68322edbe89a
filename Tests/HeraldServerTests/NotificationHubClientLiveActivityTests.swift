import Foundation
import HeraldClient
import HeraldCore
import HeraldEmulator
import HeraldHubWire
import HeraldServer
import Testing

/// The Swift hub SDK's Live Activity sends: `HubNotification.liveActivity(event:…)`
/// starts an activity by push, updates it and ends it on the emulated device; a payload the
/// hub refuses surfaces as a `400`.
@Suite struct NotificationHubClientLiveActivityTests {
    @Test func theSDKStartsUpdatesAndEndsAnActivity() async throws {
        try await HubTestServer.withServer { server in
            let hub = try server.client(.tls)
            let herald = server.herald
            let startToken = herald.apns.registerPushToStartToken(topic: TestHerald.topic, attributesType: "DeliveryAttributes")
            let now = Date()
            let start = HubNotification.liveActivity(
                event: .start, contentState: .object([("stop", .number(5))]), timestamp: now,
                alert: .object([("title", .string("On its way"))]), attributesType: "DeliveryAttributes",
                attributes: .object([("order", .string("A-17"))]))
            let started = try await finished(hub, try await hub.sendDirect(start, deviceHandle: startToken))
            #expect(started.counts.counts[.apns]?[.success] == 1, "\(started.counts)")
            let activity = try #require(herald.apns.activities(token: startToken).first)
            #expect(activity.attributes?["order"] == .string("A-17"))
            let updateToken = try #require(activity.updateToken)

            let stale = now.addingTimeInterval(300)
            let update = HubNotification.liveActivity(
                event: .update, contentState: .object([("stop", .number(4))]), timestamp: now.addingTimeInterval(1), staleDate: stale,
                relevanceScore: 50, priority: 5)
            _ = try await finished(hub, try await hub.sendDirect(update, deviceHandle: updateToken))
            var current = try #require(herald.apns.activity(id: activity.id))
            #expect(current.contentState?["stop"] == .number(4))
            #expect(current.staleDate == Date(timeIntervalSince1970: stale.timeIntervalSince1970.rounded(.down)))
            #expect(current.relevanceScore == 50)
            #expect(herald.apns.notifications(for: updateToken).last?.headers["apns-priority"] == "5")

            let dismissal = now.addingTimeInterval(600)
            let end = HubNotification.liveActivity(event: .end, timestamp: now.addingTimeInterval(2), dismissalDate: dismissal)
            _ = try await finished(hub, try await hub.sendDirect(end, deviceHandle: updateToken))
            current = try #require(herald.apns.activity(id: activity.id))
            #expect(current.state == .ended)
            #expect(current.dismissalDate == Date(timeIntervalSince1970: dismissal.timeIntervalSince1970.rounded(.down)))

            // An update without its content state is refused by the hub.
            await #expect {
                _ = try await hub.sendDirect(HubNotification.liveActivity(event: .update), deviceHandle: updateToken)
            } throws: { error in
                (error as? HeraldError)?.code == .badRequest
            }
            #expect(herald.apns.notifications(for: updateToken).count == 2)
        }
    }
}
