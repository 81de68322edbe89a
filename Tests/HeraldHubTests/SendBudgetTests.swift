import Foundation
import HeraldCore
import Testing

@testable import HeraldHub

/// The token bucket of a credential: reservations, the nodes' shares, throttling pauses.
@Suite struct SendBudgetTests {
    static let start = ContinuousClock.now

    static func at(_ seconds: Double) -> ContinuousClock.Instant { start + .seconds(seconds) }

    /// Whether `duration` is `seconds`, to the microsecond (the bucket counts in floating point).
    static func lasts(_ duration: Duration, _ seconds: Double) -> Bool { abs(duration.seconds - seconds) < 1e-6 }

    @Test func aBudgetLetsOneSecondGoAtOnceThenPacesTheRest() throws {
        let budget = SendBudget(platform: .fcm, credential: "project", rate: try SendRate(perMinute: 600), now: Self.at(0))
        #expect(budget.batchLimit == 10)
        #expect(Self.lasts(budget.reserve(10, now: Self.at(0)), 0))
        #expect(Self.lasts(budget.reserve(5, now: Self.at(0)), 0.5))
        // Those five are owed: the next send waits behind them.
        #expect(Self.lasts(budget.reserve(1, now: Self.at(0.2)), 0.4))
        // After a quiet while the bucket is full again, but never holds more than a second.
        #expect(Self.lasts(budget.reserve(10, now: Self.at(10)), 0))
        #expect(Self.lasts(budget.reserve(1, now: Self.at(10)), 0.1))
    }

    @Test func sendsNotMadeAreGivenBack() throws {
        let budget = SendBudget(platform: .fcm, credential: "project", rate: try SendRate(perMinute: 600), now: Self.at(0))
        #expect(Self.lasts(budget.reserve(30, now: Self.at(0)), 2))
        budget.refund(30, now: Self.at(0))
        #expect(Self.lasts(budget.reserve(10, now: Self.at(0)), 0))
    }

    @Test func nodesShareTheRate() throws {
        let budgets = SendBudgets()
        let budget = budgets.budget(platform: .fcm, credential: "project", rate: try SendRate(perMinute: 1200))
        budgets.share(among: 2)
        #expect(budget.batchLimit == 10, "each of two nodes spends half of 20 a second")
        #expect(budget.snapshot().nodeShare == 600)
        #expect(budget.snapshot().rate?.perMinute == 1200)
    }

    @Test func hubsSendingWithOneCredentialShareItsBudget() throws {
        let budgets = SendBudgets()
        let first = budgets.budget(platform: .fcm, credential: "project", rate: try SendRate(perMinute: 600))
        let second = budgets.budget(platform: .fcm, credential: "project", rate: try SendRate(perMinute: 1200))
        let other = budgets.budget(platform: .fcm, credential: "another-project", rate: nil)
        #expect(first === second)
        #expect(first.rate?.perMinute == 1200, "the rate last set counts")
        #expect(other !== first && other.batchLimit == nil)
        #expect(budgets.all.count == 2)
    }

    @Test func aThrottlingAnswerPausesEverySendOfTheCredential() throws {
        let budget = SendBudget(platform: .fcm, credential: "project", rate: nil, now: Self.at(0))
        #expect(Self.lasts(budget.reserve(1000, now: Self.at(0)), 0), "without a rate, nothing waits")
        #expect(budget.throttled(retryAfter: 3, now: Self.at(0)))
        #expect(!budget.throttled(retryAfter: 3, now: Self.at(1)), "an answer within the pause starts none")
        #expect(Self.lasts(budget.reserve(1, now: Self.at(1)), 2))
        // Without Retry-After: 1 s, then 2 s, 4 s, … for answers in a row, until one goes through.
        #expect(budget.throttled(retryAfter: nil, now: Self.at(3)))
        #expect(Self.lasts(budget.reserve(1, now: Self.at(3)), 2), "the second answer in a row")
        budget.accepted()
        #expect(budget.throttled(retryAfter: nil, now: Self.at(10)))
        #expect(Self.lasts(budget.reserve(1, now: Self.at(10)), 1))
        #expect(Self.lasts(budget.snapshot(now: Self.at(10)).waited, 5))
        #expect(Self.lasts(budget.unreportedWait(), 5))
        #expect(Self.lasts(budget.unreportedWait(), 0))
    }
}
