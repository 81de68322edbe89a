import Foundation
public import HeraldCore

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
}
