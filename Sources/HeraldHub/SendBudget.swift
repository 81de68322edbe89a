public import HeraldCore
import Synchronization

/// The send budget of one push credential on this node: a token bucket that every hub
/// sending with the credential draws from, and a pause that a throttling answer (a `429` with
/// `Retry-After`) puts on all of its sends at once.
///
/// Sends reserve their tokens before they go: a reservation always succeeds and says how long
/// to wait before sending, so that waiting sends go in the order they asked, at the rate, with
/// bursts of up to one second's worth. Nodes share the rate as they share the hub API's:
/// each spends its share, the rate divided by the number of live nodes.
public final class SendBudget: Sendable {
    public let platform: Platform
    /// What identifies the credential (a key id, a project id; never a secret).
    public let credential: String

    /// The reason given for sends that waited for the budget and were not made.
    static let waitReason = "send budget"

    private struct State {
        var rate: SendRate?
        var nodes = 1
        /// Tokens on hand at `at`; negative while sends wait for tokens already reserved.
        var tokens: Double
        var at: ContinuousClock.Instant
        var pausedUntil: ContinuousClock.Instant?
        /// Throttling answers in a row, for the pause's length when they name none.
        var throttledInARow = 0
        var waited: Duration = .zero
        var waitedReported: Duration = .zero

        var perSecond: Double? { rate.map { $0.perSecond / Double(max(1, nodes)) } }
        var burst: Double { max(1, perSecond ?? 1) }

        mutating func refill(_ now: ContinuousClock.Instant) {
            guard let perSecond else { return }
            tokens = min(burst, tokens + (now - at).seconds * perSecond)
            at = now
        }
    }

    private let state: Mutex<State>

    init(platform: Platform, credential: String, rate: SendRate?, now: ContinuousClock.Instant = .now) {
        self.platform = platform
        self.credential = credential
        let perSecond = rate.map { max(1, $0.perSecond) } ?? 1
        self.state = Mutex(State(rate: rate, tokens: perSecond, at: now))
    }

    /// The budget's rate (`nil`: only pauses), for all nodes together.
    public var rate: SendRate? { state.withLock { $0.rate } }

    /// What the budget holds now: the rate of this node's share, the tokens on hand (negative
    /// while sends wait), how long sends are paused for, and the time sends waited in all.
    public func snapshot(now: ContinuousClock.Instant = .now) -> Snapshot {
        state.withLock { state in
            state.refill(now)
            return Snapshot(
                rate: state.rate, nodeShare: state.perSecond.map { $0 * 60 }, available: state.perSecond == nil ? nil : state.tokens,
                burst: state.burst, pausedFor: state.pausedUntil.map { max(.zero, $0 - now) } ?? .zero, waited: state.waited
            )
        }
    }

    /// The time sends waited since the last call, for a counter.
    public func unreportedWait() -> Duration {
        state.withLock { state in
            defer { state.waitedReported = state.waited }
            return state.waited - state.waitedReported
        }
    }

    public struct Snapshot: Sendable {
        public var rate: SendRate?
        /// This node's share of the rate, per minute.
        public var nodeShare: Double?
        /// Tokens on hand (`nil` without a rate); negative while sends wait.
        public var available: Double?
        /// The most tokens the budget holds: one second of this node's share.
        public var burst: Double
        public var pausedFor: Duration
        /// How long sends waited for this budget, in all (each wait counted once per batch).
        public var waited: Duration
    }

    /// Sets the rate (every hub that shares the credential sets it: the last one set counts)
    /// and the number of nodes that share it.
    func update(rate: SendRate?, nodes: Int? = nil, now: ContinuousClock.Instant = .now) {
        state.withLock { state in
            state.refill(now)
            let hadRate = state.rate != nil
            state.rate = rate
            if let nodes { state.nodes = max(1, nodes) }
            // A budget that had no rate starts full; one that had keeps what it holds.
            state.tokens = hadRate ? min(state.tokens, state.burst) : state.burst
            state.at = now
        }
    }

    /// The most sends to reserve at once: one second's worth of this node's share (`nil`
    /// without a rate).
    var batchLimit: Int? {
        state.withLock { state in state.perSecond.map { _ in max(1, Int(state.burst)) } }
    }

    /// Sets the number of nodes that share the rate (the rate stays as it is).
    func share(among nodes: Int, now: ContinuousClock.Instant = .now) {
        state.withLock { state in
            state.refill(now)
            state.nodes = max(1, nodes)
            state.tokens = min(state.tokens, state.burst)
        }
    }

    /// Reserves `count` sends and returns how long to wait before making them: zero while
    /// tokens and no pause remain.
    func reserve(_ count: Int, now: ContinuousClock.Instant = .now) -> Duration {
        state.withLock { state in
            state.refill(now)
            let paused = state.pausedUntil.map { max(.zero, $0 - now) } ?? .zero
            guard let perSecond = state.perSecond else {
                state.waited += paused
                return paused
            }
            state.tokens -= Double(count)
            let short = state.tokens < 0 ? Duration.seconds(-state.tokens / perSecond) : .zero
            let wait = max(short, paused)
            state.waited += wait
            return wait
        }
    }

    /// Gives back sends reserved and not made (their wait was interrupted).
    func refund(_ count: Int, now: ContinuousClock.Instant = .now) {
        state.withLock { state in
            state.refill(now)
            guard state.perSecond != nil else { return }
            state.tokens = min(state.burst, state.tokens + Double(count))
        }
    }

    /// The push service throttled the credential: every send waits `retryAfter` seconds, or
    /// (when it named none) 1 s, 2 s, 4 s, … up to a minute for throttling answers in a row.
    /// A pause that ends later already stands.
    ///
    /// - Returns: whether this answer started a pause (rather than fell in one).
    @discardableResult
    func throttled(retryAfter: Double?, now: ContinuousClock.Instant = .now) -> Bool {
        state.withLock { state in
            if let until = state.pausedUntil, until > now { return false }
            state.throttledInARow += 1
            let length =
                retryAfter.map { Duration.seconds(min(max($0, 0.1), 3600)) }
                ?? .seconds(min(60, 1 << min(state.throttledInARow - 1, 6)))
            state.pausedUntil = now + length
            return true
        }
    }

    /// A send went through: throttling answers are no longer in a row.
    func accepted() {
        state.withLock { $0.throttledInARow = 0 }
    }
}

/// Every credential's ``SendBudget`` on this node, shared by the hubs that send with it.
public final class SendBudgets: Sendable {
    private struct Key: Hashable {
        var platform: Platform
        var credential: String
    }

    private let state = Mutex<(budgets: [Key: SendBudget], nodes: Int)>(([:], 1))

    public init() {}

    /// The budget of `credential`, made if needed, with `rate` as its rate from now on.
    public func budget(platform: Platform, credential: String, rate: SendRate?) -> SendBudget {
        let (budget, nodes) = state.withLock { state in
            let key = Key(platform: platform, credential: credential)
            if let budget = state.budgets[key] { return (budget, state.nodes) }
            let budget = SendBudget(platform: platform, credential: credential, rate: rate)
            state.budgets[key] = budget
            return (budget, state.nodes)
        }
        budget.update(rate: rate, nodes: nodes)
        return budget
    }

    /// Every budget, for the metrics and the console.
    public var all: [SendBudget] {
        state.withLock { Array($0.budgets.values) }.sorted { ($0.platform.rawValue, $0.credential) < ($1.platform.rawValue, $1.credential) }
    }

    /// The number of live nodes that share every budget.
    public func share(among nodes: Int) {
        let budgets = state.withLock { state in
            state.nodes = max(1, nodes)
            return Array(state.budgets.values)
        }
        for budget in budgets { budget.share(among: nodes) }
    }
}
