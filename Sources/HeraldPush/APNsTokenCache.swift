package import Crypto
public import Foundation
public import Logging
import Synchronization

/// Provider tokens (ES256 JWTs) for APNs, one per team, key id and key, shared by every
/// ``APNsProvider`` that uses the same cache and, through its ``ProviderTokenStorage``, by
/// every process on the same data.
///
/// A team id and a key id are not secret (they are in every token): a slot is also named by
/// the fingerprint of the signing key's public key, and a token read from the storage is used
/// only once its signature checks out with that key and it names that team and key id. A hub
/// given another tenant's ids with a key of its own neither uses nor replaces that tenant's
/// token.
///
/// Apple refuses a new token for a key more often than every 20 minutes
/// (`TooManyProviderTokenUpdates`), so a process must not mint one token per connection or
/// per provider, nor one per start: a token signed here is stored, and a process that starts
/// (or another node) goes on with the stored token for as long as it is valid. Providers use
/// the cache the server makes with its storage; tests inject their own cache and clock.
public final class APNsTokenCache: Sendable {
    /// A cache with no storage: tokens live as long as the process.
    public static let shared = APNsTokenCache()

    /// Apple's minimum interval between two new tokens of one key.
    public static let minimumRefreshInterval: TimeInterval = 20 * 60
    /// How long APNs accepts a token after its `iat`.
    public static let validity: TimeInterval = 60 * 60

    /// The clock that `iat` and token ages are read from.
    let now: @Sendable () -> Date
    let storage: (any ProviderTokenStorage)?
    let logger: Logger
    private let entries = Mutex<[EntryKey: Entry]>([:])

    /// - Parameters:
    ///   - storage: where tokens are kept beyond the process and shared with other nodes;
    ///     `nil` keeps them in memory only.
    ///   - logger: told when the storage cannot be read or written (sends go on regardless).
    ///   - now: the wall clock; inject one in tests to age tokens.
    public init(
        storage: (any ProviderTokenStorage)? = nil,
        logger: Logger = Logger(label: "herald.apns"),
        now: @escaping @Sendable () -> Date = Date.init
    ) {
        self.storage = storage
        self.logger = logger
        self.now = now
    }

    /// The shared token slot of one team, key id and signing key.
    func entry(teamID: String, keyID: String, publicKey: P256.Signing.PublicKey) -> Entry {
        let key = EntryKey(teamID: teamID, keyID: keyID, fingerprint: Self.fingerprint(publicKey))
        return entries.withLock { entries in
            if let entry = entries[key] { return entry }
            let entry = Entry(teamID: teamID, keyID: keyID, publicKey: publicKey, fingerprint: key.fingerprint, cache: self)
            entries[key] = entry
            return entry
        }
    }

    /// The first 16 bytes of the SHA-256 of the public key (X9.63 form), in hex.
    package static func fingerprint(_ key: P256.Signing.PublicKey) -> String {
        SHA256.hash(data: key.x963Representation).prefix(16).map { byte in
            let digits = Array("0123456789abcdef")
            return String([digits[Int(byte >> 4)], digits[Int(byte & 0xF)]])
        }.joined()
    }

    struct EntryKey: Hashable, Sendable {
        var teamID: String
        var keyID: String
        var fingerprint: String
    }

    /// The token of one (team, key): reused until its lifetime ends or APNs reports it expired.
    final class Entry: Sendable {
        let teamID: String
        let keyID: String
        /// The key tokens of this slot are signed with: a stored token is checked against it.
        let publicKey: P256.Signing.PublicKey
        let fingerprint: String
        let now: @Sendable () -> Date
        private let storage: (any ProviderTokenStorage)?
        private let logger: Logger
        private let state = Mutex(APNsTokenState())
        /// The refresh in progress, which every sender that needs a token waits for.
        private let refreshing = Mutex<Task<APNsProviderToken, any Error>?>(nil)

        init(teamID: String, keyID: String, publicKey: P256.Signing.PublicKey, fingerprint: String, cache: APNsTokenCache) {
            self.teamID = teamID
            self.keyID = keyID
            self.publicKey = publicKey
            self.fingerprint = fingerprint
            self.now = cache.now
            self.storage = cache.storage
            self.logger = cache.logger
        }

        /// The name the token is stored under: the key's fingerprint too, so that a hub with
        /// the same ids and another key cannot replace this slot's token.
        var storageName: String { "apns.provider-token.\(teamID).\(keyID).\(fingerprint)" }

        /// Whether a stored token was signed with this slot's key, for its team and key id.
        func isOurs(_ stored: StoredAPNsToken) -> Bool {
            stored.isSigned(by: publicKey, teamID: teamID, keyID: keyID)
        }

        /// The current token if it is younger than `lifetime`: no suspension and no
        /// allocation, for the send path; `nil` when ``token(key:lifetime:signed:)`` must make
        /// or find one.
        func currentToken(lifetime: TimeInterval) -> APNsProviderToken? {
            let now = self.now()
            if case .use(let token) = state.withLock({ $0.tokenNeeded(now: now, lifetime: lifetime) }) {
                return token
            }
            return nil
        }

        /// The current token; when there is none, or it is older than `lifetime`, the one
        /// stored by this or another process if it is still young enough, or else a new one
        /// signed with `key` (and stored). `signed` is called when this process signed it.
        func token(
            key: P256.Signing.PrivateKey,
            lifetime: TimeInterval,
            signed: @escaping @Sendable () -> Void = {}
        ) async throws -> APNsProviderToken {
            let now = self.now()
            if case .use(let token) = state.withLock({ $0.tokenNeeded(now: now, lifetime: lifetime) }) {
                return token
            }
            let refresh = refreshing.withLock { refreshing in
                if let refreshing { return refreshing }
                let task = Task {
                    defer { self.refreshing.withLock { $0 = nil } }
                    return try await self.refresh(key: key, lifetime: lifetime, signed: signed)
                }
                refreshing = task
                return task
            }
            return try await refresh.value
        }

        private func refresh(
            key: P256.Signing.PrivateKey,
            lifetime: TimeInterval,
            signed: @Sendable () -> Void
        ) async throws -> APNsProviderToken {
            let now = self.now()
            if case .use(let token) = state.withLock({ $0.tokenNeeded(now: now, lifetime: lifetime) }) {
                return token
            }
            guard let storage else {
                let token = try sign(key: key, at: now)
                signed()
                return token
            }
            let stored: String?
            do {
                stored = try await storage.storedToken(named: storageName)
            } catch {
                logger.warning(
                    "Could not read the stored APNs provider token; signing one for this process",
                    metadata: ["apns.key_id": "\(keyID)", "error": "\(error)"])
                let token = try sign(key: key, at: now)
                signed()
                return token
            }
            if let stored, let found = StoredAPNsToken(stored), isOurs(found),
                let token = state.withLock({ $0.adoptStored(found, now: now, lifetime: lifetime) })
            {
                return token
            }
            let token = try sign(key: key, at: now)
            let offered = StoredAPNsToken(token).encoded
            do {
                let winner = try await storage.replaceStoredToken(named: storageName, expected: stored, with: offered)
                if winner != offered, let theirs = StoredAPNsToken(winner), isOurs(theirs),
                    let adopted = state.withLock({ $0.adoptStored(theirs, now: now, lifetime: lifetime) })
                {
                    // Another node signed first: everyone uses its token.
                    return adopted
                }
            } catch {
                logger.warning(
                    "Could not store the APNs provider token; a restart will sign another",
                    metadata: ["apns.key_id": "\(keyID)", "error": "\(error)"])
            }
            signed()
            return token
        }

        /// Signs a token and makes it the current one.
        private func sign(key: P256.Signing.PrivateKey, at now: Date) throws -> APNsProviderToken {
            try state.withLock { state in
                let token = try APNsProviderToken.sign(
                    teamID: teamID, keyID: keyID, key: key, issuedAt: now, generation: state.nextGeneration)
                state.signed(token)
                return token
            }
        }

        /// APNs answered `ExpiredProviderToken` for `token`. Returns whether the token was
        /// dropped, so that the next send signs a new one.
        @discardableResult
        func expired(_ token: APNsProviderToken) -> Bool {
            let now = self.now()
            return state.withLock { $0.expiredProviderToken(token, now: now) }
        }

        /// APNs answered `TooManyProviderTokenUpdates` for `token`: it accepted another token
        /// of the key less than 20 minutes ago. Goes back to the token this one replaced while
        /// that one is valid (and stores it again, so that a restart does not offer the refused
        /// one); otherwise there is no token APNs takes now, and sends must pause.
        func tooManyUpdates(_ token: APNsProviderToken) -> APNsTokenState.TooManyUpdatesAction {
            let now = self.now()
            let action = state.withLock { $0.tooManyUpdates(token, now: now) }
            if case .reverted(let previous) = action, let storage {
                let name = storageName
                let refused = StoredAPNsToken(token).encoded
                let restored = StoredAPNsToken(previous).encoded
                Task { _ = try? await storage.replaceStoredToken(named: name, expected: refused, with: restored) }
            }
            return action
        }
    }
}

/// A provider token as ``ProviderTokenStorage`` keeps it: `{"iat":…,"jwt":"…"}`.
struct StoredAPNsToken: Sendable, Hashable, Codable {
    var iat: Int
    var jwt: String

    init(_ token: APNsProviderToken) {
        self.iat = Int(token.issuedAt.timeIntervalSince1970.rounded(.down))
        self.jwt = String(token.jwt)
    }

    init?(_ encoded: String) {
        guard let decoded = try? JSONDecoder().decode(Self.self, from: Data(encoded.utf8)) else { return nil }
        self = decoded
    }

    /// Whether ``jwt`` is an ES256 token signed with `key` whose header names `keyID` and whose
    /// claims name `teamID` (and its ``iat``).
    func isSigned(by key: P256.Signing.PublicKey, teamID: String, keyID: String) -> Bool {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
            let headerData = JSONWebToken.base64URLDecode(parts[0]),
            let claimsData = JSONWebToken.base64URLDecode(parts[1]),
            let signatureData = JSONWebToken.base64URLDecode(parts[2]),
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureData),
            key.isValidSignature(signature, for: Data((parts[0] + "." + parts[1]).utf8))
        else { return false }
        struct Header: Decodable {
            var alg: String
            var kid: String
        }
        struct Claims: Decodable {
            var iss: String
            var iat: Int
        }
        guard let header = try? JSONDecoder().decode(Header.self, from: headerData),
            let claims = try? JSONDecoder().decode(Claims.self, from: claimsData)
        else { return false }
        return header.alg == "ES256" && header.kid == keyID && claims.iss == teamID && claims.iat == iat
    }

    var encoded: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: (try? encoder.encode(self)) ?? Data(), as: UTF8.self)
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

    enum TooManyUpdatesAction: Equatable {
        /// The token is no longer the current one (a newer or an older one is): send again.
        case retry
        /// Went back to the token that the refused one replaced: send again with it.
        case reverted(APNsProviderToken)
        /// No token APNs accepts now: pause sending.
        case pause
    }

    private(set) var current: APNsProviderToken?
    /// The token `current` replaced, which APNs accepted, for as long as it is valid.
    private(set) var previous: APNsProviderToken?
    /// A token APNs reported expired: not taken from storage again.
    private var refusedJWT: Substring?
    private var lastGeneration = 0

    var nextGeneration: Int { lastGeneration + 1 }

    func tokenNeeded(now: Date, lifetime: TimeInterval) -> Action {
        if let current, now.timeIntervalSince(current.issuedAt) < lifetime {
            // A clock that steps backwards keeps the token: its age is negative.
            return .use(current)
        }
        return .sign(generation: nextGeneration)
    }

    mutating func signed(_ token: APNsProviderToken) {
        if let current, current.jwt != token.jwt { previous = current }
        current = token
        lastGeneration = token.generation
    }

    /// Makes a stored token current if it is younger than `lifetime` and not one APNs
    /// reported expired; returns it, or `nil` when a new token is needed.
    mutating func adoptStored(_ stored: StoredAPNsToken, now: Date, lifetime: TimeInterval) -> APNsProviderToken? {
        let issuedAt = Date(timeIntervalSince1970: TimeInterval(stored.iat))
        guard now.timeIntervalSince(issuedAt) < lifetime, refusedJWT.map({ $0 != stored.jwt[...] }) ?? true else {
            return nil
        }
        if let current, current.jwt == stored.jwt[...] { return current }
        let token = APNsProviderToken(authorization: "bearer " + stored.jwt, issuedAt: issuedAt, generation: nextGeneration)
        signed(token)
        return token
    }

    /// Drops `token` if it is still the current one and old enough that Apple accepts a
    /// new token for the key; a younger token is kept, since a new one would be refused
    /// with `TooManyProviderTokenUpdates` (and its `iat` would be no later anyway).
    mutating func expiredProviderToken(_ token: APNsProviderToken, now: Date) -> Bool {
        guard let current, current.generation == token.generation,
            now.timeIntervalSince(current.issuedAt) >= APNsTokenCache.minimumRefreshInterval
        else { return false }
        self.current = nil
        previous = nil
        refusedJWT = token.jwt
        return true
    }

    /// APNs refused `token` as a token update that came too soon.
    mutating func tooManyUpdates(_ token: APNsProviderToken, now: Date) -> TooManyUpdatesAction {
        guard let current, current.generation == token.generation else { return .retry }
        // A margin of 5 minutes, so that a token reverted to is not about to expire.
        if let previous, now.timeIntervalSince(previous.issuedAt) < APNsTokenCache.validity - 5 * 60 {
            self.current = previous
            self.previous = nil
            return .reverted(previous)
        }
        return .pause
    }
}
