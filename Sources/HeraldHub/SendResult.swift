public import HeraldCore
public import HeraldStore

/// What ``HubEngine/send(_:)`` did: the notification, and for a send delivered at once (a test
/// send, or a send to one registration) each registration's outcome.
public struct SendResult: Sendable, Hashable {
    /// One registration that a test send reached, and what became of its notification.
    public struct Result: Sendable, Hashable {
        public var registration: Registration
        public var outcome: DeliveryOutcome

        public init(registration: Registration, outcome: DeliveryOutcome) {
            self.registration = registration
            self.outcome = outcome
        }
    }

    /// The notification: as accepted for a send through the queue, finished for a test send
    /// (``HubEngine/notification(id:)`` returns it too).
    public var record: NotificationRecord
    /// For a test send, one per registration reached, in the order of their ids; empty for a
    /// send through the queue.
    public var results: [Result]
    /// For a send repeated under its idempotency key, what the first one stored: ``record`` is
    /// then the notification that one created (as it is now), and nothing was sent. `nil` for
    /// a send that created its notification.
    public var replay: IdempotentReplay?

    public init(record: NotificationRecord, results: [Result], replay: IdempotentReplay? = nil) {
        self.record = record
        self.results = results
        self.replay = replay
    }
}
