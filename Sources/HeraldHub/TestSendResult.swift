public import HeraldCore

/// What a test send did: the notification as stored (finished) and each device's outcome.
public struct TestSendResult: Sendable, Hashable {
    /// One registration that the test send reached, and what became of its notification.
    public struct Result: Sendable, Hashable {
        public var registration: Registration
        public var outcome: DeliveryOutcome

        public init(registration: Registration, outcome: DeliveryOutcome) {
            self.registration = registration
            self.outcome = outcome
        }
    }

    /// The finished notification; ``HubEngine/notification(id:)`` returns it too.
    public var record: NotificationRecord
    /// One per registration reached, in the order of their ids.
    public var results: [Result]

    public init(record: NotificationRecord, results: [Result]) {
        self.record = record
        self.results = results
    }
}
