public import Foundation

/// A device's word that a notification reached it: the app (or its Notification Service
/// Extension) posts one for each notification it receives, naming the notification by the id
/// the payload carries under ``payloadKey``.
///
/// Receipts are counted per notification and platform as `Confirmed`, beside the push
/// service's outcomes. A device counts once per notification, however often it confirms:
/// receipts are told apart by ``device``, a digest of the device's platform and push handle.
/// A device's receipt is remembered for ``deduplicationWindow``; its count is kept for as long
/// as the notification is.
public struct Receipt: Sendable, Hashable {
    /// The key under which a payload carries its notification's id: a top-level key of an APNs
    /// payload and of a Web Push JSON payload, a key of an FCM message's `data`.
    public static let payloadKey = "herald.id"
    /// The name of the pseudo-outcome under which receipts are counted.
    public static let outcomeName = "Confirmed"
    /// How long a device's receipt is remembered, so that a repeat is not counted again.
    public static let deduplicationWindow: Duration = .seconds(30 * 24 * 3600)
    /// The most receipts one request may carry.
    public static let maxPerRequest = 1000

    /// The whole notification's id (a partition's receipts count for the notification).
    public var notificationID: String
    public var platform: Platform
    /// Which device confirmed: the lowercase hex SHA-256 of its platform and push handle.
    public var device: String
    public var at: Date

    public init(notificationID: String, platform: Platform, device: String, at: Date) {
        self.notificationID = notificationID
        self.platform = platform
        self.device = device
        self.at = at
    }
}
