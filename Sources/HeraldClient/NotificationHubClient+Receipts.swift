import Foundation
public import HeraldCore
import HeraldHubWire

/// Confirmed receipts: a device saying that a notification reached it (Herald's extension of
/// the hub API; a Listen key suffices, as for a device's installation).
extension NotificationHubClient {
    /// Confirms that the device of installation `installationID` received the notifications
    /// `notificationIDs`: the values their payloads carry under `herald.id`
    /// (`Receipt.payloadKey`). A repeat is harmless: the hub counts a device once per
    /// notification.
    ///
    /// - Throws: `HeraldError` `notFound` (404) for an unknown installation or notification.
    public func acknowledge(_ notificationIDs: [String], installationID: String) async throws {
        try await acknowledge(notificationIDs, device: [("installationId", .string(installationID))])
    }

    /// Confirms, for the device whose push channel on `platform` is `pushChannel` (a
    /// registration's handle), that it received the notifications `notificationIDs`.
    public func acknowledge(_ notificationIDs: [String], platform: Platform, pushChannel: String) async throws {
        let name = Installation.wirePlatformName(platform)
        try await acknowledge(notificationIDs, device: [("platform", .string(name)), ("pushChannel", .string(pushChannel))])
    }

    private func acknowledge(_ notificationIDs: [String], device: [(key: String, value: JSONValue)]) async throws {
        let body: JSONValue = .object([("notificationIds", .array(notificationIDs.map { .string($0) }))] + device)
        let request = makeRequest("POST", path: ["receipts"], body: try JSONEncoder().encode(body), contentType: "application/json")
        _ = try await perform(request, accepted: [204])
    }
}
