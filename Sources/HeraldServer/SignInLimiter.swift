import Foundation
import Synchronization

/// Limits password guesses with three kinds of buckets of failed sign-ins:
///
/// - per account and client (``Limit/perAccountAndClient``: 10, then one a minute): the
///   guesses one client may make at one account. A success clears them. Someone else's
///   failures at an account never lock its owner out from the owner's own address.
/// - per account over every client (``Limit/perAccount``: 100, then one every 6 minutes, 240
///   a day): the ceiling against a guesser spread over many addresses. A success does not
///   clear it (a client signing in with HTTP Basic succeeds every minute); instead, a client
///   that signed in to the account in the last 30 days is not held back by it, so the owner's
///   usual devices keep working while someone guesses from elsewhere.
/// - per client (``Limit/perClient``: 300, then one a second): the guesses one client makes
///   over every account, high enough for the clients behind one proxy or NAT.
///
/// Each failure takes a token from the three; an empty bucket refuses further attempts (before
/// the password is checked, so a refused attempt tells nothing) with the seconds until a token
/// is back. A client is known by ``clientKey`` of its address (an IPv6 client by its /64).
///
/// The buckets of an account exist whether or not the account does, so a limit reached tells
/// nothing about which user names exist. They live in this process: with several nodes, an
/// attacker spread over all of them gets each node's allowance.
package final class SignInLimiter: Sendable {
    package typealias Limit = TokenBuckets.Limit

    private struct State {
        var pairs: TokenBuckets
        var accounts: TokenBuckets
        var clients: TokenBuckets
        /// The account–client pairs that signed in, and when.
        var trusted: [String: ContinuousClock.Instant] = [:]
    }

    /// How long a client that signed in to an account is exempt from the account's ceiling.
    static let trustedFor: Duration = .seconds(30 * 24 * 3600)
    private let capacity: Int
    private let state: Mutex<State>

    package init(
        perAccountAndClient: Limit = .perAccountAndClient,
        perAccount: Limit = .perAccount,
        perClient: Limit = .perClient,
        capacity: Int = 100_000
    ) {
        self.capacity = capacity
        self.state = Mutex(
            State(
                pairs: TokenBuckets(perAccountAndClient, capacity: capacity),
                accounts: TokenBuckets(perAccount, capacity: capacity),
                clients: TokenBuckets(perClient, capacity: capacity)
            )
        )
    }

    /// Throws ``Throttled`` if the account and client, the account or the client has no
    /// failure left.
    package func check(account name: String, client: String) throws {
        let now = ContinuousClock.now
        let pair = Self.pair(name, client)
        let wait = state.withLock { state -> Double in
            let trusted = state.trusted[pair].map { now - $0 < Self.trustedFor } ?? false
            return max(
                state.pairs.wait(pair, now: now),
                trusted ? 0 : state.accounts.wait(name, now: now),
                state.clients.wait(client, now: now)
            )
        }
        guard wait > 0 else { return }
        let seconds = max(1, Int(wait.rounded(.up)))
        throw Throttled(retryAfterSeconds: seconds, message: "too many failed sign-ins; try again in \(seconds) s")
    }

    /// Takes a token from the pair's, the account's and the client's buckets.
    package func recordFailure(account name: String, client: String) {
        let now = ContinuousClock.now
        state.withLock { state in
            state.pairs.take(Self.pair(name, client), now: now)
            state.accounts.take(name, now: now)
            state.clients.take(client, now: now)
        }
    }

    /// Forgets the pair's failures, and exempts the pair from the account's ceiling.
    package func recordSuccess(account name: String, client: String) {
        let now = ContinuousClock.now
        let pair = Self.pair(name, client)
        state.withLock { state in
            state.pairs.remove(pair)
            if state.trusted[pair] == nil, state.trusted.count >= capacity {
                state.trusted = state.trusted.filter { now - $0.value < Self.trustedFor }
                if state.trusted.count >= capacity {
                    let oldest = state.trusted.sorted { $0.value < $1.value }.prefix(state.trusted.count - capacity + 1)
                    for (key, _) in oldest { state.trusted.removeValue(forKey: key) }
                }
            }
            state.trusted[pair] = now
        }
    }

    private static func pair(_ account: String, _ client: String) -> String {
        "\(account)\u{0}\(client)"
    }
}

extension TokenBuckets.Limit {
    /// One client's failures at one account: 10, then one a minute.
    package static let perAccountAndClient = Self(burst: 10, refillSeconds: 60)
    /// An account's failures over every client: 100, then one every 6 minutes (240 a day).
    package static let perAccount = Self(burst: 100, refillSeconds: 360)
    /// One client's failures over every account: 300, then one a second.
    package static let perClient = Self(burst: 300, refillSeconds: 1)
}
