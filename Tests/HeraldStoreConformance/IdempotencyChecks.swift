import Foundation
import HeraldCore
import HeraldStore
import HeraldTestSupport
import Testing

/// Idempotency keys of sends: one notification per key and scope, a repeat answered with the
/// first, another request under the key refused, concurrent senders storing one, and keys
/// forgotten after their retention.
enum IdempotencyChecks {
    static func key(_ text: String, scope: String = IdempotencyKey.hubScope, digest: String = "d1", answer: String? = nil, retention: Duration = .seconds(3600)) -> IdempotencyKey {
        // The texts used here are valid keys.
        try! IdempotencyKey(text, scope: scope, digest: digest, answer: answer, retention: retention)
    }

    static func storedReused(_ body: () async throws -> Void) async {
        do {
            try await body()
            Issue.record("expected StoreError idempotencyKeyReused, nothing was thrown")
        } catch let error as StoreError {
            #expect(error.code == .idempotencyKeyReused, "\(error)")
            #expect(error.message.contains("'k-1'"), "the message names the key: \(error.message)")
        } catch {
            Issue.record("expected StoreError idempotencyKeyReused, got \(error)")
        }
    }

    static let all: [StoreCheck] = [
        check("aRepeatIsAnsweredWithTheFirstNotification") { store, clock in
            let first = NotificationQueueChecks.record("n-1", at: clock.now)
            let got1 = try await store.enqueueNotification(first, idempotencyKey: key("k-1", answer: "secure-1"))
            #expect(got1 == nil)
            // The same request again, under another notification id: nothing is stored.
            let replay = try await store.enqueueNotification(NotificationQueueChecks.record("n-2", at: clock.now), idempotencyKey: key("k-1", answer: "secure-2"))
            #expect(replay == IdempotentReplay(notificationID: "n-1", answer: "secure-1"))
            let got2 = try await store.notification(id: "n-2")
            #expect(got2 == nil)
            #expect(try await store.notification(id: "n-1") == first)
            // Only one notification is there to claim.
            let got3 = try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "w")?.id
            #expect(got3 == "n-1")
            let got4 = try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "w")
            #expect(got4 == nil)
        },
        check("anotherRequestUnderTheKeyIsRefused") { store, clock in
            let got5 = try await store.enqueueNotification(NotificationQueueChecks.record("n-1", at: clock.now), idempotencyKey: key("k-1"))
            #expect(got5 == nil)
            await storedReused {
                _ = try await store.enqueueNotification(NotificationQueueChecks.record("n-2", at: clock.now), idempotencyKey: key("k-1", digest: "d2"))
            }
            let got6 = try await store.notification(id: "n-2")
            #expect(got6 == nil)
        },
        check("keysArePerScope") { store, clock in
            let got7 = try await store.enqueueNotification(NotificationQueueChecks.record("n-1", at: clock.now), idempotencyKey: key("k-1", scope: "user:alice"))
            #expect(got7 == nil)
            let got8 = try await store.enqueueNotification(NotificationQueueChecks.record("n-2", at: clock.now), idempotencyKey: key("k-1", scope: "user:bob"))
            #expect(got8 == nil)
            let got9 = try await store.enqueueNotification(NotificationQueueChecks.record("n-3", at: clock.now), idempotencyKey: key("k-1"))
            #expect(got9 == nil)
            let got10 = try await store.enqueueNotification(NotificationQueueChecks.record("n-4", at: clock.now), idempotencyKey: key("k-1", scope: "user:bob"))?.notificationID
            #expect(got10 == "n-2")
            // A send without a key is never a repeat.
            try await store.enqueueNotification(NotificationQueueChecks.record("n-5", at: clock.now))
            let got11 = try await store.notification(id: "n-5")
            #expect(got11 != nil)
        },
        check("concurrentSendersStoreOne") { store, clock in
            let now = clock.now
            let replays = try await withThrowingTaskGroup(of: IdempotentReplay?.self) { group in
                for i in 0..<8 {
                    group.addTask {
                        try await store.enqueueNotification(NotificationQueueChecks.record("n-\(i)", at: now), idempotencyKey: key("k-1"))
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let stored = replays.filter { $0 == nil }.count
            #expect(stored == 1)
            let ids = Set(replays.compactMap { $0?.notificationID })
            #expect(ids.count == 1)
            let winner = try #require(ids.first)
            let got12 = try await store.notification(id: winner)
            #expect(got12 != nil)
            for i in 0..<8 where "n-\(i)" != winner { #expect(try await store.notification(id: "n-\(i)") == nil) }
        },
        check("keysAreForgottenAfterTheirRetention") { store, clock in
            let got13 = try await store.enqueueNotification(NotificationQueueChecks.record("n-1", at: clock.now), idempotencyKey: key("k-1", retention: .seconds(60)))
            #expect(got13 == nil)
            let got14 = try await store.enqueueNotification(NotificationQueueChecks.record("n-2", at: clock.now), idempotencyKey: key("k-2", retention: .seconds(600)))
            #expect(got14 == nil)
            clock.advance(by: .seconds(59))
            let got15 = try await store.forgetIdempotencyKeys(expiredBy: clock.now)
            #expect(got15 == 0)
            let got16 = try await store.enqueueNotification(NotificationQueueChecks.record("n-3", at: clock.now), idempotencyKey: key("k-1"))?.notificationID
            #expect(got16 == "n-1")
            clock.advance(by: .seconds(1))
            let got17 = try await store.forgetIdempotencyKeys(expiredBy: clock.now)
            #expect(got17 == 1)
            // The notification stays; its key is free for a new one, even with another request.
            let got18 = try await store.notification(id: "n-1")
            #expect(got18 != nil)
            let got19 = try await store.enqueueNotification(NotificationQueueChecks.record("n-3", at: clock.now), idempotencyKey: key("k-1", digest: "d2"))
            #expect(got19 == nil)
            let got20 = try await store.enqueueNotification(NotificationQueueChecks.record("n-4", at: clock.now), idempotencyKey: key("k-2"))?.notificationID
            #expect(got20 == "n-2")
        },
        check("anExpiredKeyIsTakenOverBeforeTheSweep") { store, clock in
            let got21 = try await store.enqueueNotification(NotificationQueueChecks.record("n-1", at: clock.now), idempotencyKey: key("k-1", retention: .seconds(60)))
            #expect(got21 == nil)
            clock.advance(by: .seconds(61))
            let got22 = try await store.enqueueNotification(NotificationQueueChecks.record("n-2", at: clock.now), idempotencyKey: key("k-1", digest: "d2"))
            #expect(got22 == nil)
            let got23 = try await store.notification(id: "n-2")
            #expect(got23 != nil)
            // n-1 forgot the key: the sweep has nothing left to forget of it.
            let got24 = try await store.forgetIdempotencyKeys(expiredBy: clock.now)
            #expect(got24 == 0)
        },
        check("partitionsHoldNoKey") { store, clock in
            let got25 = try await store.enqueueNotification(NotificationQueueChecks.record("n-1", at: clock.now), idempotencyKey: key("k-1"))
            #expect(got25 == nil)
            let claimed = try #require(try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "w"))
            try await store.splitNotification(id: claimed.id, owner: "w", at: ["r-1", "r-2"])
            let got26 = try await store.enqueueNotification(NotificationQueueChecks.record("n-2", at: clock.now), idempotencyKey: key("k-1"))?.notificationID
            #expect(got26 == "n-1")
        },
    ]

    private static func check(_ name: String, _ body: @escaping StoreCheck.Body) -> StoreCheck {
        StoreCheck(area: "idempotency keys", name: name, body: body)
    }
}
