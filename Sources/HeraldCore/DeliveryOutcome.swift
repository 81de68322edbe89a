/// What happened to one notification for one device.
///
/// The names are those the established notification hub reports in its telemetry, so
/// outcome counts read the same. An open set: unknown names round-trip.
public struct DeliveryOutcome: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let success = DeliveryOutcome(rawValue: "Success")
    /// The push service says the handle is dead; the registration was removed.
    public static let expiredChannel = DeliveryOutcome(rawValue: "ExpiredChannel")
    /// The push service rejected the handle as malformed or not for this app.
    public static let badChannel = DeliveryOutcome(rawValue: "BadChannel")
    /// The handle belongs to another sender or key.
    public static let wrongToken = DeliveryOutcome(rawValue: "WrongToken")
    /// Still throttled after every retry.
    public static let throttled = DeliveryOutcome(rawValue: "Throttled")
    /// The push service refused Herald's credentials.
    public static let invalidCredentials = DeliveryOutcome(rawValue: "InvalidCredentials")
    public static let invalidNotificationFormat = DeliveryOutcome(rawValue: "InvalidNotificationFormat")
    public static let invalidNotificationSize = DeliveryOutcome(rawValue: "InvalidNotificationSize")
    /// The push service kept failing (5xx) after every retry.
    public static let pnsServerError = DeliveryOutcome(rawValue: "PnsServerError")
    public static let pnsUnavailable = DeliveryOutcome(rawValue: "PnsUnavailable")
    /// No connection to the push service could be made.
    public static let pnsUnreachable = DeliveryOutcome(rawValue: "PnsUnreachable")
    /// No provider is configured for the platform.
    public static let noProvider = DeliveryOutcome(rawValue: "PnsNotConfigured")
    /// A second registration with the same handle: sent once only.
    public static let skipped = DeliveryOutcome(rawValue: "Skipped")
    public static let dropped = DeliveryOutcome(rawValue: "Dropped")
    /// Not handed to the push service before the notification went stale (the push service
    /// refused every send for a reason that passes, such as APNs refusing a token update).
    public static let abandoned = DeliveryOutcome(rawValue: "AbandonedNotificationMessages")
    public static let unknownError = DeliveryOutcome(rawValue: "UnknownError")

    public var description: String { rawValue }
}

/// The life of a notification, as the hub reports it.
public enum NotificationState: String, Sendable, Hashable, Codable, CaseIterable {
    case enqueued = "Enqueued"
    case processing = "Processing"
    case completed = "Completed"
    case abandoned = "Abandoned"
    case noTargetFound = "NoTargetFound"
    /// Accepted for later: delivery starts at ``NotificationRecord/scheduledAt``.
    case scheduled = "Scheduled"
    /// A scheduled notification that was cancelled before it was due.
    case cancelled = "Cancelled"
}

extension NotificationState {
    /// Whether delivery has ended (nothing more will change).
    public var isFinal: Bool {
        switch self {
        case .enqueued, .processing, .scheduled: false
        case .completed, .abandoned, .noTargetFound, .cancelled: true
        }
    }
}
