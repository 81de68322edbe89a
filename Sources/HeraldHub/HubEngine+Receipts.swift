import Crypto
public import Foundation
public import HeraldCore
import HeraldMetrics
import HeraldStore
import Logging
import Synchronization

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
        for id in Set(ids) where !knownNotifications.withLock({ $0.contains(id) }) {
            guard try await store.notification(id: id) != nil else { throw HeraldError.notFound("no notification with id \(id)") }
            // A notification, once stored, stays (until its hub is deleted): the devices that
            // confirm it after this one are not looked up again.
            knownNotifications.withLock { known in
                if known.count >= Self.knownNotificationsLimit { known.removeAll(keepingCapacity: true) }
                known.insert(id)
            }
        }
        let new = try await store.recordReceipts(ids.map { Receipt(notificationID: $0, platform: platform, device: device, at: now) })
        metrics?.receipts(platform: platform, count: new)
        if new > 0 { await reportConfirmedLater(Set(ids)) }
        return new
    }

    /// Schedules `notification.confirmed` events for `ids` (if an endpoint wants them): the
    /// receipts of one ``Configuration/confirmedEventInterval`` are reported together.
    private func reportConfirmedLater(_ ids: Set<String>) async {
        guard await wantsWebhookEvent(.notificationConfirmed) else { return }
        let schedule = confirmedSinceReport.withLock { pending in
            pending.notifications.formUnion(ids)
            defer { pending.scheduled = true }
            return !pending.scheduled
        }
        guard schedule else { return }
        let interval = configuration.confirmedEventInterval
        Task {
            try? await Task.sleep(for: interval)
            await self.reportConfirmed()
        }
    }

    /// Records a `notification.confirmed` event for each notification that got receipts on this
    /// node since the last report, with its counts as stored now (so an event lost, or one of
    /// another node, is made good by the next). Receipts recorded just before a crash may go
    /// unreported until the next receipt of their notification; their counts are stored.
    func reportConfirmed(now: Date = Date()) async {
        let ids = confirmedSinceReport.withLock { pending in
            defer {
                pending.notifications = []
                pending.scheduled = false
            }
            return pending.notifications
        }
        var events: [WebhookEvent] = []
        for id in ids.sorted() {
            let counts: [Platform: Int]
            do {
                counts = try await store.confirmedCounts(notificationID: id)
            } catch {
                // The next receipt of the notification reports its total.
                logger.warning("Could not read a notification's receipts to report them", metadata: ["herald.notification.id": "\(id)", "error": "\(error)"])
                continue
            }
            guard !counts.isEmpty else { continue }
            let perPlatform: [(key: String, value: JSONValue)] = counts.sorted { $0.key.rawValue < $1.key.rawValue }.map {
                (key: $0.key.rawValue, value: .number(Double($0.value)))
            }
            events.append(
                WebhookEvent(
                    // Each report its own event: two nodes' reports are both kept.
                    id: "evt_notification.confirmed_\(id)_\(UUID.random().uuidString.prefix(8).lowercased())",
                    type: .notificationConfirmed, timestamp: now,
                    data: .object([
                        ("notificationId", .string(id)),
                        ("confirmed", .object(perPlatform)),
                        ("devices", .number(Double(counts.values.reduce(0, +)))),
                    ])
                )
            )
        }
        await recordWebhookEvents(events)
    }

    /// How many notification ids ``confirm(_:from:now:)`` remembers as stored.
    static let knownNotificationsLimit = 4096

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
            // As its registrations hold it (an APNs token in lowercase), so that the device
            // counts once whether it names its installation or its push channel.
            return (installation.platform, try Registration.normalizedHandle(installation.pushChannel, platform: installation.platform))
        case .registration(let id, let owner):
            guard let registration = try await store.registration(id: id), owner == nil || registration.owner == owner else {
                throw HeraldError.notFound("no registration with id \(id)")
            }
            return (registration.platform, registration.handle)
        case .pushChannel(let platform, let given):
            let handle = try Registration.normalizedHandle(given, platform: platform)
            guard try await !store.registrations(handle: handle, platform: platform).isEmpty else {
                throw HeraldError.notFound("no \(platform.rawValue) registration has this push channel")
            }
            return (platform, handle)
        }
    }
}
