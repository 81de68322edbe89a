public import Foundation
public import HeraldCore

/// The receipts devices posted, and how many devices confirmed each notification.
///
/// A receipt is kept (for de-duplication) until ``forgetReceipts(before:)`` sweeps it; the
/// count it added stays with the notification.
public protocol ReceiptStore: Sendable {
    /// Records `receipts` in one transaction: each one new for its notification and device
    /// adds one to its notification's `Confirmed` count on its platform; a repeat changes
    /// nothing. Returns how many were new.
    func recordReceipts(_ receipts: [Receipt]) async throws -> Int

    /// How many devices confirmed notification `id`, per platform (platforms without any are
    /// absent).
    func confirmedCounts(notificationID id: String) async throws -> [Platform: Int]

    /// Forgets the receipts recorded before `date` (their counts stay); how many.
    func forgetReceipts(before date: Date) async throws -> Int
}
