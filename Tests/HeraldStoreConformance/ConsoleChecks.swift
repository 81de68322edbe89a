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

    /// Every page of the registrations `query` selects, `pageSize` at a time.
    static func allBrowsed(_ store: any HeraldStore, _ query: RegistrationQuery, pageSize: Int) async throws -> [String] {
        try await allPagedIDs(pageSize: pageSize) { try await store.browseRegistrations(query, after: $0, limit: pageSize) }
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

        check("browsingAndCountingMatchTheReference") { store, clock in
            let now = clock.now
            var (registrations, _) = RandomTagExpressions.scenario(now: now)
            let prefixes = ["a1", "a1%", "a1_", "b2", "c"]
            for index in registrations.indices {
                registrations[index].handle = prefixes[index % prefixes.count] + String(format: "%04x", index)
            }
            try await store.insertRegistrations(registrations)
            for index in 0..<12 {
                var installation = Installation.sample(id: "inst-\(index)", platform: index % 2 == 0 ? .apns : .fcm)
                installation.pushChannel = prefixes[index % prefixes.count] + "inst\(index)"
                installation.tags = index % 3 == 0 ? ["a", "b"] : ["c"]
                installation.userId = index % 4 == 0 ? "alice" : "bob"
                _ = try await store.upsertInstallation(installation, ifVersion: nil)
            }
            var everything = registrations
            for index in 0..<12 {
                everything.append(try #require(try await store.registration(id: Installation.nativeRegistrationID(installationID: "inst-\(index)"))))
            }

            var rng = SeededGenerator(seed: 0x434F_4E53)
            var queries: [RegistrationQuery] = [
                RegistrationQuery(),
                RegistrationQuery(includeInstallationRegistrations: false),
                RegistrationQuery(expression: .tag("username:alice")),
                RegistrationQuery(expression: .tag("$UserId:{alice}")),
                RegistrationQuery(expression: .or(.tag("a"), .tag("c")), platform: .fcm),
                RegistrationQuery(handlePrefix: "a1%"),
                RegistrationQuery(handlePrefix: "a1_"),
                RegistrationQuery(handlePrefix: "a1"),
                RegistrationQuery(handlePrefix: ""),
                RegistrationQuery(expression: .tag("nobody")),
            ]
            let platforms: [Platform?] = [nil, .apns, .webpush]
            let handlePrefixes: [String?] = [nil, "a1", "a1%", "a1_", "c0", "zz"]
            for round in 0..<40 {
                queries.append(
                    RegistrationQuery(
                        expression: RandomTagExpressions.randomExpression(depth: 3, using: &rng),
                        platform: platforms[round % platforms.count],
                        handlePrefix: handlePrefixes[round % handlePrefixes.count],
                        includeInstallationRegistrations: round % 5 != 0
                    )
                )
            }
            for (round, query) in queries.enumerated() {
                let expected =
                    everything
                    .filter { query.includeInstallationRegistrations || $0.installationID == nil }
                    .filter { registration in query.platform.map { registration.platform == $0 } ?? true }
                    .filter { registration in query.handlePrefix.map { registration.handle.hasPrefix($0) } ?? true }
                    .filter { query.expression?.matches(Set($0.tags)) ?? true }
                    .map(\.id)
                    .sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
                let browsed = try await ConsoleChecks.allBrowsed(store, query, pageSize: [1, 3, 7, 100][round % 4])
                #expect(browsed == expected, "\(query)")
                #expect(try await store.countRegistrations(query) == expected.count, "\(query)")
            }
            // Expired ones are browsed: they still exist.
            #expect(registrations.contains { $0.expiresAt.map { $0 <= now } ?? false })
        },

        check("browsingByHandlePrefixIsExact") { store, _ in
            try await store.insertRegistrations([
                .sample(id: "1", platform: .fcm, handle: "tok%en-1"),
                .sample(id: "2", platform: .fcm, handle: "tokXen-2"),
                .sample(id: "3", platform: .fcm, handle: "tok_en-3"),
                .sample(id: "4", platform: .fcm, handle: "tokxen-4"),
                .sample(id: "5", platform: .apns, handle: "tok%en-5"),
                .sample(id: "6", platform: .fcm, handle: "TOK%EN-6"),
            ])
            let cases: [(RegistrationQuery, [String])] = [
                (RegistrationQuery(handlePrefix: "tok%"), ["1", "5"]),
                (RegistrationQuery(handlePrefix: "tok_"), ["3"]),
                (RegistrationQuery(platform: .fcm, handlePrefix: "tok%"), ["1"]),
                (RegistrationQuery(handlePrefix: "tok"), ["1", "2", "3", "4", "5"]),
                (RegistrationQuery(handlePrefix: "tok%en-1"), ["1"]),
                (RegistrationQuery(handlePrefix: "tok%en-1x"), []),
                (RegistrationQuery(handlePrefix: "%"), []),
                (RegistrationQuery(platform: .apns), ["5"]),
            ]
            for (query, ids) in cases {
                #expect(try await store.browseRegistrations(query, after: nil, limit: 10).map(\.id) == ids, "\(query)")
                #expect(try await store.countRegistrations(query) == ids.count, "\(query)")
            }
            #expect(try await store.browseRegistrations(RegistrationQuery(), after: "3", limit: 2).map(\.id) == ["4", "5"])
            #expect(try await store.browseRegistrations(RegistrationQuery(), after: nil, limit: 0).isEmpty)
        },
    ]

    private static func check(_ name: String, _ body: @escaping StoreCheck.Body) -> StoreCheck {
        StoreCheck(area: "console", name: name, body: body)
    }
}
