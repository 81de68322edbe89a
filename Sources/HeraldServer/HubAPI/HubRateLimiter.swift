import Foundation
import HeraldCore
import Synchronization

/// A token bucket per hub and class of caller: the hub API's requests per second, with bursts
/// of up to twice that. A caller over the limit gets 429 with the seconds until a token is free.
///
/// Requests signed with a Listen-only key (the devices: the key ships in apps, so anyone may
/// hold it) and requests signed with a key that has Send or Manage (the app's backend, its
/// operators) count in buckets of their own, each with the whole rate: a flood on the public
/// key cannot starve the backend's sends, and a hub takes up to twice the rate in all.
///
/// Several nodes behind one load balancer share the limit: each admits its share, the limit
/// divided by the number of live nodes. With requests spread evenly the hub gets about the
/// limit in all; unevenly, less, never more.
package final class HubRateLimiter: Sendable {
    let rate: Double
    let burst: Double
    private let buckets = Mutex<[String: (tokens: Double, at: ContinuousClock.Instant)]>([:])

    /// Who signed a request, for the bucket it counts in.
    package enum Caller: String, Sendable {
        /// A key with the Listen right only.
        case listen
        /// A key with Send or Manage.
        case sendOrManage
    }

    package init(requestsPerSecond: Int) {
        self.rate = Double(max(1, requestsPerSecond))
        self.burst = Double(max(1, requestsPerSecond)) * 2
    }

    /// Takes a token for a request to `hub` from `caller`, or throws ``Throttled``; `nodes`
    /// share the limit.
    package func admit(_ hub: String, caller: Caller, nodes: Int = 1) throws {
        let key = "\(hub)\u{0}\(caller.rawValue)"
        let now = ContinuousClock.now
        let share = Double(max(1, nodes))
        let rate = self.rate / share, burst = self.burst / share
        let wait: Double? = buckets.withLock { buckets in
            var bucket = buckets[key] ?? (burst, now)
            let elapsed = now - bucket.at
            bucket.tokens = min(burst, bucket.tokens + elapsed.seconds * rate)
            bucket.at = now
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                buckets[key] = bucket
                return nil
            }
            buckets[key] = bucket
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
