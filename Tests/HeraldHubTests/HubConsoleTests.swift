import Foundation
import HeraldCore
import HeraldHub
import HeraldSQLite
import HeraldStore
import Testing

/// What an operator's console reads through the engine: the history, the queue and the
/// devices, while a partitioned broadcast is half delivered.
@Suite("Hub: console reads")
struct HubConsoleTests {
    static let payload = PlatformPayload(platform: .apns, body: Data(#"{"aps":{"alert":"all"}}"#.utf8))

    @Test func aBroadcastHalfDeliveredShowsWholeInTheHistoryAndInPartsInTheQueue() async throws {
        try await HubFixture.with(platforms: [.apns], configure: HubPartitionTests.small) { f in
            try await f.store.insertRegistrations(
                (0..<100).map { Registration.apns($0, tags: $0 % 10 == 0 ? ["username:ann"] : []) }
            )
            let earlier = try await f.engine.enqueue(tagExpression: "username:ann", payloads: [Self.payload])
            try await f.deliverAll()
            try await Task.sleep(for: .milliseconds(5))  // a later acceptance time
            let broadcast = try await f.engine.enqueue(tagExpression: nil, payloads: [Self.payload])
            #expect(try await f.engine.deliverNext())  // the first run; the rest is split off

            let history = try await f.engine.notificationHistory(limit: 10)
            #expect(history.map(\.record.id) == [broadcast.id, earlier.id])
            #expect(history.first?.record == (try await f.engine.notification(id: broadcast.id)))
            #expect(history.first?.record.counts.total(.success) == 30)
            let processing = try await f.engine.notificationHistory(states: [.processing], limit: 10)
            #expect(processing.map(\.record.id) == [broadcast.id])
            let older = try await f.engine.notificationHistory(before: NotificationHistoryCursor(after: history[0]), limit: 10)
            #expect(older.map(\.record.id) == [earlier.id])

            let queue = try await f.engine.queueEntries(limit: 100)
            #expect(queue.count == 3, "the two runs of 30 and the last 10 wait")
            #expect(queue.allSatisfy { $0.record.partOf == broadcast.id && $0.record.state == .enqueued && $0.leaseOwner == nil })
            let totals = try await f.engine.queueStatistics()
            #expect(totals.waiting == 3 && totals.processing == 0)

            let ann = RegistrationQuery(expression: .tag("username:ann"))
            #expect(try await f.engine.countRegistrations(ann) == 10)
            let firstPage = try await f.engine.browseRegistrations(ann, limit: 4)
            #expect(firstPage.map(\.id) == ["reg-00000", "reg-00010", "reg-00020", "reg-00030"])
            let next = try await f.engine.browseRegistrations(ann, after: firstPage.last?.id, limit: 4)
            #expect(next.map(\.id) == ["reg-00040", "reg-00050", "reg-00060", "reg-00070"])
            #expect(try await f.engine.browseRegistrations(RegistrationQuery(), limit: 5_000).count == 100)
            #expect(try await f.engine.countRegistrations(RegistrationQuery(handlePrefix: String(apnsToken(0).dropLast(1)) + "%")) == 0)
        }
    }
}
