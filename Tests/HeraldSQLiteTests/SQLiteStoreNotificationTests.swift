import Foundation
import HeraldCore
import HeraldSQLite
import HeraldStore
import HeraldStoreConformance
import Testing

/// What the SQLite file keeps of the notification queue, beyond the store contract (which
/// the conformance suite checks).
@Suite("SQLiteStore notification queue")
struct SQLiteStoreNotificationTests {
    static func scheduled(_ id: String, enqueuedAt: Date, dueAt: Date) -> NotificationRecord {
        NotificationRecord(
            id: id, tagExpression: "news", payloads: [],
            template: TemplateSend(properties: ["message": "Hello", "Name": "Ann"], templateName: "greeting"),
            scheduledAt: dueAt, state: .scheduled, enqueuedAt: enqueuedAt
        )
    }

    @Test func scheduledNotificationsSurviveARestart() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let clock = StoreTestClock()
        let record = Self.scheduled("n-s", enqueuedAt: clock.now, dueAt: clock.now.addingTimeInterval(60))
        try await withStore(at: directory.databasePath, clock: clock) { store in try await store.enqueueNotification(record) }
        try await withStore(at: directory.databasePath, clock: clock) { store throws in
            #expect(try await store.notification(id: "n-s") == record)
            #expect(try await store.nextScheduledTime() == record.scheduledAt)
        }
    }

    /// The statements of a send's way through the queue (enqueue, with and without a key,
    /// claim, progress, lease, finish) are compiled once each and kept: none is compiled again
    /// at every run, which a bound value in a partial index's test would cause.
    @Test func theQueueCompilesEachStatementOnce() async throws {
        try await withStore { store, clock in
            for round in 0..<4 {
                let plain = NotificationRecord(id: "n-\(round)", tagExpression: "news", payloads: [], enqueuedAt: clock.now)
                try await store.enqueueNotification(plain)
                let keyed = NotificationRecord(id: "k-\(round)", tagExpression: nil, payloads: [], enqueuedAt: clock.now)
                let key = try IdempotencyKey("key-\(round)", scope: "hub", digest: "d")
                #expect(try await store.enqueueNotification(keyed, idempotencyKey: key) == nil)
                for _ in 0..<2 {
                    let claimed = try #require(try await store.claimNotification(now: clock.now, lease: .seconds(10), owner: "node-a"))
                    let leaseEnd = clock.now.addingTimeInterval(10)
                    try await store.saveProgress(id: claimed.id, owner: "node-a", cursor: "c", counts: OutcomeCounts(), leaseUntil: leaseEnd)
                    try await store.renewLease(id: claimed.id, owner: "node-a", until: leaseEnd)
                    try await store.finishNotification(
                        id: claimed.id, owner: "node-a", state: .completed, counts: OutcomeCounts(), endedAt: clock.now)
                }
                #expect(try await store.claimNotification(now: clock.now, lease: .seconds(10), owner: "node-a") == nil)
            }
            #expect(store.recompiledStatementsForTesting() == [:])
        }
    }
}
