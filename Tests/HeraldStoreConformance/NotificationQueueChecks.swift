public import Foundation
public import HeraldCore
import HeraldStore
import HeraldTestSupport
import Testing

/// The notification queue: enqueue, claims and leases, progress, template, direct and
/// scheduled sends, cancelling.
public enum NotificationQueueChecks {
    /// A native notification to `sports && !news`, for tests of any store.
    public static func record(_ id: String, at date: Date) -> NotificationRecord {
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

    /// A template notification scheduled for `dueAt`, for tests of any store.
    public static func scheduled(_ id: String, enqueuedAt: Date, dueAt: Date) -> NotificationRecord {
        NotificationRecord(
            id: id, tagExpression: "news", payloads: [],
            template: TemplateSend(properties: ["message": "Hello", "Name": "Ann"], templateName: "greeting"),
            scheduledAt: dueAt, state: .scheduled, enqueuedAt: enqueuedAt
        )
    }

    static let all: [StoreCheck] = [
        check("enqueueClaimProgressFinish") { store, clock in
            #expect(try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "worker-1") == nil)

            let first = NotificationQueueChecks.record("n-b", at: clock.now)
            try await store.enqueueNotification(first)
            clock.advance(by: .seconds(1))
            try await store.enqueueNotification(NotificationQueueChecks.record("n-a", at: clock.now))
            #expect(try await store.notification(id: "n-b") == first)
            await expectHeraldError(.conflict) { try await store.enqueueNotification(first) }

            // Oldest first, whatever the ids.
            let claimed = try #require(try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "worker-1"))
            #expect(claimed.id == "n-b")
            #expect(claimed.state == .processing)
            #expect(claimed.startedAt == clock.now)
            #expect(claimed.payloads == first.payloads)
            let second = try #require(try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "worker-1"))
            #expect(second.id == "n-a")
            #expect(try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "worker-1") == nil)

            var counts = OutcomeCounts()
            counts.add(.success, platform: .apns, count: 3)
            try await store.saveProgress(id: "n-b", owner: "worker-1", cursor: "reg-3", counts: counts, leaseUntil: clock.now.addingTimeInterval(60))
            let progressed = try #require(try await store.notification(id: "n-b"))
            #expect(progressed.cursor == "reg-3")
            #expect(progressed.counts == counts)
            #expect(progressed.state == .processing)

            counts.add(.expiredChannel, platform: .fcm)
            clock.advance(by: .seconds(5))
            try await store.finishNotification(id: "n-b", owner: "worker-1", state: .completed, counts: counts, endedAt: clock.now)
            let finished = try #require(try await store.notification(id: "n-b"))
            #expect(finished.state == .completed)
            #expect(finished.counts == counts)
            #expect(finished.endedAt == clock.now)
            #expect(finished.startedAt == claimed.startedAt)

            await expectHeraldError(.notFound) {
                try await store.saveProgress(id: "missing", owner: "worker-1", cursor: nil, counts: OutcomeCounts(), leaseUntil: clock.now)
            }
            await expectHeraldError(.notFound) {
                try await store.finishNotification(id: "missing", owner: "worker-1", state: .completed, counts: OutcomeCounts(), endedAt: clock.now)
            }
            #expect(try await store.notification(id: "missing") == nil)
        },

        check("aNotificationKeepsTheTraceItWasAcceptedIn") { store, clock in
            // The W3C traceparent of the accepting span comes back with the claim, and every
            // partition of the notification carries it; without one, none.
            let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
            var traced = NotificationQueueChecks.record("n-traced", at: clock.now)
            traced.traceContext = traceparent
            try await store.enqueueNotification(traced)
            clock.advance(by: .seconds(1))
            try await store.enqueueNotification(NotificationQueueChecks.record("n-untraced", at: clock.now))
            #expect(try await store.notification(id: "n-traced")?.traceContext == traceparent)
            let claimed = try #require(try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "worker-1"))
            #expect(claimed.id == "n-traced")
            #expect(claimed.traceContext == traceparent)
            try await store.splitNotification(id: "n-traced", owner: "worker-1", at: ["r5"])
            let partition = try #require(try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "worker-2"))
            #expect(partition.partOf == "n-traced")
            #expect(partition.traceContext == traceparent)
            let untraced = try #require(try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "worker-1"))
            #expect(untraced.id == "n-untraced")
            #expect(untraced.traceContext == nil)
        },

        check("aNotificationKeepsItsSpread") { store, clock in
            // The seconds its sends are spread over come back with the claim and its reads
            // (also when its idempotency key is stored with it); without one, none.
            var spread = NotificationQueueChecks.record("n-spread", at: clock.now)
            spread.spread = .seconds(600)
            try await store.enqueueNotification(spread)
            clock.advance(by: .seconds(1))
            var keyed = NotificationQueueChecks.record("n-spread-keyed", at: clock.now)
            keyed.spread = .seconds(5)
            _ = try await store.enqueueNotification(
                keyed, idempotencyKey: try IdempotencyKey("spread-key", scope: IdempotencyKey.hubScope, digest: "d", retention: .seconds(60)))
            try await store.enqueueNotification(NotificationQueueChecks.record("n-at-once", at: clock.now))
            #expect(try await store.notification(id: "n-spread")?.spread == .seconds(600))
            #expect(try await store.notification(id: "n-spread-keyed")?.spread == .seconds(5))
            #expect(try await store.notification(id: "n-at-once")?.spread == nil)
            let claimed = try #require(try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "worker-1"))
            #expect(claimed.id == "n-spread")
            #expect(claimed.spread == .seconds(600))
        },

        check("aChannelsBroadcastsAreReadNewestFirstAPageAtATime") { store, clock in
            // Each broadcast keeps its channel; a channel's page holds its own, newest first,
            // and the next page starts after the last one, also among sends of the same time.
            func broadcast(_ id: String, _ channel: String) -> NotificationRecord {
                var record = NotificationQueueChecks.record(id, at: clock.now)
                record.tagExpression = nil
                record.state = .completed
                record.broadcastChannel = channel
                record.endedAt = clock.now
                return record
            }
            try await store.enqueueNotification(broadcast("b-1", "Y2hhbm5lbC1B"))
            clock.advance(by: .seconds(1))
            try await store.enqueueNotification(broadcast("b-2", "Y2hhbm5lbC1C"))
            try await store.enqueueNotification(NotificationQueueChecks.record("n-tags", at: clock.now))
            clock.advance(by: .seconds(1))
            try await store.enqueueNotification(broadcast("b-3", "Y2hhbm5lbC1B"))
            try await store.enqueueNotification(broadcast("b-4", "Y2hhbm5lbC1B"))

            let first = try await store.broadcasts(toChannel: "Y2hhbm5lbC1B", before: nil, limit: 2)
            #expect(first.map(\.id) == ["b-4", "b-3"])
            #expect(first.first?.broadcastChannel == "Y2hhbm5lbC1B")
            #expect(first.first?.state == .completed)
            let cursor = NotificationHistoryCursor(after: try #require(first.last))
            #expect(try await store.broadcasts(toChannel: "Y2hhbm5lbC1B", before: cursor, limit: 2).map(\.id) == ["b-1"])
            #expect(try await store.broadcasts(toChannel: "Y2hhbm5lbC1C", before: nil, limit: 10).map(\.id) == ["b-2"])
            #expect(try await store.broadcasts(toChannel: "bm9uZQ==", before: nil, limit: 10).isEmpty)
            #expect(try await store.notification(id: "n-tags")?.broadcastChannel == nil)
        },

        check("anExpiredLeaseIsReclaimedWithItsProgress") { store, clock in
            try await store.enqueueNotification(NotificationQueueChecks.record("n1", at: clock.now))
            let claimed = try #require(try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "worker-1"))
            try await store.saveProgress(id: "n1", owner: "worker-1", cursor: "reg-9", counts: OutcomeCounts(), leaseUntil: clock.now.addingTimeInterval(30))

            // The worker is alive until its lease ends.
            clock.advance(by: .seconds(29))
            #expect(try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "worker-1") == nil)
            // Then another worker takes over where it stopped; startedAt is kept.
            clock.advance(by: .seconds(2))
            let reclaimed = try #require(try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "worker-2"))
            #expect(reclaimed.id == "n1")
            #expect(reclaimed.cursor == "reg-9")
            #expect(reclaimed.startedAt == claimed.startedAt)
            #expect(try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "worker-1") == nil)

            // A finished notification is never claimed again.
            try await store.finishNotification(id: "n1", owner: "worker-2", state: .abandoned, counts: OutcomeCounts(), endedAt: clock.now)
            clock.advance(by: .seconds(3600))
            #expect(try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "worker-1") == nil)
        },

        check("aRestartedNodeEndsOnlyTheLeasesOfItsEarlierRuns") { store, clock in
            for id in ["n1", "n2", "n3"] {
                try await store.enqueueNotification(NotificationQueueChecks.record(id, at: clock.now))
                clock.advance(by: .milliseconds(1))
            }
            _ = try #require(try await store.claimNotification(now: clock.now, lease: .seconds(60), owner: "node-a/run-1:x"))
            _ = try #require(try await store.claimNotification(now: clock.now, lease: .seconds(60), owner: "node-a/run-2:y"))
            _ = try #require(try await store.claimNotification(now: clock.now, lease: .seconds(60), owner: "node-b/run-1:z"))
            clock.advance(by: .seconds(1))
            // Run 2 of node a is the one starting: run 1's lease ends, its own and node b's stay.
            #expect(try await store.endLeases(ownerPrefix: "node-a/", except: "node-a/run-2:y", now: clock.now) == 1)
            clock.advance(by: .milliseconds(1))
            let resumed = try #require(try await store.claimNotification(now: clock.now, lease: .seconds(60), owner: "node-a/run-2:y"))
            #expect(resumed.id == "n1")
            #expect(try await store.claimNotification(now: clock.now, lease: .seconds(60), owner: "node-a/run-2:y") == nil)
            #expect(try await store.endLeases(ownerPrefix: "node-a/", except: "node-a/run-2:y", now: clock.now) == 0)
            // A prefix is matched as text, not as a pattern.
            #expect(try await store.endLeases(ownerPrefix: "node-_/", except: "", now: clock.now) == 0)
            #expect(try await store.endLeases(ownerPrefix: "%", except: "", now: clock.now) == 0)
        },

        check("aRenewedLeaseKeepsOtherWorkersAway") { store, clock in
            try await store.enqueueNotification(NotificationQueueChecks.record("n1", at: clock.now))
            _ = try #require(try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "busy"))
            var counts = OutcomeCounts()
            counts.add(.success, platform: .fcm)
            try await store.saveProgress(id: "n1", owner: "busy", cursor: "reg-3", counts: counts, leaseUntil: clock.now.addingTimeInterval(30))
            // A page takes longer than the lease: the heartbeat renews it meanwhile.
            for _ in 0..<4 {
                clock.advance(by: .seconds(20))
                try await store.renewLease(id: "n1", owner: "busy", until: clock.now.addingTimeInterval(30))
                #expect(try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "other") == nil)
            }
            // A renewal leaves the progress saved before it.
            let renewed = try #require(try await store.notification(id: "n1"))
            #expect(renewed.cursor == "reg-3")
            #expect(renewed.counts == counts)
            // Once the heartbeat stops (the node died), the lease runs out and another takes over.
            clock.advance(by: .seconds(31))
            #expect(try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "other")?.id == "n1")
            await expectCodedError(.leaseLost, of: StoreError.self) {
                try await store.renewLease(id: "n1", owner: "busy", until: clock.now.addingTimeInterval(30))
            }
            await expectHeraldError(.notFound) {
                try await store.renewLease(id: "missing", owner: "busy", until: clock.now)
            }
        },

        check("aWorkerThatLostItsLeaseChangesNothing") { store, clock in
            try await store.enqueueNotification(NotificationQueueChecks.record("n1", at: clock.now))
            _ = try #require(try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "slow"))
            // The slow worker's lease runs out; another takes the notification over.
            clock.advance(by: .seconds(31))
            _ = try #require(try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "fast"))
            var fastCounts = OutcomeCounts()
            fastCounts.add(.success, platform: .fcm)
            try await store.saveProgress(id: "n1", owner: "fast", cursor: "reg-5", counts: fastCounts, leaseUntil: clock.now.addingTimeInterval(30))

            // The slow worker wakes up: it can neither save its progress nor finish.
            var slowCounts = OutcomeCounts()
            slowCounts.add(.success, platform: .apns)
            await expectCodedError(.leaseLost, of: StoreError.self) {
                try await store.saveProgress(id: "n1", owner: "slow", cursor: "reg-9", counts: slowCounts, leaseUntil: clock.now.addingTimeInterval(30))
            }
            await expectCodedError(.leaseLost, of: StoreError.self) {
                try await store.finishNotification(id: "n1", owner: "slow", state: .completed, counts: slowCounts, endedAt: clock.now)
            }
            let current = try #require(try await store.notification(id: "n1"))
            #expect(current.state == .processing)
            #expect(current.cursor == "reg-5")
            #expect(current.counts == fastCounts)

            // Once finished, nobody changes it, its owner included.
            try await store.finishNotification(id: "n1", owner: "fast", state: .completed, counts: fastCounts, endedAt: clock.now)
            await expectCodedError(.leaseLost, of: StoreError.self) {
                try await store.saveProgress(id: "n1", owner: "fast", cursor: "reg-6", counts: slowCounts, leaseUntil: clock.now)
            }
            await expectCodedError(.leaseLost, of: StoreError.self) {
                try await store.finishNotification(id: "n1", owner: "fast", state: .abandoned, counts: slowCounts, endedAt: clock.now)
            }
            #expect(try await store.notification(id: "n1")?.state == .completed)
        },

        check("concurrentClaimsNeverShareANotification") { store, clock in
            for i in 0..<20 {
                try await store.enqueueNotification(NotificationQueueChecks.record(String(format: "n%02d", i), at: clock.now.addingTimeInterval(Double(i))))
            }
            let now = clock.now.addingTimeInterval(100)
            let claimed = try await withThrowingTaskGroup(of: String?.self) { group in
                for _ in 0..<30 {
                    group.addTask { try await store.claimNotification(now: now, lease: .seconds(60), owner: "worker-1")?.id }
                }
                return try await group.reduce(into: [String]()) { if let id = $1 { $0.append(id) } }
            }
            #expect(claimed.count == 20)
            #expect(Set(claimed).count == 20)
        },

        check("templateAndDirectSendsRoundTrip") { store, clock in
            let template = NotificationRecord(
                id: "n-template", tagExpression: "a || b", payloads: [],
                template: TemplateSend(properties: ["message": "Hi \"you\"", "url": "https://example.com/a?b=c"]), enqueuedAt: clock.now
            )
            let direct = NotificationRecord(
                id: "n-direct", tagExpression: nil,
                payloads: [PlatformPayload(platform: .webpush, body: Data("{}".utf8))],
                directTargets: [
                    DirectTarget(platform: .webpush, handle: "https://push.example/1", webPushKeys: WebPushKeys(p256dh: "BPk", auth: "AuT")),
                    DirectTarget(platform: .apns, handle: "abcd"),
                ],
                enqueuedAt: clock.now
            )
            try await store.enqueueNotification(template)
            try await store.enqueueNotification(direct)
            #expect(try await store.notification(id: "n-template") == template)
            #expect(try await store.notification(id: "n-direct") == direct)
            // A claim returns the whole record.
            let claimed = try #require(try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "worker-1"))
            #expect(claimed.template == template.template || claimed.directTargets == direct.directTargets)
        },

        check("aScheduledNotificationIsClaimedWhenDue") { store, clock in
            let due = clock.now.addingTimeInterval(60)
            let record = NotificationQueueChecks.scheduled("n-s", enqueuedAt: clock.now, dueAt: due)
            try await store.enqueueNotification(record)
            #expect(try await store.notification(id: "n-s") == record)
            #expect(try await store.nextScheduledTime() == due)

            #expect(try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "worker-1") == nil)
            clock.advance(by: .milliseconds(59_999))
            #expect(try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "worker-1") == nil)
            clock.advance(by: .milliseconds(1))
            let claimed = try #require(try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "worker-1"))
            #expect(claimed.id == "n-s")
            #expect(claimed.state == .processing)
            #expect(claimed.startedAt == clock.now)
            #expect(claimed.scheduledAt == due)
            #expect(claimed.template == record.template)
            #expect(try await store.nextScheduledTime() == nil)
            #expect(try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "worker-1") == nil)

            // Its lease expires like any other's.
            clock.advance(by: .seconds(31))
            #expect(try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "worker-1")?.id == "n-s")
        },

        check("theNotificationDueFirstIsClaimedFirst") { store, clock in
            let t0 = clock.now
            // Scheduled long ago for t0+10s; enqueued at t0+5s; scheduled for t0+20s; enqueued at t0+30s.
            try await store.enqueueNotification(
                NotificationQueueChecks.scheduled("s-10", enqueuedAt: t0.addingTimeInterval(-3600), dueAt: t0.addingTimeInterval(10)))
            try await store.enqueueNotification(NotificationQueueChecks.record("e-05", at: t0.addingTimeInterval(5)))
            try await store.enqueueNotification(NotificationQueueChecks.scheduled("s-20", enqueuedAt: t0, dueAt: t0.addingTimeInterval(20)))
            try await store.enqueueNotification(NotificationQueueChecks.record("e-30", at: t0.addingTimeInterval(30)))
            try await store.enqueueNotification(NotificationQueueChecks.scheduled("s-99", enqueuedAt: t0, dueAt: t0.addingTimeInterval(99)))
            #expect(try await store.nextScheduledTime() == t0.addingTimeInterval(10))

            let now = t0.addingTimeInterval(40)
            var order: [String] = []
            while let claimed = try await store.claimNotification(now: now, lease: .seconds(600), owner: "worker-1") { order.append(claimed.id) }
            #expect(order == ["e-05", "s-10", "s-20", "e-30"])
            #expect(try await store.nextScheduledTime() == t0.addingTimeInterval(99))
        },

        check("cancellingAScheduledNotification") { store, clock in
            try await store.enqueueNotification(NotificationQueueChecks.scheduled("n-s", enqueuedAt: clock.now, dueAt: clock.now.addingTimeInterval(60)))
            try await store.enqueueNotification(NotificationQueueChecks.scheduled("n-later", enqueuedAt: clock.now, dueAt: clock.now.addingTimeInterval(120)))
            clock.advance(by: .seconds(1))
            #expect(try await store.cancelScheduledNotification(id: "n-s", now: clock.now))
            let cancelled = try #require(try await store.notification(id: "n-s"))
            #expect(cancelled.state == .cancelled)
            #expect(cancelled.endedAt == clock.now)
            #expect(try await store.nextScheduledTime() == cancelled.scheduledAt?.addingTimeInterval(60))

            // Once cancelled, it is never claimed; cancelling again is a conflict.
            clock.advance(by: .seconds(3600))
            #expect(try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "worker-1")?.id == "n-later")
            #expect(try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "worker-1") == nil)
            await expectHeraldError(.conflict) { _ = try await store.cancelScheduledNotification(id: "n-s", now: clock.now) }
            // One that is being delivered can no longer be cancelled; an unknown one is not there.
            await expectHeraldError(.conflict) { _ = try await store.cancelScheduledNotification(id: "n-later", now: clock.now) }
            #expect(try await store.notification(id: "n-later")?.state == .processing)
            #expect(try await store.cancelScheduledNotification(id: "missing", now: clock.now) == false)
        },

        check("aScheduledNotificationNeedsItsTime") { store, clock throws in
            var record = NotificationQueueChecks.scheduled("n", enqueuedAt: clock.now, dueAt: clock.now)
            record.scheduledAt = nil
            await expectHeraldError(.badRequest) { try await store.enqueueNotification(record) }
            #expect(try await store.notification(id: "n") == nil)
        },

        check("registrationIDBoundariesCutEveryNth") { store, _ in
            #expect(try await store.registrationIDBoundaries(after: nil, every: 3, limit: 10) == [])
            let ids = (1...10).map { String(format: "r%02d", $0) }
            try await store.insertRegistrations(ids.map { Registration.sample(id: $0, handle: String(repeating: "c", count: 62) + $0.suffix(2)) })
            #expect(try await store.registrationIDBoundaries(after: nil, every: 3, limit: 10) == ["r03", "r06", "r09"])
            #expect(try await store.registrationIDBoundaries(after: "r03", every: 3, limit: 10) == ["r06", "r09"])
            #expect(try await store.registrationIDBoundaries(after: "r025", every: 4, limit: 10) == ["r06", "r10"])
            #expect(try await store.registrationIDBoundaries(after: nil, every: 3, limit: 1) == ["r03"])
            #expect(try await store.registrationIDBoundaries(after: "r10", every: 1, limit: 10) == [])
        },

        check("aSplitNotificationIsDeliveredByItsPartitions") { store, clock in
            try await store.enqueueNotification(NotificationQueueChecks.record("n1", at: clock.now))
            let root = try #require(try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "worker-a"))
            try await store.saveProgress(id: "n1", owner: "worker-a", cursor: "r02", counts: OutcomeCounts(), leaseUntil: clock.now.addingTimeInterval(30))
            try await store.splitNotification(id: "n1", owner: "worker-a", at: ["r04", "r07"])

            // Each partition is claimed on its own, by any worker, with its range.
            let first = try #require(try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "worker-b"))
            let second = try #require(try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "worker-c"))
            #expect(try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "worker-c") == nil)
            #expect([first.id, second.id] == ["n1.1", "n1.2"])
            #expect([first.cursor, second.cursor] == ["r04", "r07"])
            #expect([first.upperBound, second.upperBound] == ["r07", nil])
            #expect([first.partOf, second.partOf] == ["n1", "n1"])
            #expect(first.payloads == root.payloads && first.tagExpression == root.tagExpression)
            #expect(first.enqueuedAt == root.enqueuedAt && first.state == .processing)
            #expect(try await store.notification(id: "n1.1") == nil)

            // The notification adds its partitions up, and ends when the last one does.
            var counts = OutcomeCounts()
            counts.add(.success, platform: .apns, count: 2)
            try await store.finishNotification(id: "n1", owner: "worker-a", state: .completed, counts: counts, endedAt: clock.now)
            try await store.saveProgress(id: "n1.2", owner: "worker-c", cursor: "r08", counts: counts, leaseUntil: clock.now.addingTimeInterval(30))
            var whole = try #require(try await store.notification(id: "n1"))
            #expect(whole.state == .processing && whole.endedAt == nil)
            #expect(whole.counts.total(.success) == 4)
            try await store.finishNotification(id: "n1.1", owner: "worker-b", state: .noTargetFound, counts: OutcomeCounts(), endedAt: clock.now)
            clock.advance(by: .seconds(3))
            counts.add(.expiredChannel, platform: .fcm)
            try await store.finishNotification(id: "n1.2", owner: "worker-c", state: .completed, counts: counts, endedAt: clock.now)
            whole = try #require(try await store.notification(id: "n1"))
            #expect(whole.state == .completed)
            #expect(whole.endedAt == clock.now)
            #expect(whole.counts.total(.success) == 4 && whole.counts.total(.expiredChannel) == 1)
            #expect(whole.startedAt == root.startedAt && whole.id == "n1" && whole.partOf == nil)
        },

        check("aNotificationWithAnAbandonedPartitionIsAbandoned") { store, clock in
            try await store.enqueueNotification(NotificationQueueChecks.record("n1", at: clock.now))
            _ = try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "worker-a")
            try await store.splitNotification(id: "n1", owner: "worker-a", at: ["r5"])
            _ = try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "worker-b")
            try await store.finishNotification(id: "n1", owner: "worker-a", state: .noTargetFound, counts: OutcomeCounts(), endedAt: clock.now)
            try await store.finishNotification(id: "n1.1", owner: "worker-b", state: .abandoned, counts: OutcomeCounts(), endedAt: clock.now)
            #expect(try await store.notification(id: "n1")?.state == .abandoned)
        },

        check("onlyTheLeaseHolderSplitsAndOnlyOnce") { store, clock in
            try await store.enqueueNotification(NotificationQueueChecks.record("n1", at: clock.now))
            await expectHeraldError(.notFound) { try await store.splitNotification(id: "n0", owner: "worker-a", at: ["r5"]) }
            _ = try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "worker-a")
            try await store.saveProgress(id: "n1", owner: "worker-a", cursor: "r3", counts: OutcomeCounts(), leaseUntil: clock.now.addingTimeInterval(30))
            await expectCodedError(.leaseLost, of: StoreError.self) { try await store.splitNotification(id: "n1", owner: "worker-b", at: ["r5"]) }
            await expectHeraldError(.badRequest) { try await store.splitNotification(id: "n1", owner: "worker-a", at: []) }
            await expectHeraldError(.badRequest) { try await store.splitNotification(id: "n1", owner: "worker-a", at: ["r2"]) }
            await expectHeraldError(.badRequest) { try await store.splitNotification(id: "n1", owner: "worker-a", at: ["r7", "r5"]) }
            #expect(try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "worker-b") == nil)

            try await store.splitNotification(id: "n1", owner: "worker-a", at: ["r5"])
            await expectHeraldError(.badRequest) { try await store.splitNotification(id: "n1", owner: "worker-a", at: ["r6"]) }
            _ = try #require(try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "worker-b"))
            await expectHeraldError(.badRequest) { try await store.splitNotification(id: "n1.1", owner: "worker-b", at: ["r6"]) }
        },

        check("queueStatisticsCountWhatWaitsAndWhatIsHeld") { store, clock in
            #expect(try await store.queueStatistics(now: clock.now) == QueueStatistics(waiting: 0, processing: 0, oldestWaitingSince: nil))
            let start = clock.now
            try await store.enqueueNotification(NotificationQueueChecks.record("n1", at: start))
            clock.advance(by: .seconds(2))
            try await store.enqueueNotification(NotificationQueueChecks.record("n2", at: clock.now))
            // Scheduled: waiting only once due, and due since its scheduled time.
            try await store.enqueueNotification(
                NotificationQueueChecks.scheduled("s1", enqueuedAt: start, dueAt: start.addingTimeInterval(60))
            )
            #expect(try await store.queueStatistics(now: clock.now) == QueueStatistics(waiting: 2, processing: 0, oldestWaitingSince: start))

            _ = try #require(try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "worker-1"))
            #expect(
                try await store.queueStatistics(now: clock.now)
                    == QueueStatistics(waiting: 1, processing: 1, oldestWaitingSince: start.addingTimeInterval(2))
            )
            try await store.finishNotification(id: "n1", owner: "worker-1", state: .completed, counts: OutcomeCounts(), endedAt: clock.now)
            clock.advance(by: .seconds(120))
            #expect(
                try await store.queueStatistics(now: clock.now)
                    == QueueStatistics(waiting: 2, processing: 0, oldestWaitingSince: start.addingTimeInterval(2))
            )
        },
    ]

    private static func check(_ name: String, _ body: @escaping StoreCheck.Body) -> StoreCheck {
        StoreCheck(area: "notification queue", name: name, body: body)
    }
}
