import Crypto
public import Foundation
public import HeraldCore
import HeraldMetrics
import HeraldStore

/// Confirmed receipts: devices saying that notifications reached them (see ``Receipt``).
extension HubEngine {
    /// The device a receipt comes from, as its caller names it.
    public enum ReceiptSender: Sendable, Hashable {
        /// An installation of the hub REST API.
        case installation(id: String)
        /// A registration; with an `owner`, it must be that user's (the app backend).
        case registration(id: String, owner: String?)
        /// The device with this push handle on `platform` (a registration must have it).
        case pushChannel(Platform, String)
    }

    /// Records that the device `sender` names received the notifications `ids` (their whole
    /// notifications' ids, as payloads carry them under ``Receipt/payloadKey``). A device counts
    /// once per notification: a repeat is accepted and changes nothing. Returns how many
    /// receipts were new.
    ///
    /// - Throws: `400` for no id, too many or an empty one; `404` when the device or one of the
    ///   notifications is unknown (then nothing is recorded).
    @discardableResult
    public func confirm(_ ids: [String], from sender: ReceiptSender, now: Date = Date()) async throws -> Int {
        guard !ids.isEmpty else { throw HeraldError.badRequest("a receipt names at least one notification id") }
        guard ids.count <= Receipt.maxPerRequest else {
            throw HeraldError.badRequest("a receipt names at most \(Receipt.maxPerRequest) notifications; this one names \(ids.count)")
        }
        if ids.contains(where: \.isEmpty) { throw HeraldError.badRequest("a notification id cannot be empty") }
        let (platform, handle) = try await receiptDevice(sender)
        let device = Self.receiptDevice(platform: platform, handle: handle)
        for id in Set(ids) {
            guard try await store.notification(id: id) != nil else { throw HeraldError.notFound("no notification with id \(id)") }
        }
        let new = try await store.recordReceipts(ids.map { Receipt(notificationID: $0, platform: platform, device: device, at: now) })
        metrics?.receipts(platform: platform, count: new)
        return new
    }

    /// How many devices confirmed notification `id`, per platform.
    public func confirmedCounts(notificationID id: String) async throws -> [Platform: Int] {
        try await store.confirmedCounts(notificationID: id)
    }

    /// Forgets the receipts older than ``Receipt/deduplicationWindow`` (their counts stay).
    @discardableResult
    public func forgetReceipts(now: Date = Date()) async throws -> Int {
        try await store.forgetReceipts(before: now - Receipt.deduplicationWindow.seconds)
    }

    /// Who a receipt's device is: the digest of its platform and push handle, so that a device
    /// counts once whichever name it confirms under, and no handle is stored twice.
    static func receiptDevice(platform: Platform, handle: String) -> String {
        let digest = SHA256.hash(data: Data("\(platform.rawValue)\n\(handle)".utf8))
        return digest.lowercaseHex
    }

    private func receiptDevice(_ sender: ReceiptSender) async throws -> (Platform, String) {
        switch sender {
        case .installation(let id):
            guard let installation = try await store.installation(id: id) else { throw HeraldError.notFound("no installation with id \(id)") }
            return (installation.platform, installation.pushChannel)
        case .registration(let id, let owner):
            guard let registration = try await store.registration(id: id), owner == nil || registration.owner == owner else {
                throw HeraldError.notFound("no registration with id \(id)")
            }
            return (registration.platform, registration.handle)
        case .pushChannel(let platform, let handle):
            guard try await !store.registrations(handle: handle, platform: platform).isEmpty else {
                throw HeraldError.notFound("no \(platform.rawValue) registration has this push channel")
            }
            return (platform, handle)
        }
    }
}
