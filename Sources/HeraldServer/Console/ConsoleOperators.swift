import Crypto
public import Foundation
import HeraldCore
public import HeraldStore

/// An operator of the console: someone who runs this server's hubs. Operators are not app
/// users: an app account's credentials grant nothing in the console, and an operator is no
/// app user.
public struct ConsoleOperator: Codable, Sendable, Hashable {
    public var name: String
    var passwordHash: String
    public var createdAt: Date
    /// The password is one that `herald admin` printed: the console asks for a new one at the
    /// first sign-in, before anything else.
    public var mustChangePassword: Bool
}

/// A signed-in operator's session, as the console keeps it.
struct ConsoleSession: Codable, Sendable, Hashable {
    var operatorName: String
    /// The token every state-changing request of this session must carry.
    var csrfToken: String
    var createdAt: Date
    var expiresAt: Date
    /// When the session was last used (to within ``ConsoleOperators/touchInterval``); `nil`
    /// in a session of an earlier release, whose `createdAt` stands for it.
    var lastSeenAt: Date?
}

/// The console's operators and their sessions, kept in the hub storage's shared values
/// (`console.operators`, `console.sessions`), so every node of a cluster knows them.
///
/// Passwords are bcrypt hashes; a session is known by the SHA-256 of its cookie's token
/// only. Failed sign-ins, and wrong current passwords when changing one, are limited as app
/// sign-ins are (``SignInLimiter``), with buckets of the console's own. A session ends after
/// its lifetime, or sooner when unused for its idle timeout.
public final class ConsoleOperators: Sendable {
    private let operators: SharedDocument<[String: ConsoleOperator]>
    private let sessions: SharedDocument<[String: ConsoleSession]>
    private let hasher: PasswordHasher
    let signInLimiter: SignInLimiter
    /// How long a session lasts after sign-in.
    let sessionLifetime: TimeInterval
    /// How long a session lasts unused.
    let idleTimeout: TimeInterval
    let now: @Sendable () -> Date

    /// - Parameters:
    ///   - hashing: where bcrypt runs: the server's pool (``CallerLimits/hashing``), or
    ///     ``PasswordHashing/unmanaged`` for commands.
    ///   - idleTimeout: a session unused for this long ends (30 minutes by default).
    public init(
        storage: any HubStorage,
        bcryptCost: UInt8 = 12,
        hashing: PasswordHashing = .unmanaged,
        sessionLifetime: Duration = .seconds(12 * 3600),
        idleTimeout: Duration = .seconds(30 * 60),
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.operators = SharedDocument(storage: storage, name: "console.operators", empty: [:])
        self.sessions = SharedDocument(storage: storage, name: "console.sessions", empty: [:])
        self.hasher = PasswordHasher(cost: bcryptCost, hashing: hashing)
        self.signInLimiter = SignInLimiter()
        self.sessionLifetime = TimeInterval(sessionLifetime.components.seconds)
        self.idleTimeout = TimeInterval(idleTimeout.components.seconds)
        self.now = now
    }

    /// How stale a session's ``ConsoleSession/lastSeenAt`` may get before a request writes it
    /// again: at most a minute, so that a page view is not a write to the shared store.
    var touchInterval: TimeInterval { min(60, idleTimeout / 10) }

    /// Whether a session is still live at `now`: within its lifetime and its idle timeout.
    func isLive(_ session: ConsoleSession, at now: Date) -> Bool {
        session.expiresAt > now && now.timeIntervalSince(session.lastSeenAt ?? session.createdAt) < idleTimeout
    }

    // MARK: Managing operators (`herald admin`)

    /// Creates an operator with a new one-time password, returned once and stored only as a hash.
    public func create(name: String) async throws -> (operator: ConsoleOperator, password: String) {
        let name = try Accounts.normalizedUsername(name)
        let password = Self.oneTimePassword()
        let created = ConsoleOperator(
            name: name, passwordHash: try await hasher.hash(password), createdAt: now(), mustChangePassword: true
        )
        try await operators.update { operators in
            guard operators[name] == nil else { throw HeraldError.conflict("the operator \(name) exists") }
            operators[name] = created
        }
        return (created, password)
    }

    /// Gives an operator a new one-time password and ends their sessions.
    public func resetPassword(name: String) async throws -> String {
        let name = try Self.existingName(name)
        let password = Self.oneTimePassword()
        let hash = try await hasher.hash(password)
        try await operators.update { operators in
            guard operators[name] != nil else { throw Self.noSuchOperator(name) }
            operators[name]?.passwordHash = hash
            operators[name]?.mustChangePassword = true
        }
        try await endSessions(of: name)
        return password
    }

    /// Deletes an operator and ends their sessions.
    public func delete(name: String) async throws {
        let name = try Self.existingName(name)
        try await operators.update { operators in
            guard operators.removeValue(forKey: name) != nil else { throw Self.noSuchOperator(name) }
        }
        try await endSessions(of: name)
    }

    /// Every operator, by name.
    public func list() async throws -> [ConsoleOperator] {
        try await operators.read().values.sorted { $0.name < $1.name }
    }

    // MARK: Signing in

    /// Checks a name and password and starts a session: its cookie token and the session.
    /// `nil` if they do not match; ``Throttled`` past the limit of failures.
    func signIn(name: String, password: String, client: String) async throws -> (token: String, session: ConsoleSession, operator: ConsoleOperator)? {
        let key = (try? Accounts.normalizedUsername(name)) ?? String(name.lowercased().prefix(64))
        try signInLimiter.check(account: key, client: client)
        let found = try await operators.read()[key]
        guard try await hasher.verify(password, against: found?.passwordHash), let found else {
            signInLimiter.recordFailure(account: key, client: client)
            return nil
        }
        signInLimiter.recordSuccess(account: key, client: client)
        let token = PasswordHasher.randomToken()
        let started = now()
        let session = ConsoleSession(
            operatorName: found.name,
            csrfToken: PasswordHasher.randomToken(),
            createdAt: started,
            expiresAt: started.addingTimeInterval(sessionLifetime),
            lastSeenAt: started
        )
        try await sessions.update { sessions in
            sessions = sessions.filter { self.isLive($0.value, at: started) }
            sessions[Self.hash(token)] = session
        }
        return (token, session, found)
    }

    /// The session of a cookie's token, and its operator, while both exist and the session has
    /// neither expired nor sat unused for the idle timeout; notes that it is used.
    func session(token: String) async throws -> (session: ConsoleSession, operator: ConsoleOperator)? {
        let key = Self.hash(token)
        let now = self.now()
        guard let session = try await sessions.read()[key], isLive(session, at: now) else { return nil }
        guard let found = try await operators.read()[session.operatorName] else { return nil }
        if now.timeIntervalSince(session.lastSeenAt ?? session.createdAt) >= touchInterval {
            try await sessions.update { sessions in
                if sessions[key] != nil { sessions[key]?.lastSeenAt = now }
            }
        }
        return (session, found)
    }

    /// Ends the session of a cookie's token.
    func signOut(token: String) async throws {
        let key = Self.hash(token)
        try await sessions.update { _ = $0.removeValue(forKey: key) }
    }

    /// Replaces a signed-in operator's password (the one-time one, or any); other sessions of
    /// theirs end.
    ///
    /// The current password is a guess like a sign-in's (someone at an unlocked screen): wrong
    /// ones count against the operator and `client` in the same buckets, and past the limit
    /// the change is refused with ``Throttled`` before the password is checked.
    func changePassword(name: String, current: String, new: String, keeping token: String, client: String) async throws {
        guard new.utf8.count >= 12 else { throw HeraldError.badRequest("a new password has at least 12 characters") }
        guard new.utf8.count <= 72 else { throw HeraldError.badRequest("a password has at most 72 bytes") }
        guard new != current else { throw HeraldError.badRequest("the new password must differ from the current one") }
        try signInLimiter.check(account: name, client: client)
        let found = try await operators.read()[name]
        guard try await hasher.verify(current, against: found?.passwordHash) else {
            signInLimiter.recordFailure(account: name, client: client)
            throw HeraldError.badRequest("the current password is wrong")
        }
        signInLimiter.recordSuccess(account: name, client: client)
        let hash = try await hasher.hash(new)
        try await operators.update { operators in
            operators[name]?.passwordHash = hash
            operators[name]?.mustChangePassword = false
        }
        let kept = Self.hash(token)
        try await sessions.update { sessions in
            sessions = sessions.filter { $0.key == kept || $0.value.operatorName != name }
        }
    }

    private func endSessions(of name: String) async throws {
        try await sessions.update { sessions in
            sessions = sessions.filter { $0.value.operatorName != name }
        }
    }

    // MARK: Helpers

    static func hash(_ token: String) -> String {
        Accounts.sha256Hex(token)
    }

    private static func existingName(_ name: String) throws -> String {
        do { return try Accounts.normalizedUsername(name) } catch { throw noSuchOperator(name) }
    }

    private static func noSuchOperator(_ name: String) -> HeraldError {
        .notFound("there is no operator \(name)")
    }

    /// Five groups of four characters from an alphabet without look-alikes (about 99 bits).
    static func oneTimePassword() -> String {
        let alphabet = Array("abcdefghjkmnpqrstuvwxyz23456789")
        var generator = SystemRandomNumberGenerator()
        let groups = (0..<5).map { _ in String((0..<4).map { _ in alphabet.randomElement(using: &generator)! }) }
        return groups.joined(separator: "-")
    }
}
