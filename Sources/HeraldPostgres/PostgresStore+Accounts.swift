public import Foundation
import HeraldCore
public import HeraldStore
import PostgresNIO
import Synchronization

extension PostgresStore {
    public func createAccount(_ account: Account) async throws {
        var statement = SQLStatement()
        statement.sql = """
            INSERT INTO herald.accounts (hub, username, password_hash, created_at) VALUES (\(statement.bind(hub)), \
            \(statement.bind(account.username)), \(statement.bind(account.passwordHash)), \(statement.bind(account.createdAt))) \
            ON CONFLICT (hub, username) DO NOTHING RETURNING username
            """
        guard try await !query(statement).isEmpty else {
            throw HeraldError.conflict("the user name '\(account.username)' is taken")
        }
    }

    public func account(username: String) async throws -> Account? {
        var statement = SQLStatement()
        statement.sql = """
            SELECT username, password_hash, created_at FROM herald.accounts \
            WHERE hub = \(statement.bind(hub)) AND username = \(statement.bind(username))
            """
        return try await query(statement).first.map { row throws(StoreError) in try Account(stored: row.byName) }
    }

    /// Stores a session (replacing one with the same token hash). Expired sessions are
    /// swept now and then.
    public func createSession(_ session: Session) async throws {
        let now = now().storeMilliseconds
        let sweep = housekeeping.withLock { Housekeeping.due(&$0.lastSessionSweep, now: now) }
        var statement = SQLStatement()
        statement.sql = """
            INSERT INTO herald.sessions (hub, token_hash, username, expires_at) VALUES (\(statement.bind(hub)), \
            \(statement.bind(session.tokenHash)), \(statement.bind(session.username)), \(statement.bind(session.expiresAt))) \
            ON CONFLICT (hub, token_hash) DO UPDATE SET username = excluded.username, expires_at = excluded.expires_at
            """
        try await query(statement)
        if sweep {
            var sweepStatement = SQLStatement()
            sweepStatement.sql = "DELETE FROM herald.sessions WHERE hub = \(sweepStatement.bind(hub)) AND expires_at <= \(sweepStatement.bind(now))"
            try await query(sweepStatement)
        }
    }

    public func session(tokenHash: String, now: Date) async throws -> Session? {
        var statement = SQLStatement()
        statement.sql = """
            SELECT token_hash, username, expires_at FROM herald.sessions WHERE hub = \(statement.bind(hub)) \
            AND token_hash = \(statement.bind(tokenHash)) AND expires_at > \(statement.bind(now))
            """
        return try await query(statement).first.map { row throws(StoreError) in try Session(stored: row.byName) }
    }

    public func deleteSession(tokenHash: String) async throws {
        var statement = SQLStatement()
        statement.sql = "DELETE FROM herald.sessions WHERE hub = \(statement.bind(hub)) AND token_hash = \(statement.bind(tokenHash))"
        try await query(statement)
    }
}
