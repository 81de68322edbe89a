public import Foundation

/// The delivery queue of one store at a moment, for metrics
/// (``NotificationStore/queueStatistics(now:)``).
public struct QueueStatistics: Sendable, Hashable {
    /// Notifications and partitions that are due (enqueued, or scheduled for no later than
    /// now) and that no worker holds.
    public var waiting: Int
    /// Notifications and partitions a worker holds (its lease may have run out).
    public var processing: Int
    /// When the longest-waiting one of ``waiting`` became due (accepted, or its scheduled
    /// time); `nil` when none waits.
    public var oldestWaitingSince: Date?

    public init(waiting: Int, processing: Int, oldestWaitingSince: Date?) {
        self.waiting = waiting
        self.processing = processing
        self.oldestWaitingSince = oldestWaitingSince
    }
}
