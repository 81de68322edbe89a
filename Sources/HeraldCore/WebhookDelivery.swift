public import Foundation

/// An event waiting in a hub's outbox for one endpoint: due at ``dueAt``, tried
/// ``attempts`` times so far, and leased to the node sending it now.
public struct WebhookDelivery: Sendable, Hashable {
    public var eventID: String
    public var endpointID: String
    public var type: WebhookEventType
    /// The body to post, fixed when the event was recorded.
    public var body: String
    /// When the event was recorded: the retry window is counted from here.
    public var createdAt: Date
    public var dueAt: Date
    public var attempts: Int

    public init(eventID: String, endpointID: String, type: WebhookEventType, body: String, createdAt: Date, dueAt: Date, attempts: Int) {
        self.eventID = eventID
        self.endpointID = endpointID
        self.type = type
        self.body = body
        self.createdAt = createdAt
        self.dueAt = dueAt
        self.attempts = attempts
    }
}

/// One attempt at posting an event to an endpoint: a line of the endpoint's delivery log.
public struct WebhookAttempt: Sendable, Hashable, Codable {
    public enum Outcome: String, Sendable, Hashable, Codable {
        /// The endpoint answered 2xx.
        case delivered
        /// It failed; the event is tried again later.
        case retrying
        /// It failed and the retry window is over: the event is dropped and the endpoint
        /// disabled.
        case gaveUp = "gave-up"
    }

    public var eventID: String
    public var endpointID: String
    public var type: WebhookEventType
    /// 1 for the first attempt.
    public var attempt: Int
    public var at: Date
    /// The HTTP status the endpoint answered; `nil` when there was no answer.
    public var statusCode: Int?
    /// What went wrong, when it went wrong: never a secret, never the endpoint's answer body.
    public var error: String?
    public var durationMilliseconds: Int
    public var outcome: Outcome

    public init(
        eventID: String, endpointID: String, type: WebhookEventType, attempt: Int, at: Date, statusCode: Int?, error: String?,
        durationMilliseconds: Int, outcome: Outcome
    ) {
        self.eventID = eventID
        self.endpointID = endpointID
        self.type = type
        self.attempt = attempt
        self.at = at
        self.statusCode = statusCode
        self.error = error
        self.durationMilliseconds = durationMilliseconds
        self.outcome = outcome
    }
}

/// When a failed event is tried again: exponential backoff from ``initialDelay``, doubling
/// up to ``maximumDelay``, for as long as the ``window`` counted from the event's recording;
/// past it the event is given up and its endpoint disabled.
public struct WebhookRetrySchedule: Sendable, Hashable {
    public var initialDelay: Duration
    public var maximumDelay: Duration
    public var window: Duration

    /// 5 s, 10 s, 20 s, … up to one attempt an hour, for 24 hours.
    public static let standard = WebhookRetrySchedule(initialDelay: .seconds(5), maximumDelay: .seconds(3600), window: .seconds(86_400))

    public init(initialDelay: Duration, maximumDelay: Duration, window: Duration) {
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
        self.window = window
    }

    /// When to try again after `attempts` failed attempts (1 after the first), or `nil` to give
    /// up: the next attempt would come after the window of an event recorded at `createdAt`.
    public func nextAttempt(afterFailedAttempts attempts: Int, createdAt: Date, now: Date) -> Date? {
        let initial = initialDelay.seconds, maximum = max(initial, maximumDelay.seconds)
        let exponent = min(max(0, attempts - 1), 40)
        let delay = min(maximum, initial * pow(2, Double(exponent)))
        let next = now.addingTimeInterval(delay)
        guard next <= createdAt.addingTimeInterval(window.seconds) else { return nil }
        return next
    }
}
