import Foundation
public import HeraldCore
import HeraldPush
import HeraldStore
import Logging

extension HubEngine {
    /// The most devices one direct send reaches (the established hub's batch limit).
    public static let directTargetLimit = 1000

    /// Validates and durably accepts a notification for the given devices, whether or not a
    /// registration holds them. A device whose channel the push service reports dead is
    /// counted as ``DeliveryOutcome/expiredChannel``; there is no registration to remove.
    ///
    /// - Parameters:
    ///   - payload: the notification, for the devices' platform.
    ///   - targets: 1 to ``directTargetLimit`` devices, all on `payload.platform`; handles are
    ///     checked and normalized as a registration's are (APNs tokens lowercased, without
    ///     spaces), and Web Push devices need their subscription keys.
    public func enqueueDirect(payload: PlatformPayload, targets: [DirectTarget]) async throws -> NotificationRecord {
        guard (1...Self.directTargetLimit).contains(targets.count) else {
            throw HeraldError.badRequest(
                "a direct send goes to 1 to \(Self.directTargetLimit) devices; this one has \(targets.count)"
            )
        }
        var normalized: [DirectTarget] = []
        normalized.reserveCapacity(targets.count)
        for (index, target) in targets.enumerated() {
            let which = targets.count == 1 ? "the device" : "device \(index + 1)"
            guard target.platform == payload.platform else {
                throw HeraldError.badRequest(
                    "\(which) is on \(target.platform) but the notification is for \(payload.platform); a direct send goes to one platform"
                )
            }
            var checked = target
            do {
                checked.handle = try Registration.normalizedHandle(target.handle, platform: target.platform)
                try configuration.channelHosts.check(checked.handle, platform: target.platform)
            } catch {
                throw HeraldError.badRequest("\(which): \(error.message)")
            }
            if target.platform == .webpush, target.webPushKeys == nil {
                throw HeraldError.badRequest("\(which) is a Web Push subscription and needs its p256dh and auth keys")
            }
            normalized.append(checked)
        }
        _ = try Self.prepareForSending([payload])
        let record = NotificationRecord(
            id: Self.newNotificationID(),
            tagExpression: nil,
            payloads: [payload],
            directTargets: normalized
        )
        return try await accept(record)
    }

    /// Direct sends: the record's targets from the cursor (the number of targets done) on.
    func deliverDirect(
        _ claimed: NotificationRecord,
        notification: PushNotification,
        targets: [DirectTarget],
        logger: Logger
    ) async throws -> OutcomeCounts {
        var counts = claimed.counts
        var start = min(max(0, claimed.cursor.flatMap { Int($0) } ?? 0), targets.count)
        var handles = Set<String>()
        let pageSize = max(1, configuration.pageSize)
        while start < targets.count {
            let chunk = targets[start..<min(start + pageSize, targets.count)]
            let providers = self.providers
            let countsBefore = counts
            let sent = await fanOut(
                count: chunk.count,
                staleAt: staleAt(claimed),
                logger: logger,
                step: { index in
                    let target = chunk[chunk.startIndex + index]
                    guard let provider = providers[target.platform] else { return .outcome(target.platform, .noProvider) }
                    guard handles.insert(target.handle).inserted else { return .outcome(target.platform, .skipped) }
                    let push = PushTarget(handle: target.handle, webPushKeys: target.webPushKeys)
                    return .send(target.platform, provider, push, .ready(notification))
                },
                done: { _, platform, result in counts.add(result.outcome, platform: platform) }
            )
            if !sent {
                // Shutdown came while a push service refused every send: hand the chunk back.
                try await saveProgress(of: claimed.id, cursor: String(start), counts: countsBefore, handBack: true)
                throw CancellationError()
            }
            start = chunk.endIndex
            try await saveProgress(of: claimed.id, cursor: String(start), counts: counts, handBack: false)
        }
        return counts
    }
}
