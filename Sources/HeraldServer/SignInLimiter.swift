import Foundation
import Synchronization

/// Limits password guesses: a bucket of failed sign-ins per account and one per client
/// address. Each failure takes a token; tokens come back at a steady rate; an empty bucket
/// refuses further attempts (before the password is checked, so a refused attempt tells
/// nothing) with the seconds until a token is back. A successful sign-in refills its account's
/// bucket.
///
/// The buckets of an account exist whether or not the account does, so a limit reached tells
/// nothing about which user names exist. They live in this process: with several nodes, an
/// attacker spread over all of them gets each node's allowance.
package final class SignInLimiter: Sendable {
    package struct Limit: Sendable, Hashable {
        /// Failures allowed in a burst.
        package var burst: Int
        /// Seconds for one failure's token to come back.
        package var refillSeconds: Double

        package init(burst: Int, refillSeconds: Double) {
            self.burst = burst
            self.refillSeconds = refillSeconds
        }

        /// 10 failures, then one a minute.
        package static let perAccount = Limit(burst: 10, refillSeconds: 60)
        /// 30 failures, then one every 6 seconds (10 a minute).
        package static let perAddress = Limit(burst: 30, refillSeconds: 6)
    }

    private struct Bucket {
        var tokens: Double
        var at: ContinuousClock.Instant
    }

    private let account: Limit
    private let address: Limit
    /// Buckets kept at most per kind; full buckets are dropped first when there are more.
    private let capacity: Int
    private let buckets = Mutex<(accounts: [String: Bucket], addresses: [String: Bucket])>(([:], [:]))

    package init(perAccount: Limit = .perAccount, perAddress: Limit = .perAddress, capacity: Int = 100_000) {
        self.account = perAccount
        self.address = perAddress
        self.capacity = capacity
    }

    /// Throws ``Throttled`` if the account or the address has no failure left.
    package func check(account name: String, address client: String) throws {
        let now = ContinuousClock.now
        let wait = buckets.withLock { buckets -> Double in
            max(
                Self.wait(&buckets.accounts, name, account, now),
                Self.wait(&buckets.addresses, client, address, now)
            )
        }
        guard wait > 0 else { return }
        let seconds = max(1, Int(wait.rounded(.up)))
        throw Throttled(retryAfterSeconds: seconds, message: "too many failed sign-ins; try again in \(seconds) s")
    }

    /// Takes a token from the account's and the address's buckets.
    package func recordFailure(account name: String, address client: String) {
        let now = ContinuousClock.now
        buckets.withLock { buckets in
            Self.take(&buckets.accounts, name, account, now, capacity: capacity)
            Self.take(&buckets.addresses, client, address, now, capacity: capacity)
        }
    }

    /// Forgets the account's failures.
    package func recordSuccess(account name: String) {
        _ = buckets.withLock { $0.accounts.removeValue(forKey: name) }
    }

    /// The seconds until `key`'s bucket has a token; 0 if it has one.
    private static func wait(_ buckets: inout [String: Bucket], _ key: String, _ limit: Limit, _ now: ContinuousClock.Instant) -> Double {
        guard var bucket = buckets[key] else { return 0 }
        refill(&bucket, limit, now)
        buckets[key] = bucket
        return bucket.tokens >= 1 ? 0 : (1 - bucket.tokens) * limit.refillSeconds
    }

    private static func take(
        _ buckets: inout [String: Bucket], _ key: String, _ limit: Limit, _ now: ContinuousClock.Instant, capacity: Int
    ) {
        var bucket = buckets[key] ?? Bucket(tokens: Double(limit.burst), at: now)
        refill(&bucket, limit, now)
        bucket.tokens = max(0, bucket.tokens - 1)
        if buckets[key] == nil, buckets.count >= capacity {
            // Full buckets tell nothing: drop them; if every bucket is in use, the oldest go.
            buckets = buckets.filter { _, other in
                var other = other
                refill(&other, limit, now)
                return other.tokens < Double(limit.burst)
            }
            if buckets.count >= capacity {
                let oldest = buckets.sorted { $0.value.at < $1.value.at }.prefix(buckets.count - capacity + 1)
                for (key, _) in oldest { buckets.removeValue(forKey: key) }
            }
        }
        buckets[key] = bucket
    }

    private static func refill(_ bucket: inout Bucket, _ limit: Limit, _ now: ContinuousClock.Instant) {
        let elapsed = (now - bucket.at) / .seconds(1)
        bucket.tokens = min(Double(limit.burst), bucket.tokens + elapsed / limit.refillSeconds)
        bucket.at = now
    }
}
