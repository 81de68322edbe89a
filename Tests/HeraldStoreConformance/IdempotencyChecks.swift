import Foundation
import HeraldCore
import HeraldStore
import HeraldTestSupport
import Testing

/// Idempotency keys of sends: one notification per key and scope, a repeat answered with the
/// first, another request under the key refused, concurrent senders storing one, and keys
/// forgotten after their retention.
enum IdempotencyChecks {
    static func key(
        _ text: String, scope: String = IdempotencyKey.hubScope, digest: String = "d1", answer: String? = nil, retention: Duration = .seconds(3600)
    ) -> IdempotencyKey {
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

    /// Enqueues the sample notification `id` at `clock.now` under `key`: `nil` when it was
    /// stored, otherwise the id of the notification the key holds (a replay).
    static func send(_ store: any HeraldStore, _ id: String, at clock: StoreTestClock, _ key: IdempotencyKey) async throws -> String? {
        try await store.enqueueNotification(NotificationQueueChecks.record(id, at: clock.now), idempotencyKey: key)?.notificationID
    }

    static let all: [StoreCheck] = [
        check("aRepeatIsAnsweredWithTheFirstNotification") { store, clock in
            let first = NotificationQueueChecks.record("n-1", at: clock.now)
            let firstSend = try await store.enqueueNotification(first, idempotencyKey: key("k-1", answer: "secure-1"))
            #expect(firstSend == nil)
            // The same request again, under another notification id: nothing is stored.
            let replay = try await store.enqueueNotification(
                NotificationQueueChecks.record("n-2", at: clock.now), idempotencyKey: key("k-1", answer: "secure-2"))
            #expect(replay == IdempotentReplay(notificationID: "n-1", answer: "secure-1"))
            let second = try await store.notification(id: "n-2")
            #expect(second == nil)
            let stored = try await store.notification(id: "n-1")
            #expect(stored == first)
            // Only one notification is there to claim.
            let claimed = try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "w")
            #expect(claimed?.id == "n-1")
            let none = try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "w")
            #expect(none == nil)
        },
        check("anotherRequestUnderTheKeyIsRefused") { store, clock in
            let firstSend = try await send(store, "n-1", at: clock, key("k-1"))
            #expect(firstSend == nil)
            await storedReused { _ = try await send(store, "n-2", at: clock, key("k-1", digest: "d2")) }
            let refused = try await store.notification(id: "n-2")
            #expect(refused == nil)
        },
        check("keysArePerScope") { store, clock in
            let alices = try await send(store, "n-1", at: clock, key("k-1", scope: "user:alice"))
            let bobs = try await send(store, "n-2", at: clock, key("k-1", scope: "user:bob"))
            let hubs = try await send(store, "n-3", at: clock, key("k-1"))
            #expect(alices == nil && bobs == nil && hubs == nil)
            let bobsAgain = try await send(store, "n-4", at: clock, key("k-1", scope: "user:bob"))
            #expect(bobsAgain == "n-2")
            // A send without a key is never a repeat.
            try await store.enqueueNotification(NotificationQueueChecks.record("n-5", at: clock.now))
            let unkeyed = try await store.notification(id: "n-5")
            #expect(unkeyed != nil)
        },
        check("concurrentSendersStoreOne") { store, clock in
            let replays = try await withThrowingTaskGroup(of: String?.self) { group in
                for i in 0..<8 {
                    group.addTask { try await send(store, "n-\(i)", at: clock, key("k-1")) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(replays.filter { $0 == nil }.count == 1)
            let ids = Set(replays.compactMap { $0 })
            #expect(ids.count == 1)
            let winner = try #require(ids.first)
            for i in 0..<8 {
                let stored = try await store.notification(id: "n-\(i)")
                #expect((stored != nil) == ("n-\(i)" == winner))
            }
        },
        check("keysAreForgottenAfterTheirRetention") { store, clock in
            let short = try await send(store, "n-1", at: clock, key("k-1", retention: .seconds(60)))
            let long = try await send(store, "n-2", at: clock, key("k-2", retention: .seconds(600)))
            #expect(short == nil && long == nil)
            clock.advance(by: .seconds(59))
            let early = try await store.forgetIdempotencyKeys(expiredBy: clock.now)
            #expect(early == 0)
            let stillHeld = try await send(store, "n-3", at: clock, key("k-1"))
            #expect(stillHeld == "n-1")
            clock.advance(by: .seconds(1))
            let forgotten = try await store.forgetIdempotencyKeys(expiredBy: clock.now)
            #expect(forgotten == 1)
            // The notification stays; its key is free for a new one, even with another request.
            let kept = try await store.notification(id: "n-1")
            #expect(kept != nil)
            let reused = try await send(store, "n-3", at: clock, key("k-1", digest: "d2"))
            #expect(reused == nil)
            let longHeld = try await send(store, "n-4", at: clock, key("k-2"))
            #expect(longHeld == "n-2")
        },
        check("anExpiredKeyIsTakenOverBeforeTheSweep") { store, clock in
            let firstSend = try await send(store, "n-1", at: clock, key("k-1", retention: .seconds(60)))
            #expect(firstSend == nil)
            clock.advance(by: .seconds(61))
            let takenOver = try await send(store, "n-2", at: clock, key("k-1", digest: "d2"))
            #expect(takenOver == nil)
            let second = try await store.notification(id: "n-2")
            #expect(second != nil)
            // n-1 forgot the key: the sweep has nothing left to forget of it.
            let forgotten = try await store.forgetIdempotencyKeys(expiredBy: clock.now)
            #expect(forgotten == 0)
        },
        check("partitionsHoldNoKey") { store, clock in
            let firstSend = try await send(store, "n-1", at: clock, key("k-1"))
            #expect(firstSend == nil)
            let claimed = try #require(try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "w"))
            try await store.splitNotification(id: claimed.id, owner: "w", at: ["r-1", "r-2"])
            let repeated = try await send(store, "n-2", at: clock, key("k-1"))
            #expect(repeated == "n-1")
        },
    ]

    private static func check(_ name: String, _ body: @escaping StoreCheck.Body) -> StoreCheck {
        StoreCheck(area: "idempotency keys", name: name, body: body)
    }
}
