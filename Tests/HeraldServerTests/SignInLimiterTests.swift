@testable import HeraldServer
import Testing

/// The limiter's memory is bounded: past its capacity, the oldest buckets go first.
@Suite struct SignInLimiterTests {
    @Test func pastItsCapacityTheOldestBucketIsDropped() throws {
        let limiter = SignInLimiter(
            perAccount: .init(burst: 1, refillSeconds: 3600), perAddress: .init(burst: 100, refillSeconds: 1), capacity: 2
        )
        limiter.recordFailure(account: "a", address: "x")
        #expect(throws: Throttled.self) { try limiter.check(account: "a", address: "x") }
        limiter.recordFailure(account: "b", address: "x")
        limiter.recordFailure(account: "c", address: "x")
        // "a" was the oldest of three buckets kept two at most: it is gone, "b" and "c" are not.
        try limiter.check(account: "a", address: "x")
        #expect(throws: Throttled.self) { try limiter.check(account: "b", address: "x") }
        #expect(throws: Throttled.self) { try limiter.check(account: "c", address: "x") }
    }
}
