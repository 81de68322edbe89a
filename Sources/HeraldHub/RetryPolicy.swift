import HeraldCore

/// How the hub retries a send that a push service called retryable: exponential backoff
/// with full jitter, honouring `Retry-After`, bounded in attempts and in wait.
public struct RetryPolicy: Sendable, Hashable {
    /// Attempts in all, the first included.
    public var maxAttempts: Int
    /// Backoff before the second attempt; doubles each time.
    public var baseDelay: Duration
    /// Longest backoff between two attempts.
    public var maxDelay: Duration
    /// A `Retry-After` longer than this ends the retries (the notification would go stale).
    public var maxRetryAfter: Duration

    public init(
        maxAttempts: Int = 4,
        baseDelay: Duration = .milliseconds(200),
        maxDelay: Duration = .seconds(10),
        maxRetryAfter: Duration = .seconds(60)
    ) {
        self.maxAttempts = max(1, maxAttempts)
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.maxRetryAfter = maxRetryAfter
    }

    /// What to do after attempt `attempt` (1-based) was retryable.
    public enum Decision: Sendable, Hashable {
        case retry(after: Duration)
        case giveUp
    }

    /// Decides whether and when to try again. `random` picks the jitter in `0...1`.
    public func decide(
        afterAttempt attempt: Int,
        retryAfter: Double?,
        random: (ClosedRange<Double>) -> Double = { Double.random(in: $0) }
    ) -> Decision {
        guard attempt < maxAttempts else { return .giveUp }
        if let retryAfter {
            let wait = Duration.milliseconds(Int64((max(0, retryAfter) * 1000).rounded(.up)))
            return wait > maxRetryAfter ? .giveUp : .retry(after: wait)
        }
        let exponent = min(attempt - 1, 30)
        let ceiling = min(baseDelay * (1 << exponent), maxDelay)
        return .retry(after: .milliseconds(Int64((ceiling.seconds * random(0...1) * 1000).rounded())))
    }
}
