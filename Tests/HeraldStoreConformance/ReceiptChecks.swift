import Foundation
import HeraldCore
import HeraldStore
import HeraldTestSupport
import Testing

/// Confirmed receipts: a device counts once per notification, per platform, across requests and
/// concurrent writers; counts stay when the receipts are forgotten.
enum ReceiptChecks {
    static func receipt(_ notification: String, _ device: String, _ platform: Platform = .apns, at date: Date) -> Receipt {
        Receipt(notificationID: notification, platform: platform, device: device, at: date)
    }

    static let all: [StoreCheck] = [
        check("eachDeviceCountsOncePerNotificationAndPlatform") { store, clock in
            #expect(try await store.confirmedCounts(notificationID: "n-1").isEmpty)
            let first = try await store.recordReceipts([
                receipt("n-1", "d-1", at: clock.now), receipt("n-1", "d-2", at: clock.now),
                receipt("n-1", "d-3", .fcm, at: clock.now), receipt("n-2", "d-1", at: clock.now),
                // The same device twice in one request.
                receipt("n-1", "d-1", at: clock.now),
            ])
            #expect(first == 4)
            // A repeat of stored receipts changes nothing; a new device counts.
            let second = try await store.recordReceipts([receipt("n-1", "d-2", at: clock.now), receipt("n-1", "d-4", .webpush, at: clock.now)])
            #expect(second == 1)
            #expect(try await store.confirmedCounts(notificationID: "n-1") == [.apns: 2, .fcm: 1, .webpush: 1])
            #expect(try await store.confirmedCounts(notificationID: "n-2") == [.apns: 1])
            #expect(try await store.recordReceipts([]) == 0)
        },
        check("concurrentWritersCountEveryDeviceOnce") { store, clock in
            // Eight writers post the same 100 receipts and 25 of their own each.
            let now = clock.now
            let new = try await withThrowingTaskGroup(of: Int.self) { group in
                for writer in 0..<8 {
                    group.addTask {
                        var receipts = (0..<100).map { receipt("n-1", "shared-\($0)", at: now) }
                        receipts += (0..<25).map { receipt("n-1", "own-\(writer)-\($0)", .fcm, at: now) }
                        return try await store.recordReceipts(receipts.shuffled())
                    }
                }
                return try await group.reduce(0, +)
            }
            #expect(new == 300)
            #expect(try await store.confirmedCounts(notificationID: "n-1") == [.apns: 100, .fcm: 200])
        },
        check("forgottenReceiptsKeepTheirCounts") { store, clock in
            _ = try await store.recordReceipts([receipt("n-1", "d-1", at: clock.now)])
            clock.advance(by: .seconds(60))
            _ = try await store.recordReceipts([receipt("n-1", "d-2", at: clock.now)])
            #expect(try await store.forgetReceipts(before: clock.now) == 1)
            #expect(try await store.confirmedCounts(notificationID: "n-1") == [.apns: 2])
            // Forgotten, d-1 would count again: the window is what the sweep keeps.
            #expect(try await store.recordReceipts([receipt("n-1", "d-2", at: clock.now)]) == 0)
            #expect(try await store.forgetReceipts(before: clock.now) == 0)
        },
    ]

    private static func check(_ name: String, _ body: @escaping StoreCheck.Body) -> StoreCheck {
        StoreCheck(area: "confirmed receipts", name: name, body: body)
    }
}
