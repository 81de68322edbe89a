import Crypto
public import Foundation
public import HeraldCore
public import HeraldStore
import Synchronization

/// Accounts of the app backend: sign-up, sign-in, and checking credentials.
///
/// Passwords are stored as bcrypt hashes; bearer tokens are random 256-bit values of
/// which the store keeps only the SHA-256. bcrypt runs on the thread pool, and a
/// successful HTTP Basic check is remembered for a minute (by the SHA-256 of the
/// credentials) so that clients using Basic on every request don't pay bcrypt each time.
public final class Accounts: Sendable {
    let store: any AccountStore
    let configuration: ServerConfiguration
    private let basicCache = Mutex<[String: Date]>([:])
    private static let basicCacheLifetime: TimeInterval = 60
    private static let basicCacheLimit = 10_000
    /// Bearer sessions seen recently (token hash → user and until when to trust the entry),
    /// so that a device's burst of requests reads its session once. Sign-out removes the
    /// entry here; another node sharing the store trusts it for at most `sessionCacheLifetime`.
    private let sessionCache = Mutex<[String: (username: String, until: Date)]>([:])
    static let sessionCacheLifetime: TimeInterval = 10

    /// Failed sign-ins per account and client, per account, and per client.
    let signInLimiter: SignInLimiter
    /// Sign-ups per client.
    let signUpLimiter: SignUpLimiter
    /// bcrypt at the server's cost on the hashing pool, with the decoy an unknown user's
    /// sign-in is checked against.
    private let hasher: PasswordHasher

    /// With limits of its own (a hashing pool that is not run as a service: for tests and
    /// tools; a server passes its ``CallerLimits``).
    public convenience init(store: any AccountStore, configuration: ServerConfiguration) {
        self.init(store: store, configuration: configuration, limits: CallerLimits(configuration: configuration))
    }

    /// With the limits the server's listeners share.
    public init(store: any AccountStore, configuration: ServerConfiguration, limits: CallerLimits) {
        self.store = store
        self.configuration = configuration
        self.signInLimiter = limits.signIns
        self.signUpLimiter = limits.signUps
        self.hasher = PasswordHasher(cost: configuration.bcryptCost, hashing: limits.hashing)
    }

    /// Checks and lowercases a user name: 1–64 characters of letters, digits and `. _ - @`,
    /// so that `username:<name>` is a valid tag.
    public static func normalizedUsername(_ name: String) throws(HeraldError) -> String {
        let lower = name.lowercased()
        guard (1...64).contains(lower.utf8.count) else {
            throw .badRequest("a user name has 1 to 64 characters")
        }
        guard
            lower.utf8.allSatisfy({ byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                    UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "@"):
                    true
                default: false
                }
            })
        else {
            throw .badRequest("a user name has only letters, digits and . _ - @")
        }
        return lower
    }

    /// Creates an account, for a caller known as `client` (``SocketAddress/clientKey``).
    ///
    /// Every attempt takes a token of the client's sign-up allowance (past it, ``Throttled``);
    /// the name and password are checked, and the name looked up, before bcrypt runs, so a taken
    /// or malformed name costs no hash (the `409` already tells that the name is taken). The
    /// hash runs on the hashing pool, whose full queue answers ``Throttled`` (`503`).
    public func signUp(username: String, password: String, client: String = "unknown") async throws -> Account {
        guard configuration.allowSignUp else { throw HeraldError.forbidden("sign-up is disabled on this server") }
        try signUpLimiter.admit(client: client)
        let name = try Self.normalizedUsername(username)
        guard password.utf8.count >= 8 else { throw HeraldError.badRequest("a password has at least 8 characters") }
        guard password.utf8.count <= 72 else { throw HeraldError.badRequest("a password has at most 72 bytes") }
        guard try await store.account(username: name) == nil else { throw Self.taken(name) }
        let account = Account(username: name, passwordHash: try await hasher.hash(password))
        try await store.createAccount(account)
        return account
    }

    /// Verifies a user name and password against the stored account; `nil` if they do not
    /// match.
    ///
    /// An unknown user name takes as long as a wrong password (a bcrypt check of the same
    /// cost), so the answer's time does not tell which users exist. Failures are counted per
    /// account and `client` (``SocketAddress/clientKey``), per account and per client
    /// (``SignInLimiter``): past a limit, attempts are refused with ``Throttled`` before the
    /// password is checked.
    public func verify(username: String, password: String, client: String) async throws -> String? {
        let name = (try? Self.normalizedUsername(username)) ?? String(username.lowercased().prefix(64))
        try signInLimiter.check(account: name, client: client)
        let cacheKey = Self.sha256Hex("\(name)\u{0}\(password)")
        let now = Date()
        if let until = basicCache.withLock({ $0[cacheKey] }), until > now { return name }
        let account = Self.isValidUsername(name) ? try await store.account(username: name) : nil
        guard try await hasher.verify(password, against: account?.passwordHash) else {
            signInLimiter.recordFailure(account: name, client: client)
            return nil
        }
        signInLimiter.recordSuccess(account: name, client: client)
        basicCache.withLock { cache in
            if cache.count >= Self.basicCacheLimit { cache = cache.filter { $0.value > now } }
            if cache.count < Self.basicCacheLimit { cache[cacheKey] = now.addingTimeInterval(Self.basicCacheLifetime) }
        }
        return name
    }

    /// The answer to a sign-up with a taken name: the store's own.
    static func taken(_ name: String) -> HeraldError {
        .conflict("the user name '\(name)' is taken")
    }

    private static func isValidUsername(_ name: String) -> Bool {
        (try? normalizedUsername(name)) != nil
    }

    /// Issues a bearer token for a verified user.
    public func issueToken(for username: String) async throws -> (token: String, expiresAt: Date) {
        let token = PasswordHasher.randomToken(prefix: "hrd_")
        let expiresAt = Date().addingTimeInterval(Double(configuration.tokenLifetime.components.seconds))
        try await store.createSession(Session(tokenHash: Self.sha256Hex(token), username: username, expiresAt: expiresAt))
        return (token, expiresAt)
    }

    /// The user a bearer token belongs to, if it is valid now.
    public func user(forToken token: String) async throws -> String? {
        let hash = Self.sha256Hex(token)
        let now = Date()
        if let cached = sessionCache.withLock({ $0[hash] }), cached.until > now { return cached.username }
        guard let session = try await store.session(tokenHash: hash, now: now) else { return nil }
        let until = min(session.expiresAt, now.addingTimeInterval(Self.sessionCacheLifetime))
        sessionCache.withLock { cache in
            if cache.count >= Self.basicCacheLimit { cache = cache.filter { $0.value.until > now } }
            if cache.count < Self.basicCacheLimit { cache[hash] = (session.username, until) }
        }
        return session.username
    }

    public func revoke(token: String) async throws {
        let hash = Self.sha256Hex(token)
        sessionCache.withLock { _ = $0.removeValue(forKey: hash) }
        try await store.deleteSession(tokenHash: hash)
    }

    static func sha256Hex(_ text: String) -> String {
        SHA256.hash(data: Data(text.utf8)).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }
}

extension Data {
    func base64URLEncoded() -> String {
        base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
