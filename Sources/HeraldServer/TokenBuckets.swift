/// Token buckets by key, as a value to keep under a lock: each key starts with a burst of
/// tokens, spends one per event, and gets them back at a steady rate. Keys with a full bucket
/// tell nothing, so they are dropped first when the table is at its capacity; the oldest go
/// next.
package struct TokenBuckets {
    /// A bucket's size and how fast it fills.
    package struct Limit: Sendable, Hashable {
        /// Events allowed in a burst.
        package var burst: Int
        /// Seconds for one event's token to come back.
        package var refillSeconds: Double

        package init(burst: Int, refillSeconds: Double) {
            self.burst = burst
            self.refillSeconds = refillSeconds
        }
    }

    private struct Bucket {
        var tokens: Double
        var at: ContinuousClock.Instant
    }

    let limit: Limit
    /// Keys kept at most.
    let capacity: Int
    private var buckets: [String: Bucket] = [:]

    init(_ limit: Limit, capacity: Int = 100_000) {
        self.limit = limit
        self.capacity = capacity
    }

    /// The seconds until `key`'s bucket has a token; 0 if it has one.
    mutating func wait(_ key: String, now: ContinuousClock.Instant) -> Double {
        guard var bucket = buckets[key] else { return 0 }
        refill(&bucket, now)
        buckets[key] = bucket
        return bucket.tokens >= 1 ? 0 : (1 - bucket.tokens) * limit.refillSeconds
    }

    /// Takes a token from `key`'s bucket (an empty bucket stays empty).
    mutating func take(_ key: String, now: ContinuousClock.Instant) {
        var bucket = buckets[key] ?? Bucket(tokens: Double(limit.burst), at: now)
        refill(&bucket, now)
        bucket.tokens = max(0, bucket.tokens - 1)
        store(bucket, key, now)
    }

    /// Takes a token if `key`'s bucket has one: `nil`; otherwise the seconds until it has.
    mutating func takeIfAvailable(_ key: String, now: ContinuousClock.Instant) -> Double? {
        let wait = wait(key, now: now)
        guard wait == 0 else { return wait }
        take(key, now: now)
        return nil
    }

    /// Forgets `key`'s events.
    mutating func remove(_ key: String) {
        buckets.removeValue(forKey: key)
    }

    private mutating func store(_ bucket: Bucket, _ key: String, _ now: ContinuousClock.Instant) {
        if buckets[key] == nil, buckets.count >= capacity {
            buckets = buckets.filter { _, other in
                var other = other
                refill(&other, now)
                return other.tokens < Double(limit.burst)
            }
            if buckets.count >= capacity {
                let oldest = buckets.sorted { $0.value.at < $1.value.at }.prefix(buckets.count - capacity + 1)
                for (key, _) in oldest { buckets.removeValue(forKey: key) }
            }
        }
        buckets[key] = bucket
    }

    private func refill(_ bucket: inout Bucket, _ now: ContinuousClock.Instant) {
        let elapsed = (now - bucket.at) / .seconds(1)
        bucket.tokens = min(Double(limit.burst), bucket.tokens + elapsed / limit.refillSeconds)
        bucket.at = now
    }
}
