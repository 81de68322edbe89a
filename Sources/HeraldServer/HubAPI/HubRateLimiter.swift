import Foundation
import HeraldCore
import Synchronization

/// A token bucket per hub: the hub API's requests per second, with bursts of up to twice
/// that. A caller over the limit gets 429 with the seconds until a token is free.
///
/// Several nodes behind one load balancer share the limit: each admits its share, the limit
/// divided by the number of live nodes. With requests spread evenly the hub gets about the
/// limit in all; unevenly, less, never more.
package final class HubRateLimiter: Sendable {
    let rate: Double
    let burst: Double
    private let buckets = Mutex<[String: (tokens: Double, at: ContinuousClock.Instant)]>([:])

    package init(requestsPerSecond: Int) {
        self.rate = Double(max(1, requestsPerSecond))
        self.burst = Double(max(1, requestsPerSecond)) * 2
    }

    /// Takes a token for a request to `hub`, or throws ``Throttled``; `nodes` share the limit.
    package func admit(_ hub: String, nodes: Int = 1) throws {
        let now = ContinuousClock.now
        let share = Double(max(1, nodes))
        let rate = self.rate / share, burst = self.burst / share
        let wait: Double? = buckets.withLock { buckets in
            var bucket = buckets[hub] ?? (burst, now)
            let elapsed = now - bucket.at
            bucket.tokens = min(burst, bucket.tokens + elapsed.seconds * rate)
            bucket.at = now
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                buckets[hub] = bucket
                return nil
            }
            buckets[hub] = bucket
            return (1 - bucket.tokens) / rate
        }
        if let wait {
            let seconds = max(1, Int(wait.rounded(.up)))
            throw Throttled(
                retryAfterSeconds: seconds, message: "the hub is receiving more requests than it accepts; retry after \(seconds) s"
            )
        }
    }
}
