import HeraldCore

/// Group-committed notification enqueues: sends that arrive while a transaction runs are
/// inserted together, in one transaction, instead of one transaction (and its commit) each.
extension SQLiteWriter {
    struct EnqueueRequest: Sendable {
        /// The notification's columns (``SQLiteStore`` `columns`), and for a send under an
        /// idempotency key the key's five after them.
        var binds: [SQLiteData]
        /// For a send under an idempotency key: the key, and when the send came (milliseconds),
        /// against which a holder's retention is judged.
        var key: (scope: String, key: String, now: Int64)?
    }

    enum Enqueued: Sendable {
        case inserted
        /// Another notification has the id.
        case idTaken
        /// Another notification holds the key, within its retention.
        case keyHeld(id: String, digest: String, answer: String?)
    }

    /// Inserts a notification unless its id, or its idempotency key, is taken (see
    /// ``SQLiteStore/enqueueNotification(_:idempotencyKey:)``).
    func enqueueNotification(_ request: EnqueueRequest) async throws -> Enqueued {
        try await groupCommitted(request, in: notificationEnqueues) { writer, batch in await writer.applyEnqueues(batch) }
    }

    /// Applies `batch` in one transaction, in order (a request sees the rows and keys of those
    /// before it); one result per request. An SQLite error fails the whole batch.
    private func applyEnqueues(_ batch: [EnqueueRequest]) async -> [Result<Enqueued, any Error>] {
        do {
            return try await runTransaction { connection in
                var results: [Result<Enqueued, any Error>] = []
                results.reserveCapacity(batch.count)
                for request in batch {
                    results.append(.success(try await Self.enqueue(request, on: connection)))
                }
                return results
            }
        } catch {
            return Array(repeating: .failure(error), count: batch.count)
        }
    }

    /// One request: the row is inserted unless its id or its key is taken (the unique index on
    /// the key decides), which is all a new key costs; otherwise a holder whose retention ended
    /// forgets the key and the insert is tried again, and failing that the holder is read.
    private static func enqueue(_ request: EnqueueRequest, on connection: SQLiteConnection) async throws -> Enqueued {
        guard let key = request.key else {
            return try await insert(request.binds, keyed: false, on: connection) ? .inserted : .idTaken
        }
        if try await insert(request.binds, keyed: true, on: connection) { return .inserted }
        let forgotten = try await connection.query(
            """
            UPDATE notifications SET idempotency_scope = NULL, idempotency_key = NULL, idempotency_digest = NULL,
                idempotency_answer = NULL, idempotency_expires_at = NULL
            WHERE idempotency_scope = ? AND idempotency_key = ? AND idempotency_expires_at <= ? RETURNING id
            """,
            [.text(key.scope), .text(key.key), .integer(Int(key.now))]
        )
        if !forgotten.isEmpty, try await insert(request.binds, keyed: true, on: connection) { return .inserted }
        let rows = try await connection.query(
            "SELECT id, idempotency_digest, idempotency_answer FROM notifications WHERE idempotency_scope = ? AND idempotency_key = ?",
            [.text(key.scope), .text(key.key)]
        )
        guard let row = rows.first, let id = row.column("id")?.string, let digest = row.column("idempotency_digest")?.string else {
            return .idTaken
        }
        return .keyHeld(id: id, digest: digest, answer: row.column("idempotency_answer")?.string)
    }

    /// Inserts a notification row (with its key's columns when `keyed`) unless its id or key is
    /// taken; whether it did.
    static func insert(_ binds: [SQLiteData], keyed: Bool, on connection: SQLiteConnection) async throws -> Bool {
        try await !connection.query(keyed ? keyedInsert : plainInsert, binds).isEmpty
    }

    private static let plainInsert = """
        INSERT INTO notifications (\(SQLiteStore.notificationColumns)) VALUES (\(SQLiteStore.notificationPlaceholders))
        ON CONFLICT DO NOTHING RETURNING id
        """
    private static let keyedInsert = """
        INSERT INTO notifications (\(SQLiteStore.notificationColumns), idempotency_scope, idempotency_key, idempotency_digest,
            idempotency_answer, idempotency_expires_at)
        VALUES (\(SQLiteStore.notificationPlaceholders), ?, ?, ?, ?, ?)
        ON CONFLICT DO NOTHING RETURNING id
        """
}
