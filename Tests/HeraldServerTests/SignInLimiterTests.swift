import Testing

@testable import HeraldServer

/// The limiter's memory is bounded: past its capacity, the oldest buckets go first.
@Suite struct SignInLimiterTests {
    @Test func pastItsCapacityTheOldestBucketIsDropped() throws {
        let limiter = SignInLimiter(
            perAccountAndClient: .init(burst: 1, refillSeconds: 3600), perAccount: .init(burst: 100, refillSeconds: 1),
            perClient: .init(burst: 100, refillSeconds: 1), capacity: 2
        )
        limiter.recordFailure(account: "a", client: "x")
        #expect(throws: Throttled.self) { try limiter.check(account: "a", client: "x") }
        limiter.recordFailure(account: "b", client: "x")
        limiter.recordFailure(account: "c", client: "x")
        // "a" was the oldest of three buckets kept two at most: it is gone, "b" and "c" are not.
        try limiter.check(account: "a", client: "x")
        #expect(throws: Throttled.self) { try limiter.check(account: "b", client: "x") }
        #expect(throws: Throttled.self) { try limiter.check(account: "c", client: "x") }
    }
}
