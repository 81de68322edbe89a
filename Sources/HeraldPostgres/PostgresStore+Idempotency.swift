public import Foundation
public import HeraldCore
public import HeraldStore
import PostgresNIO

extension PostgresStore {
    /// Persists a new notification under an idempotency key unless another holds the key (see
    /// the protocol). Three statements, each safe on its own: a holder whose retention ended
    /// forgets the key; the insert does nothing when the id or the key is taken (a node whose
    /// insert races another's on the same key waits on the unique index until that one
    /// commits, then does nothing); the holder is then read, committed.
    public func enqueueNotification(_ notification: NotificationRecord, idempotencyKey key: IdempotencyKey) async throws -> IdempotentReplay? {
        if notification.state == .scheduled, notification.scheduledAt == nil {
            throw HeraldError.badRequest("a scheduled notification needs the time it is due (scheduledAt)")
        }
        var expired = SQLStatement()
        expired.sql = """
            UPDATE herald.notifications SET \(Self.forgottenKey) \
            WHERE hub = \(expired.bind(hub)) AND idempotency_scope = \(expired.bind(key.scope)) \
            AND idempotency_key = \(expired.bind(key.key)) AND idempotency_expires_at <= \(expired.bind(notification.enqueuedAt))
            """
        try await query(expired)

        var statement = try insertStatement(notification, idempotencyKey: key)
        statement.sql = "WITH inserted AS (\(statement.sql)) SELECT id, pg_notify('\(PostgresDatabase.workChannel)', \(statement.bind(hub))) FROM inserted"
        guard try await query(statement).isEmpty else { return nil }

        var holder = SQLStatement()
        holder.sql = """
            SELECT id, idempotency_digest, idempotency_answer FROM herald.notifications \
            WHERE hub = \(holder.bind(hub)) AND idempotency_scope = \(holder.bind(key.scope)) AND idempotency_key = \(holder.bind(key.key))
            """
        guard let row = try await query(holder).first?.byName, let digest = try row.optionalString("idempotency_digest") else {
            throw HeraldError.conflict("a notification with id '\(notification.id)' exists")
        }
        return try key.replay(of: try row.string("id"), storedDigest: digest, answer: try row.optionalString("idempotency_answer"))
    }

    /// Forgets the idempotency keys whose retention ended (see the protocol).
    public func forgetIdempotencyKeys(expiredBy now: Date) async throws -> Int {
        var statement = SQLStatement()
        statement.sql = """
            UPDATE herald.notifications SET \(Self.forgottenKey) \
            WHERE hub = \(statement.bind(hub)) AND idempotency_key IS NOT NULL AND idempotency_expires_at <= \(statement.bind(now)) \
            RETURNING id
            """
        return try await query(statement).count
    }

    /// The assignments that make a notification forget its key.
    private static let forgottenKey = """
        idempotency_scope = NULL, idempotency_key = NULL, idempotency_digest = NULL, idempotency_answer = NULL, \
        idempotency_expires_at = NULL
        """
}
