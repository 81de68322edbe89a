public import Foundation
import HeraldCore
public import HeraldStore
import Synchronization

extension SQLiteStore {
    public func createAccount(_ account: Account) async throws {
        let created = try await write { connection in
            try await !connection.query(
                """
                INSERT INTO accounts (username, password_hash, created_at) VALUES (?, ?, ?)
                ON CONFLICT (username) DO NOTHING RETURNING username
                """,
                [.text(account.username), .text(account.passwordHash), SQLiteData(account.createdAt)]
            ).isEmpty
        }
        guard created else { throw HeraldError.conflict("the user name '\(account.username)' is taken") }
    }

    public func account(username: String) async throws -> Account? {
        let rows = try await read { connection in
            try await connection.query(
                "SELECT username, password_hash, created_at FROM accounts WHERE username = ?",
                [.text(username)]
            )
        }
        return try rows.first.map(Account.init(stored:))
    }

    /// Stores a session (replacing one with the same token hash). Expired sessions are
    /// swept now and then.
    public func createSession(_ session: Session) async throws {
        let now = now().storeMilliseconds
        let sweep = housekeeping.withLock { Housekeeping.due(&$0.lastSessionSweep, now: now) }
        try await write { connection in
            _ = try await connection.query(
                "INSERT OR REPLACE INTO sessions (token_hash, username, expires_at) VALUES (?, ?, ?)",
                [.text(session.tokenHash), .text(session.username), SQLiteData(session.expiresAt)]
            )
            if sweep {
                _ = try await connection.query("DELETE FROM sessions WHERE expires_at <= ?", [.integer(now)])
            }
        }
    }

    public func session(tokenHash: String, now: Date) async throws -> Session? {
        let rows = try await read { connection in
            try await connection.query(
                "SELECT token_hash, username, expires_at FROM sessions WHERE token_hash = ? AND expires_at > ?",
                [.text(tokenHash), SQLiteData(now)]
            )
        }
        return try rows.first.map(Session.init(stored:))
    }

    public func deleteSession(tokenHash: String) async throws {
        try await write { connection in
            _ = try await connection.query("DELETE FROM sessions WHERE token_hash = ?", [.text(tokenHash)])
        }
    }
}
