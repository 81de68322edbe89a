import Foundation
import HeraldCore
import HeraldHub
import HeraldSQLite
import HeraldStore
import HeraldTestSupport
import Testing

@Suite("Hub: scheduled sends")
struct HubScheduledSendTests {
    static let payload = PlatformPayload(platform: .apns, body: Data(#"{"aps":{"alert":"later"}}"#.utf8))

    @Test func aFutureSendWaitsUntilItIsDue() async throws {
        try await HubFixture.with { f in
            try await f.register(.apns(1, tags: ["t"]))
            let at = Date().addingTimeInterval(3600)
            let record = try await f.engine.enqueue(tagExpression: "t", payloads: [Self.payload], scheduledAt: at)
            #expect(record.state == .scheduled)
            #expect(record.scheduledAt == at)
            #expect(try await f.store.nextScheduledTime().map { abs($0.timeIntervalSince(at)) < 0.01 } == true)

            #expect(try await f.deliverAll() == 0, "not due yet")
            #expect(f.apns.sent.isEmpty)
            #expect(try await f.stored(record.id).state == .scheduled)

            #expect(try await f.deliverAll(now: at.addingTimeInterval(1)) == 1)
            #expect(f.apns.sent.map(\.handle) == [apnsToken(1)])
            let stored = try await f.stored(record.id)
            #expect(stored.state == .completed, "the abandon clock starts at the scheduled time, not at acceptance")
            #expect(try await f.store.nextScheduledTime() == nil)
        }
    }

    @Test func aScheduledTemplateSend() async throws {
        try await HubFixture.with { f in
            try await f.register(.template("t1", handle: apnsToken(1), template: RegistrationTemplate(body: #"{"aps":{"alert":"$(m)"}}"#)))
            let at = Date().addingTimeInterval(600)
            let record = try await f.engine.enqueueTemplate(tagExpression: nil, send: TemplateSend(properties: ["m": "x"]), scheduledAt: at)
            #expect(record.state == .scheduled)
            #expect(try await f.deliverAll(now: at) == 1)
            #expect(f.apns.sent.map { ReceiptIDs.removed(from: $0.body) } == [#"{"aps":{"alert":"x"}}"#])
        }
    }

    @Test func aPastScheduleIsDeliveredAtOnce() async throws {
        try await HubFixture.with { f in
            try await f.register(.apns(1))
            let record = try await f.engine.enqueue(tagExpression: nil, payloads: [Self.payload], scheduledAt: Date().addingTimeInterval(-5))
            #expect(record.state == .enqueued)
            #expect(try await f.deliverAll() == 1)
        }
    }

    @Test func aCancelledSendIsNeverDelivered() async throws {
        try await HubFixture.with { f in
            try await f.register(.apns(1))
            let at = Date().addingTimeInterval(60)
            let record = try await f.engine.enqueue(tagExpression: nil, payloads: [Self.payload], scheduledAt: at)
            #expect(try await f.engine.cancelScheduled(id: record.id))
            let cancelled = try await f.stored(record.id)
            #expect(cancelled.state == .cancelled)
            #expect(cancelled.state.isFinal)
            #expect(try await f.deliverAll(now: at.addingTimeInterval(1)) == 0)
            #expect(f.apns.sent.isEmpty)

            await expectHeraldError(.conflict) { _ = try await f.engine.cancelScheduled(id: record.id) }
            #expect(try await f.engine.cancelScheduled(id: "no-such-notification") == false)

            let started = try await f.engine.enqueue(tagExpression: nil, payloads: [Self.payload])
            try await f.deliverAll()
            await expectHeraldError(.conflict) { _ = try await f.engine.cancelScheduled(id: started.id) }
        }
    }

    /// The worker wakes for the scheduled time even when its poll interval is far longer.
    @Test func theWorkerWakesWhenTheEarliestScheduledSendFallsDue() async throws {
        try await HubFixture.with(configure: { $0.pollInterval = .seconds(3600) }) { f in
            try await f.register(.apns(1))
            let worker = DeliveryWorker(engine: f.engine, lanes: 1)
            let running = Task { try await worker.run() }
            defer { running.cancel() }
            // Let the worker go idle first, so that it has to wake for the due time.
            let first = try await f.engine.enqueue(tagExpression: nil, payloads: [Self.payload])
            #expect(try await f.engine.waitForCompletion(id: first.id, timeout: .seconds(60))?.state == .completed)

            let record = try await f.engine.enqueue(
                tagExpression: nil, payloads: [Self.payload], scheduledAt: Date().addingTimeInterval(0.3)
            )
            let done = try await f.engine.waitForCompletion(id: record.id, timeout: .seconds(60))
            #expect(done?.state == .completed)
            running.cancel()
            try? await running.value
            #expect(f.apns.sent.count == 2)
        }
    }

    @Test func aNotificationIsAbandonedHalfAnHourAfterItsScheduledTime() async throws {
        try await HubFixture.with { f in
            try await f.register(.apns(1))
            let now = Date()
            // Accepted 40 minutes ago for 10 minutes ago: still in time.
            let inTime = NotificationRecord(
                id: "in-time", tagExpression: nil, payloads: [Self.payload], scheduledAt: now.addingTimeInterval(-600),
                state: .scheduled, enqueuedAt: now.addingTimeInterval(-2400)
            )
            // Accepted 40 minutes ago for at once: too late.
            let late = NotificationRecord(
                id: "late", tagExpression: nil, payloads: [Self.payload], enqueuedAt: now.addingTimeInterval(-2400)
            )
            try await f.store.enqueueNotification(inTime)
            try await f.store.enqueueNotification(late)
            #expect(try await f.deliverAll() == 2)
            #expect(try await f.stored("in-time").state == .completed)
            #expect(try await f.stored("late").state == .abandoned)
            #expect(f.apns.sent.count == 1)
        }
    }
}
