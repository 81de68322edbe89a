import Synchronization

/// Sign-ups per client (``SocketAddress/clientKey``): a token bucket of
/// ``ServerConfiguration/signUpsPerMinute`` (by default 10, then 5 a minute).
/// Every attempt takes a token, so a client can neither flood the password-hashing pool nor
/// probe many user names for `409`.
package final class SignUpLimiter: Sendable {
    private let buckets: Mutex<TokenBuckets>

    package init(_ limit: TokenBuckets.Limit) {
        self.buckets = Mutex(TokenBuckets(limit))
    }

    /// Takes a token for a sign-up from `client`, or throws ``Throttled``.
    package func admit(client: String) throws {
        let now = ContinuousClock.now
        guard let wait = buckets.withLock({ $0.takeIfAvailable(client, now: now) }) else { return }
        let seconds = max(1, Int(wait.rounded(.up)))
        throw Throttled(retryAfterSeconds: seconds, message: "too many sign-ups from your address; try again in \(seconds) s")
    }
}
