import Foundation
import HeraldCore
import HeraldStore
import Testing

@Suite("SQLiteStore notification queue")
struct SQLiteStoreNotificationTests {
    static func record(_ id: String, at date: Date) -> NotificationRecord {
        NotificationRecord(
            id: id,
            tagExpression: "sports && !news",
            payloads: [
                PlatformPayload(platform: .apns, body: Data(#"{"aps":{"alert":"hi"}}"#.utf8), headers: [.init(name: "apns-push-type", value: "alert")]),
                PlatformPayload(platform: .fcm, body: Data(#"{"notification":{"body":"hi"}}"#.utf8)),
            ],
            enqueuedAt: date
        )
    }

    @Test func enqueueClaimProgressFinish() async throws {
        try await withStore { store, clock in
            #expect(try await store.claimNotification(now: clock.now, lease: .seconds(30)) == nil)

            let first = Self.record("n-b", at: clock.now)
            try await store.enqueueNotification(first)
            clock.advance(by: .seconds(1))
            try await store.enqueueNotification(Self.record("n-a", at: clock.now))
            #expect(try await store.notification(id: "n-b") == first)
            await expectHeraldError(.conflict) { try await store.enqueueNotification(first) }

            // Oldest first, whatever the ids.
            let claimed = try #require(try await store.claimNotification(now: clock.now, lease: .seconds(30)))
            #expect(claimed.id == "n-b")
            #expect(claimed.state == .processing)
            #expect(claimed.startedAt == clock.now)
            #expect(claimed.payloads == first.payloads)
            let second = try #require(try await store.claimNotification(now: clock.now, lease: .seconds(30)))
            #expect(second.id == "n-a")
            #expect(try await store.claimNotification(now: clock.now, lease: .seconds(30)) == nil)

            var counts = OutcomeCounts()
            counts.add(.success, platform: .apns, count: 3)
            try await store.saveProgress(id: "n-b", cursor: "reg-3", counts: counts, leaseUntil: clock.now.addingTimeInterval(60))
            let progressed = try #require(try await store.notification(id: "n-b"))
            #expect(progressed.cursor == "reg-3")
            #expect(progressed.counts == counts)
            #expect(progressed.state == .processing)

            counts.add(.expiredChannel, platform: .fcm)
            clock.advance(by: .seconds(5))
            try await store.finishNotification(id: "n-b", state: .completed, counts: counts, endedAt: clock.now)
            let finished = try #require(try await store.notification(id: "n-b"))
            #expect(finished.state == .completed)
            #expect(finished.counts == counts)
            #expect(finished.endedAt == clock.now)
            #expect(finished.startedAt == claimed.startedAt)

            await expectHeraldError(.notFound) {
                try await store.saveProgress(id: "missing", cursor: nil, counts: OutcomeCounts(), leaseUntil: clock.now)
            }
            await expectHeraldError(.notFound) {
                try await store.finishNotification(id: "missing", state: .completed, counts: OutcomeCounts(), endedAt: clock.now)
            }
            #expect(try await store.notification(id: "missing") == nil)
        }
    }

    @Test func anExpiredLeaseIsReclaimedWithItsProgress() async throws {
        try await withStore { store, clock in
            try await store.enqueueNotification(Self.record("n1", at: clock.now))
            let claimed = try #require(try await store.claimNotification(now: clock.now, lease: .seconds(30)))
            try await store.saveProgress(id: "n1", cursor: "reg-9", counts: OutcomeCounts(), leaseUntil: clock.now.addingTimeInterval(30))

            // The worker is alive until its lease ends.
            clock.advance(by: .seconds(29))
            #expect(try await store.claimNotification(now: clock.now, lease: .seconds(30)) == nil)
            // Then another worker takes over where it stopped; startedAt is kept.
            clock.advance(by: .seconds(2))
            let reclaimed = try #require(try await store.claimNotification(now: clock.now, lease: .seconds(30)))
            #expect(reclaimed.id == "n1")
            #expect(reclaimed.cursor == "reg-9")
            #expect(reclaimed.startedAt == claimed.startedAt)
            #expect(try await store.claimNotification(now: clock.now, lease: .seconds(30)) == nil)

            // A finished notification is never claimed again.
            try await store.finishNotification(id: "n1", state: .abandoned, counts: OutcomeCounts(), endedAt: clock.now)
            clock.advance(by: .seconds(3600))
            #expect(try await store.claimNotification(now: clock.now, lease: .seconds(30)) == nil)
        }
    }

    @Test func concurrentClaimsNeverShareANotification() async throws {
        try await withStore { store, clock in
            for i in 0..<20 {
                try await store.enqueueNotification(Self.record(String(format: "n%02d", i), at: clock.now.addingTimeInterval(Double(i))))
            }
            let now = clock.now.addingTimeInterval(100)
            let claimed = try await withThrowingTaskGroup(of: String?.self) { group in
                for _ in 0..<30 {
                    group.addTask { try await store.claimNotification(now: now, lease: .seconds(60))?.id }
                }
                return try await group.reduce(into: [String]()) { if let id = $1 { $0.append(id) } }
            }
            #expect(claimed.count == 20)
            #expect(Set(claimed).count == 20)
        }
    }
}
