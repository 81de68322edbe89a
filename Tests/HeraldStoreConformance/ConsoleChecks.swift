import Foundation
import HeraldCore
import HeraldStore
import HeraldTestSupport
import Testing

/// What an operator's console reads: the history of notifications, the delivery queue, and
/// the device browser's pages and counts.
enum ConsoleChecks {
    /// Every page of the history from the start, `pageSize` at a time, the cursor passed on as
    /// its token.
    static func allHistory(_ store: any HeraldStore, states: Set<NotificationState>?, pageSize: Int) async throws -> [NotificationListing] {
        var listings: [NotificationListing] = []
        var cursor: NotificationHistoryCursor?
        while true {
            let page = try await store.notificationHistory(states: states, before: cursor, limit: pageSize)
            #expect(page.count <= pageSize)
            listings += page
            guard page.count == pageSize, let last = page.last else { break }
            let next = NotificationHistoryCursor(after: last)
            guard let decoded = NotificationHistoryCursor(token: next.token), decoded == next else {
                Issue.record("the cursor \(next) does not come back from its token \(next.token)")
                break
            }
            cursor = decoded
        }
        return listings
    }

    static let all: [StoreCheck] = [
        check("historyIsNewestFirstAcrossPages") { store, clock in
            #expect(try await store.notificationHistory(states: nil, before: nil, limit: 10).isEmpty)
            // Two accepted in the same millisecond: the id breaks the tie.
            var expected: [String] = []
            for (index, id) in ["n-c", "n-a", "n-b", "n-e", "n-d", "n-f", "n-g"].enumerated() {
                try await store.enqueueNotification(NotificationQueueChecks.record(id, at: clock.now))
                expected.append(id)
                if index != 1, index != 4 { clock.advance(by: .milliseconds(5)) }
            }
            // n-c; then n-a and n-b at one time; n-e; then n-d and n-f at one time; n-g.
            let newestFirst = ["n-g", "n-f", "n-d", "n-e", "n-b", "n-a", "n-c"]
            for pageSize in [1, 2, 3, 7, 50] {
                let listed = try await ConsoleChecks.allHistory(store, states: nil, pageSize: pageSize)
                #expect(listed.map(\.record.id) == newestFirst, "pages of \(pageSize)")
            }
            let first = try #require(try await store.notificationHistory(states: nil, before: nil, limit: 1).first)
            #expect(first.record == (try await store.notification(id: "n-g")))
            #expect(first.leaseOwner == nil && first.leaseUntil == nil)
            #expect(try await store.notificationHistory(states: nil, before: nil, limit: 0).isEmpty)

            // A cursor made by hand: strictly before it.
            let n = try #require(try await store.notification(id: "n-d"))
            let before = try await store.notificationHistory(states: nil, before: NotificationHistoryCursor(enqueuedAt: n.enqueuedAt, id: n.id), limit: 10)
            #expect(before.map(\.record.id) == ["n-e", "n-b", "n-a", "n-c"])
        },

        check("historyCursorTokens") { _, clock in
            let cursor = NotificationHistoryCursor(enqueuedAt: clock.now.storeRoundedForTests, id: "n/1 +é.x")
            let token = cursor.token
            #expect(token.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
            #expect(NotificationHistoryCursor(token: token) == cursor)
            for bad in ["", "!", "abc", "bm8tZG90", Data("12.".utf8).base64EncodedString(), "a=b"] {
                #expect(NotificationHistoryCursor(token: bad) == nil, "\(bad)")
            }
        },

        check("historyFiltersByState") { store, clock in
            // Enqueued, scheduled, cancelled, processing, completed and abandoned ones.
            for id in ["n1", "n2", "n3", "n4"] {
                try await store.enqueueNotification(NotificationQueueChecks.record(id, at: clock.now))
                clock.advance(by: .seconds(1))
            }
            try await store.enqueueNotification(NotificationQueueChecks.scheduled("s1", enqueuedAt: clock.now, dueAt: clock.now.addingTimeInterval(3600)))
            clock.advance(by: .seconds(1))
            try await store.enqueueNotification(NotificationQueueChecks.scheduled("s2", enqueuedAt: clock.now, dueAt: clock.now.addingTimeInterval(3600)))
            #expect(try await store.cancelScheduledNotification(id: "s2", now: clock.now))
            for (id, state) in [("n1", NotificationState.completed), ("n2", .abandoned)] {
                let claimed = try #require(try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "worker-1"))
                #expect(claimed.id == id)
                try await store.finishNotification(id: id, owner: "worker-1", state: state, counts: OutcomeCounts(), endedAt: clock.now)
            }
            let processing = try #require(try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "worker-2"))
            #expect(processing.id == "n3")

            let cases: [(Set<NotificationState>?, [String])] = [
                (nil, ["s2", "s1", "n4", "n3", "n2", "n1"]),
                ([.enqueued], ["n4"]),
                ([.processing], ["n3"]),
                ([.completed, .abandoned], ["n2", "n1"]),
                ([.scheduled, .cancelled], ["s2", "s1"]),
                ([.noTargetFound], []),
                ([], []),
            ]
            for (states, ids) in cases {
                for pageSize in [1, 4] {
                    let listed = try await ConsoleChecks.allHistory(store, states: states, pageSize: pageSize)
                    #expect(listed.map(\.record.id) == ids, "\(String(describing: states)), pages of \(pageSize)")
                }
            }
            // The lease shows while a worker holds it.
            let held = try #require(try await store.notificationHistory(states: [.processing], before: nil, limit: 1).first)
            #expect(held.leaseOwner == "worker-2")
            #expect(held.leaseUntil == clock.now.addingTimeInterval(30).storeRoundedForTests)
        },

        check("historyCombinesPartitionsAndTheQueueShowsThemApart") { store, clock in
            try await store.enqueueNotification(NotificationQueueChecks.record("n1", at: clock.now))
            clock.advance(by: .seconds(1))
            try await store.enqueueNotification(NotificationQueueChecks.record("n2", at: clock.now))
            clock.advance(by: .seconds(1))
            try await store.enqueueNotification(NotificationQueueChecks.scheduled("s1", enqueuedAt: clock.now, dueAt: clock.now.addingTimeInterval(3600)))
            _ = try #require(try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "worker-a"))
            try await store.splitNotification(id: "n1", owner: "worker-a", at: ["r5"])
            let partition = try #require(try await store.claimNotification(now: clock.now, lease: .seconds(60), owner: "worker-b"))
            #expect(partition.id == "n1.1")

            var mine = OutcomeCounts()
            mine.add(.success, platform: .apns, count: 2)
            var theirs = OutcomeCounts()
            theirs.add(.success, platform: .fcm, count: 3)
            try await store.saveProgress(id: "n1", owner: "worker-a", cursor: "r2", counts: mine, leaseUntil: clock.now.addingTimeInterval(30))
            try await store.saveProgress(id: "n1.1", owner: "worker-b", cursor: "r7", counts: theirs, leaseUntil: clock.now.addingTimeInterval(60))

            // The queue: each row on its own, in claim order; neither scheduled nor finished.
            let queue = try await store.queueEntries(limit: 10)
            #expect(queue.map(\.record.id) == ["n1", "n1.1", "n2"])
            #expect(queue.map(\.record.partOf) == [nil, "n1", nil])
            #expect(queue.map(\.record.state) == [.processing, .processing, .enqueued])
            #expect(queue.map(\.record.cursor) == ["r2", "r7", nil])
            #expect(queue.map(\.record.counts) == [mine, theirs, OutcomeCounts()])
            #expect(queue.map(\.leaseOwner) == ["worker-a", "worker-b", nil])
            #expect(queue.map(\.leaseUntil) == [clock.now.addingTimeInterval(30), clock.now.addingTimeInterval(60), nil].map { $0?.storeRoundedForTests })
            #expect(try await store.queueEntries(limit: 2).map(\.record.id) == ["n1", "n1.1"])
            #expect(try await store.queueEntries(limit: 0).isEmpty)

            // The history: whole notifications, partitions added up, as notification(id:) has them.
            let history = try await store.notificationHistory(states: nil, before: nil, limit: 10)
            #expect(history.map(\.record.id) == ["s1", "n2", "n1"])
            let n1 = try #require(history.last)
            #expect(n1.record == (try await store.notification(id: "n1")))
            #expect(n1.record.counts.total(.success) == 5)
            #expect(n1.leaseOwner == "worker-a")

            // The notification's row ends before its partition: still processing as a whole.
            try await store.finishNotification(id: "n1", owner: "worker-a", state: .completed, counts: mine, endedAt: clock.now)
            #expect(try await store.queueEntries(limit: 10).map(\.record.id) == ["n1.1", "n2"])
            #expect(try await ConsoleChecks.allHistory(store, states: [.processing], pageSize: 1).map(\.record.id) == ["n1"])
            #expect(try await ConsoleChecks.allHistory(store, states: [.completed], pageSize: 1).isEmpty)
            let running = try #require(try await store.notificationHistory(states: [.processing], before: nil, limit: 5).first)
            #expect(running.record.state == .processing && running.leaseOwner == nil)

            // Once the partition ends, it is completed.
            try await store.finishNotification(id: "n1.1", owner: "worker-b", state: .completed, counts: theirs, endedAt: clock.now)
            #expect(try await store.queueEntries(limit: 10).map(\.record.id) == ["n2"])
            #expect(try await ConsoleChecks.allHistory(store, states: [.processing], pageSize: 1).isEmpty)
            #expect(try await ConsoleChecks.allHistory(store, states: [.completed], pageSize: 1).map(\.record.id) == ["n1"])
            #expect(try await ConsoleChecks.allHistory(store, states: [.completed, .enqueued], pageSize: 1).map(\.record.id) == ["n2", "n1"])
        },

    ]

    private static func check(_ name: String, _ body: @escaping StoreCheck.Body) -> StoreCheck {
        StoreCheck(area: "console", name: name, body: body)
    }
}
