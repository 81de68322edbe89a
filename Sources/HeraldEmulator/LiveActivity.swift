public import Foundation
public import HeraldCore

/// A Live Activity on a virtual device of the APNs emulator: started in the app (with an update
/// token or on a broadcast channel) or by a push-to-start push, changed by `update` pushes and
/// broadcasts, and ended by an `end` push.
public struct LiveActivity: Sendable, Hashable, Codable {
    /// What the person sees, as ActivityKit's `ActivityState` tells it.
    public enum State: String, Sendable, Hashable, Codable {
        case active
        /// Active, and its `stale-date` has passed.
        case stale
        /// Ended, and still on the Lock Screen (until its dismissal date, by default 4 hours).
        case ended
        /// Ended and removed from the Lock Screen.
        case dismissed
    }

    public var id: String
    /// The app's bundle id.
    public var topic: String
    /// The `attributes-type` (the app's `ActivityAttributes` type name).
    public var attributesType: String
    public var attributes: JSONValue?
    public var contentState: JSONValue?
    /// The state at the moment it was read (stale and dismissed follow the dates).
    public var state: State
    /// The token that `update` and `end` pushes to this activity go to (`nil` for an activity
    /// that listens on a broadcast channel).
    public var updateToken: String?
    /// The broadcast channel it listens on.
    public var channelID: String?
    /// The push-to-start token whose push started it (`nil` when the app started it).
    public var startedBy: String?
    public var staleDate: Date?
    public var dismissalDate: Date?
    public var relevanceScore: Double?
    /// The `timestamp` of the newest push applied: an older one is ignored, as ActivityKit does.
    public var timestamp: Int
    public var startedAt: Date
    public var endedAt: Date?
    /// The pushes that reached it (start, updates, end, broadcasts), oldest first; the newest
    /// are kept as for device inboxes.
    public var received: [ReceivedNotification]

    /// A Live Activity ends on the Lock Screen this long after its end unless a dismissal date says otherwise.
    public static let defaultDismissalInterval: TimeInterval = 4 * 3600
}

/// A broadcast channel of the APNs emulator, as the management API describes it.
public struct BroadcastChannel: Sendable, Hashable, Codable {
    /// Base64, as APNs gives it in `apns-channel-id`.
    public var id: String
    public var topic: String
    /// 0: no message stored; 1: the most recent message stored.
    public var messageStoragePolicy: Int
    /// The activities listening on it.
    public var subscribers: Int
}
