import Foundation
import HeraldCore
import HeraldHub
import HeraldSQLite
import Testing

/// Which webhook events a delivery records: only those an enabled endpoint wants, as the node
/// last read its endpoints (at once after its own change, within
/// `webhookEndpointsRefresh` after another node's), and one page's expired channels together.
@Suite("Webhook events of deliveries")
struct HubWebhookEventTests {
    static let payload = PlatformPayload(platform: .apns, body: Data(#"{"aps":{"alert":"hi"}}"#.utf8))

    @Test func aPagesExpiredChannelsAreRecordedTogetherForTheEndpointsThatWantThem() async throws {
        try await HubFixture.with { f in
            try await f.register(.apns(1), .apns(2), .apns(3), .apns(4))
            for n in 1...3 { f.apns.expire(apnsToken(n)) }
            let gone = try await f.engine.addWebhookEndpoint(url: "https://hooks.example/gone", events: ["registration.expired"])
            let done = try await f.engine.addWebhookEndpoint(url: "https://hooks.example/done", events: ["notification.completed"])
            let disabled = try await f.engine.addWebhookEndpoint(url: "https://hooks.example/off", events: ["*"])
            _ = try await f.engine.setWebhookEndpointEnabled(id: disabled.id, enabled: false)

            _ = try await f.engine.enqueue(tagExpression: nil, payloads: [Self.payload])
            #expect(try await f.deliverAll() == 1)
            #expect(try await f.store.pendingWebhookDeliveries(endpointID: gone.id) == 3)
            #expect(try await f.store.pendingWebhookDeliveries(endpointID: done.id) == 1)
            #expect(try await f.store.pendingWebhookDeliveries(endpointID: disabled.id) == 0)
        }
    }

    @Test func aNotificationTooLateIsRecordedAsAbandoned() async throws {
        try await HubFixture.with { f in
            try await f.register(.apns(1))
            let abandoned = try await f.engine.addWebhookEndpoint(url: "https://hooks.example/abandoned", events: ["notification.abandoned"])
            let completed = try await f.engine.addWebhookEndpoint(url: "https://hooks.example/completed", events: ["notification.completed"])
            // Accepted 40 minutes ago for at once: too late to send.
            let late = NotificationRecord(id: "late", tagExpression: nil, payloads: [Self.payload], enqueuedAt: Date().addingTimeInterval(-2400))
            try await f.store.enqueueNotification(late)
            #expect(try await f.deliverAll() == 1)
            #expect(try await f.stored("late").state == .abandoned)
            #expect(f.apns.sent.isEmpty)
            #expect(try await f.store.pendingWebhookDeliveries(endpointID: abandoned.id) == 1)
            #expect(try await f.store.pendingWebhookDeliveries(endpointID: completed.id) == 0)
            let claimed = try await f.store.claimWebhookDeliveries(now: Date(), lease: .seconds(30), owner: "test", limit: 10)
            let event = try #require(claimed.first)
            #expect(event.eventID == "evt_notification.abandoned_late" && event.type == .notificationAbandoned)
            #expect(event.body.contains(#""state":"Abandoned""#) && event.body.contains(#""notificationId":"late""#))
        }
    }

    @Test func anotherNodesNewEndpointGetsEventsOnceTheEndpointsAreReadAgain() async throws {
        try await HubFixture.with(configure: { $0.webhookEndpointsRefresh = .seconds(3600) }) { f in
            try await f.register(.apns(1))
            let slow = f.engine
            var configuration = f.engine.configuration
            configuration.webhookEndpointsRefresh = .milliseconds(200)
            let quick = HubEngine(store: f.store, providers: [f.apns], configuration: configuration, logger: hubTestLogger)
            let operatorNode = HubEngine(store: f.store, providers: [f.apns], configuration: configuration, logger: hubTestLogger)
            func deliver(on node: HubEngine) async throws {
                _ = try await node.enqueue(tagExpression: nil, payloads: [Self.payload])
                #expect(try await node.deliverNext())
            }

            // Both nodes read that no endpoint wants anything; then a third node adds one.
            try await deliver(on: slow)
            try await deliver(on: quick)
            let first = try await operatorNode.addWebhookEndpoint(url: "https://hooks.example/1", events: ["notification.completed"])

            // A node that reads the endpoints once an hour does not know of it yet...
            try await deliver(on: slow)
            #expect(try await f.store.pendingWebhookDeliveries(endpointID: first.id) == 0)
            // ...one that reads them every 200 ms does once it read them again...
            try await Task.sleep(for: .milliseconds(300))
            try await deliver(on: quick)
            #expect(try await f.store.pendingWebhookDeliveries(endpointID: first.id) == 1)
            // ...and a node's own change reads them again at once.
            let second = try await slow.addWebhookEndpoint(url: "https://hooks.example/2", events: ["notification.completed"])
            try await deliver(on: slow)
            #expect(try await f.store.pendingWebhookDeliveries(endpointID: first.id) == 2)
            #expect(try await f.store.pendingWebhookDeliveries(endpointID: second.id) == 1)
        }
    }
}
