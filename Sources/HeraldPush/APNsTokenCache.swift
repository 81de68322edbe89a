import Crypto
public import Foundation
import Synchronization

/// Provider tokens (ES256 JWTs) for APNs, one per team and key, shared by every
/// ``APNsProvider`` that uses the same cache.
///
/// Apple refuses a new token for a key more often than every 20 minutes
/// (`TooManyProviderTokenUpdates`), so a process must not mint one token per connection or
/// per provider: providers use ``shared`` unless a test injects its own cache and clock.
public final class APNsTokenCache: Sendable {
    /// The process-wide cache.
    public static let shared = APNsTokenCache()

    /// Apple's minimum interval between two new tokens of one key.
    public static let minimumRefreshInterval: TimeInterval = 20 * 60

    /// The clock that `iat` and token ages are read from.
    let now: @Sendable () -> Date
    private let entries = Mutex<[EntryKey: Entry]>([:])

    /// - Parameter now: the wall clock; inject one in tests to age tokens.
    public init(now: @escaping @Sendable () -> Date = Date.init) {
        self.now = now
    }

    /// The shared token slot of one (team, key).
    func entry(teamID: String, keyID: String) -> Entry {
        let key = EntryKey(teamID: teamID, keyID: keyID)
        return entries.withLock { entries in
            if let entry = entries[key] { return entry }
            let entry = Entry(teamID: teamID, keyID: keyID, now: now)
            entries[key] = entry
            return entry
        }
    }

    struct EntryKey: Hashable, Sendable {
        var teamID: String
        var keyID: String
    }

    /// The token of one (team, key): reused until its lifetime ends or APNs reports it expired.
    final class Entry: Sendable {
        let teamID: String
        let keyID: String
        let now: @Sendable () -> Date
        private let state = Mutex(APNsTokenState())

        init(teamID: String, keyID: String, now: @escaping @Sendable () -> Date) {
            self.teamID = teamID
            self.keyID = keyID
            self.now = now
        }

        /// The current token, signing a new one with `key` if there is none or it is older
        /// than `lifetime`.
        func token(
            key: P256.Signing.PrivateKey,
            lifetime: TimeInterval,
            signed: () -> Void = {}
        ) throws -> APNsProviderToken {
            let now = self.now()
            return try state.withLock { state in
                switch state.tokenNeeded(now: now, lifetime: lifetime) {
                case .use(let token):
                    return token
                case .sign(let generation):
                    // Signing under the lock: it happens once per lifetime, and concurrent
                    // senders must wait for this token rather than mint their own.
                    let token = try APNsProviderToken.sign(
                        teamID: teamID, keyID: keyID, key: key, issuedAt: now, generation: generation)
                    state.signed(token)
                    signed()
                    return token
                }
            }
        }

        /// APNs answered `ExpiredProviderToken` for `token`. Returns whether the token was
        /// dropped, so that the next send signs a new one.
        @discardableResult
        func expired(_ token: APNsProviderToken) -> Bool {
            let now = self.now()
            return state.withLock { $0.expiredProviderToken(token, now: now) }
        }
    }
}

/// One signed provider token and the `authorization` header value built from it once.
struct APNsProviderToken: Sendable, Hashable {
    /// `bearer <jwt>`.
    var authorization: String
    var issuedAt: Date
    /// Counts tokens of a slot, so that a late `ExpiredProviderToken` for an older token
    /// does not drop a newer one.
    var generation: Int

    var jwt: Substring { authorization.dropFirst("bearer ".count) }

    static func sign(
        teamID: String,
        keyID: String,
        key: P256.Signing.PrivateKey,
        issuedAt: Date,
        generation: Int
    ) throws -> APNsProviderToken {
        struct Header: Encodable {
            var alg = "ES256"
            var kid: String
        }
        struct Claims: Encodable {
            var iss: String
            var iat: Int
        }
        let jwt = try JSONWebToken.es256(
            header: Header(kid: keyID),
            claims: Claims(iss: teamID, iat: Int(issuedAt.timeIntervalSince1970.rounded(.down))),
            key: key
        )
        return APNsProviderToken(authorization: "bearer " + jwt, issuedAt: issuedAt, generation: generation)
    }
}

/// When to reuse a provider token and when to sign a new one, with no I/O.
struct APNsTokenState: Sendable {
    enum Action: Equatable {
        case use(APNsProviderToken)
        /// Sign a token and report it with ``signed(_:)``.
        case sign(generation: Int)
    }

    private(set) var current: APNsProviderToken?
    private var lastGeneration = 0

    func tokenNeeded(now: Date, lifetime: TimeInterval) -> Action {
        if let current, now.timeIntervalSince(current.issuedAt) < lifetime {
            // A clock that steps backwards keeps the token: its age is negative.
            return .use(current)
        }
        return .sign(generation: lastGeneration + 1)
    }

    mutating func signed(_ token: APNsProviderToken) {
        current = token
        lastGeneration = token.generation
    }

    /// Drops `token` if it is still the current one and old enough that Apple accepts a
    /// new token for the key; a younger token is kept, since a new one would be refused
    /// with `TooManyProviderTokenUpdates` (and its `iat` would be no later anyway).
    mutating func expiredProviderToken(_ token: APNsProviderToken, now: Date) -> Bool {
        guard let current, current.generation == token.generation,
            now.timeIntervalSince(current.issuedAt) >= APNsTokenCache.minimumRefreshInterval
        else { return false }
        self.current = nil
        return true
    }
}
