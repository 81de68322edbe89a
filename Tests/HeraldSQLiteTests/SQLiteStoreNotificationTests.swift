import Foundation
import HeraldCore
import HeraldStore
import HeraldStoreConformance
import Testing
import HeraldSQLite

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
}
