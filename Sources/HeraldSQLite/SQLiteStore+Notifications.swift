public import Foundation
public import HeraldCore
public import HeraldStore

extension SQLiteStore {
    static let notificationColumns = """
        id, tag_expression, payloads, state, counts, cursor, enqueued_at, started_at, ended_at, \
        template, direct_targets, scheduled_at, part_of, upper_bound, trace_context, spread_seconds, broadcast_channel
        """
    /// A `?` for each of ``columns``.
    static let notificationPlaceholders = Array(repeating: "?", count: notificationColumns.split(separator: ",").count).joined(separator: ", ")

    /// Persists a new notification as given, in the state given: normally
    /// ``NotificationState/enqueued``, or ``NotificationState/scheduled`` for one whose
    /// ``NotificationRecord/scheduledAt`` is to come. Throws ``HeraldError/conflict(_:)`` if the
    /// id is taken, ``HeraldError/badRequest(_:)`` for a scheduled one without a time.
    /// Group-committed with the sends that arrive while the writer is busy.
    public func enqueueNotification(_ notification: NotificationRecord) async throws {
        if notification.state == .scheduled, notification.scheduledAt == nil {
            throw HeraldError.badRequest("a scheduled notification needs the time it is due (scheduledAt)")
        }
        let request = SQLiteWriter.EnqueueRequest(binds: try Self.binds(notification))
        guard case .inserted = try await groupCommitted({ try await $0.enqueueNotification(request) }) else {
            throw HeraldError.conflict("a notification with id '\(notification.id)' exists")
        }
    }

    /// Persists a new notification under an idempotency key unless another holds the key
    /// (see the protocol), group-committed with the sends that arrive while the writer is busy
    /// (``SQLiteWriter/enqueueNotification(_:)``).
    public func enqueueNotification(_ notification: NotificationRecord, idempotencyKey key: IdempotencyKey) async throws -> IdempotentReplay? {
        if notification.state == .scheduled, notification.scheduledAt == nil {
            throw HeraldError.badRequest("a scheduled notification needs the time it is due (scheduledAt)")
        }
        let binds =
            try Self.binds(notification) + [
                .text(key.scope), .text(key.key), .text(key.digest), SQLiteData(key.answer),
                SQLiteData(key.expiry(acceptedAt: notification.enqueuedAt)),
            ]
        let request = SQLiteWriter.EnqueueRequest(
            binds: binds, key: (scope: key.scope, key: key.key, now: Int64(notification.enqueuedAt.storeMilliseconds)))
        switch try await groupCommitted({ try await $0.enqueueNotification(request) }) {
        case .inserted:
            return nil
        case .idTaken:
            throw HeraldError.conflict("a notification with id '\(notification.id)' exists")
        case .keyHeld(let id, let digest, let answer):
            return try key.replay(of: id, storedDigest: digest, answer: answer)
        }
    }

    /// Forgets the idempotency keys whose retention ended (see the protocol).
    public func forgetIdempotencyKeys(expiredBy now: Date) async throws -> Int {
        try await write { connection in
            try await connection.query(
                """
                UPDATE notifications SET idempotency_scope = NULL, idempotency_key = NULL, idempotency_digest = NULL,
                    idempotency_answer = NULL, idempotency_expires_at = NULL
                WHERE idempotency_key IS NOT NULL AND idempotency_expires_at <= ? RETURNING id
                """,
                [.integer(now.storeMilliseconds)]
            ).count
        }
    }

    private static func binds(_ notification: NotificationRecord) throws -> [SQLiteData] {
        [
            .text(notification.id), SQLiteData(notification.tagExpression), .text(try StoredJSON.encode(notification.payloads)),
            .text(notification.state.rawValue), .text(try StoredJSON.encode(notification.counts)), SQLiteData(notification.cursor),
            SQLiteData(notification.enqueuedAt), SQLiteData(notification.startedAt), SQLiteData(notification.endedAt),
            SQLiteData(try notification.template.map(StoredJSON.encode)), SQLiteData(try notification.directTargets.map(StoredJSON.encode)),
            SQLiteData(notification.scheduledAt), SQLiteData(notification.partOf), SQLiteData(notification.upperBound),
            SQLiteData(notification.traceContext), SQLiteData(notification.spread.map { Int($0.components.seconds) }),
            SQLiteData(notification.broadcastChannel),
        ]
    }

    /// Claims the notification that has waited longest (see the protocol): the one due first,
    /// a scheduled notification being due at its `scheduledAt` and any other at its
    /// `enqueuedAt`. The state index finds the candidates; finished notifications are not read.
    public func claimNotification(now: Date, lease: Duration, owner: String) async throws -> NotificationRecord? {
        let nowMs = now.storeMilliseconds
        let leaseUntil = nowMs.addingReportingOverflow(max(0, lease.storeMilliseconds)).partialValue
        let rows = try await write { connection in
            try await connection.query(
                Self.claimStatement,
                [.integer(nowMs), .integer(leaseUntil), .text(owner)]
            )
        }
        return try rows.first.map(NotificationRecord.init(stored:))
    }

    /// Claims the notification due first: enqueued, processing under a lease that ended, or
    /// scheduled for no later than now (`?1` now, `?2` the new lease's end, `?3` the new owner).
    ///
    /// The states are written into the statement, not bound: SQLite's plans do not depend on
    /// bound values (see ``SQLiteConnection``), and only the values themselves tell it that the
    /// partial index `notifications_due` holds every candidate.
    static let claimStatement = """
        UPDATE notifications SET state = \(SQLiteStore.literal(.processing)), started_at = coalesce(started_at, ?1), lease_until = ?2, lease_owner = ?3
        WHERE id = (
            SELECT id FROM (
                \(firstDue("state = \(SQLiteStore.literal(.enqueued))"))
                UNION ALL
                \(firstDue("state = \(SQLiteStore.literal(.processing)) AND lease_until < ?1"))
                UNION ALL
                \(firstDue("state = \(SQLiteStore.literal(.scheduled)) AND coalesce(scheduled_at, enqueued_at) <= ?1"))
            ) ORDER BY due, id LIMIT 1
        )
        RETURNING \(notificationColumns)
        """

    /// A state as an SQL string literal (the raw values hold no quote).
    static func literal(_ state: NotificationState) -> String {
        "'\(state.rawValue)'"
    }

    /// How SQLite runs a claim (`EXPLAIN QUERY PLAN`'s details). For tests.
    package func claimPlanForTesting() async throws -> [String] {
        try await read { connection in
            try await connection.query("EXPLAIN QUERY PLAN \(Self.claimStatement)", [.integer(0), .integer(0), .text("")])
        }.compactMap { $0.column("detail")?.string }
    }

    /// The id and due time of the notification due first among those `condition` selects, read
    /// from the index of claimable notifications (`notifications_due`, whose states the query
    /// names so that SQLite may use it): one index entry, however many wait.
    private static func firstDue(_ condition: String) -> String {
        """
        SELECT * FROM (SELECT id, coalesce(scheduled_at, enqueued_at) AS due FROM notifications
            WHERE state IN ('Enqueued', 'Processing', 'Scheduled') AND \(condition)
            ORDER BY coalesce(scheduled_at, enqueued_at), id LIMIT 1)
        """
    }

    /// Records progress while `owner` holds the lease (see the protocol).
    public func saveProgress(id: String, owner: String, cursor: String?, counts: OutcomeCounts, leaseUntil: Date) async throws {
        let binds: [SQLiteData] = [SQLiteData(cursor), .text(try StoredJSON.encode(counts)), SQLiteData(leaseUntil)]
        try await updateLeased(id: id, owner: owner, set: "cursor = ?, counts = ?, lease_until = ?", binds: binds)
    }

    public func renewLease(id: String, owner: String, until: Date) async throws {
        try await updateLeased(id: id, owner: owner, set: "lease_until = ?", binds: [SQLiteData(until)])
    }

    public func endLeases(ownerPrefix: String, except owner: String, now: Date) async throws -> Int {
        let rows = try await write { connection in
            try await connection.query(
                """
                UPDATE notifications SET lease_until = ?1
                WHERE state = ?2 AND substr(lease_owner, 1, length(?3)) = ?3 AND lease_owner <> ?4 AND lease_until > ?1
                RETURNING id
                """,
                [.integer(now.storeMilliseconds), .text(NotificationState.processing.rawValue), .text(ownerPrefix), .text(owner)]
            )
        }
        return rows.count
    }

    /// Records the final state and ends the lease, while `owner` holds it (see the protocol).
    public func finishNotification(id: String, owner: String, state: NotificationState, counts: OutcomeCounts, endedAt: Date) async throws {
        let binds: [SQLiteData] = [.text(state.rawValue), .text(try StoredJSON.encode(counts)), SQLiteData(endedAt)]
        try await updateLeased(
            id: id, owner: owner, set: "state = ?, counts = ?, ended_at = ?, lease_until = NULL, lease_owner = NULL", binds: binds
        )
    }

    /// Applies `set` to the notification if it is processing under `owner`'s lease; otherwise
    /// throws `notFound` (no such notification) or `conflict` (someone else's, or finished).
    private func updateLeased(id: String, owner: String, set: String, binds: [SQLiteData]) async throws {
        try await write { connection in
            let updated = try await connection.query(
                "UPDATE notifications SET \(set) WHERE id = ? AND state = ? AND lease_owner = ? RETURNING id",
                binds + [.text(id), .text(NotificationState.processing.rawValue), .text(owner)]
            )
            if updated.isEmpty { try await Self.throwLeaseRefusal(id: id, on: connection) }
        }
    }

    /// Throws why a write under a lease of `id` changed nothing: `notFound` (no such
    /// notification) or `leaseLost` (someone else's, or finished).
    private static func throwLeaseRefusal(id: String, on connection: SQLiteConnection) async throws -> Never {
        let state = try await connection.query("SELECT state FROM notifications WHERE id = ?", [.text(id)]).first?.column("state")?.string
        guard let state else { throw HeraldError.notFound("no notification with id '\(id)'") }
        throw StoreError.leaseLost(id, state: state)
    }

    /// Splits the rest of a claimed notification into partitions (see the protocol), in one
    /// transaction.
    public func splitNotification(id: String, owner: String, at boundaries: [String]) async throws {
        try await write { connection in
            let rows = try await connection.query(
                "SELECT \(Self.notificationColumns) FROM notifications WHERE id = ? AND state = ? AND lease_owner = ?",
                [.text(id), .text(NotificationState.processing.rawValue), .text(owner)]
            )
            guard let claimed = try rows.first.map(NotificationRecord.init(stored:)) else {
                try await Self.throwLeaseRefusal(id: id, on: connection)
            }
            if let refusal = claimed.splitRefusal(at: boundaries) { throw HeraldError.badRequest(refusal) }
            _ = try await connection.query("UPDATE notifications SET upper_bound = ? WHERE id = ?", [.text(boundaries[0]), .text(id)])
            for partition in claimed.partitions(at: boundaries) {
                guard try await SQLiteWriter.insert(try Self.binds(partition), keyed: false, on: connection) else {
                    throw HeraldError.conflict("a notification with id '\(partition.id)' exists")
                }
            }
        }
    }

    public func notification(id: String) async throws -> NotificationRecord? {
        let rows = try await read { connection in
            try await connection.query(
                "SELECT \(Self.notificationColumns) FROM notifications WHERE (id = ?1 AND part_of IS NULL) OR part_of = ?1",
                [.text(id)]
            )
        }
        let records = try rows.map(NotificationRecord.init(stored:))
        guard let whole = records.first(where: { $0.partOf == nil }) else { return nil }
        return whole.combined(withPartitions: records.filter { $0.partOf != nil })
    }

    /// Cancels a scheduled notification (see the protocol); the state check and the change are
    /// one transaction, so a worker claiming it at the same moment either wins or finds it
    /// cancelled.
    public func cancelScheduledNotification(id: String, now: Date) async throws -> Bool {
        let binds: [SQLiteData] = [
            .text(NotificationState.cancelled.rawValue), SQLiteData(now), .text(id), .text(NotificationState.scheduled.rawValue),
        ]
        // nil: cancelled now; otherwise the state it is in, or "" if there is no such notification.
        let blocking = try await write { connection -> String? in
            let cancelled = try await connection.query(
                "UPDATE notifications SET state = ?, ended_at = ?, lease_until = NULL, lease_owner = NULL WHERE id = ? AND state = ? RETURNING id",
                binds
            )
            if !cancelled.isEmpty { return nil }
            return try await connection.query("SELECT state FROM notifications WHERE id = ?", [.text(id)]).first?.column("state")?.string ?? ""
        }
        switch blocking {
        case nil: return true
        case ""?: return false
        case let state?:
            throw HeraldError.conflict("the notification '\(id)' is no longer scheduled (it is \(state)); only a scheduled notification can be cancelled")
        }
    }

    public func nextScheduledTime() async throws -> Date? {
        let rows = try await read { connection in
            try await connection.query(
                """
                SELECT scheduled_at FROM notifications WHERE state = \(SQLiteStore.literal(.scheduled)) AND scheduled_at IS NOT NULL
                ORDER BY scheduled_at LIMIT 1
                """
            )
        }
        return try rows.first?.optionalDate("scheduled_at")
    }

    public func queueStatistics(now: Date) async throws -> QueueStatistics {
        let rows = try await read { connection in
            try await connection.query(
                """
                SELECT
                    coalesce(sum(CASE WHEN state = ?1 OR (state = ?2 AND scheduled_at <= ?4) THEN 1 ELSE 0 END), 0) AS waiting,
                    coalesce(sum(CASE WHEN state = ?3 THEN 1 ELSE 0 END), 0) AS processing,
                    min(CASE WHEN state = ?1 OR (state = ?2 AND scheduled_at <= ?4)
                        THEN max(enqueued_at, coalesce(scheduled_at, enqueued_at)) END) AS oldest
                FROM notifications WHERE state IN (?1, ?2, ?3)
                """,
                [
                    .text(NotificationState.enqueued.rawValue), .text(NotificationState.scheduled.rawValue),
                    .text(NotificationState.processing.rawValue), .integer(now.storeMilliseconds),
                ]
            )
        }
        guard let row = rows.first else { return QueueStatistics(waiting: 0, processing: 0, oldestWaitingSince: nil) }
        return QueueStatistics(
            waiting: try row.int("waiting"),
            processing: try row.int("processing"),
            oldestWaitingSince: try row.optionalDate("oldest")
        )
    }

    /// One page of the history, newest first (see the protocol and ``NotificationHistoryPlan``):
    /// per state, a range of the history index read backwards no further than the page; the
    /// ranges merged; then the rows and their partitions read by id.
    public func notificationHistory(
        states: Set<NotificationState>?, before cursor: NotificationHistoryCursor?, limit: Int
    ) async throws -> [NotificationListing] {
        let plan = NotificationHistoryPlan(states: states)
        return try await plan.page(limit: limit, before: cursor) { wanted, after in
            var ranges: [String] = []
            var binds: [SQLiteData] = []
            func range(_ condition: String, _ conditionBinds: [SQLiteData]) {
                var sql = "SELECT enqueued_at, id FROM notifications WHERE part_of IS NULL AND \(condition)"
                binds += conditionBinds
                if let after {
                    sql += " AND (enqueued_at, id) < (?, ?)"
                    binds += [.integer(after.enqueuedAt), .text(after.id)]
                }
                ranges.append("SELECT * FROM (\(sql) ORDER BY enqueued_at DESC, id DESC LIMIT ?)")
                binds.append(.integer(wanted))
            }
            for state in plan.storedStates { range("state = ?", [.text(state)]) }
            if plan.readsSplitNotifications { range("upper_bound IS NOT NULL", []) }
            let candidateSQL = ranges.joined(separator: " UNION ") + " ORDER BY 1 DESC, 2 DESC LIMIT ?"
            binds.append(.integer(wanted))
            let rows = try await read { [binds] connection -> (candidates: [SQLiteRow], rows: [SQLiteRow]) in
                let candidates = try await connection.query(candidateSQL, binds)
                let ids = candidates.compactMap { $0.column("id")?.string }
                guard !ids.isEmpty else { return ([], []) }
                let placeholders = TagConditionSQL.placeholders(ids.count)
                let rows = try await connection.query(
                    """
                    SELECT \(Self.notificationColumns), lease_owner, lease_until FROM notifications
                    WHERE (id IN (\(placeholders)) AND part_of IS NULL) OR part_of IN (\(placeholders))
                    """,
                    (ids + ids).map { .text($0) }
                )
                return (candidates, rows)
            }
            let positions = try rows.candidates.map { row in (enqueuedAt: try row.int("enqueued_at"), id: try row.string("id")) }
            return (positions, try rows.rows.map(Self.listing))
        }
    }

    /// A channel's broadcasts, newest first (see the protocol): a range of the channel's index
    /// read backwards.
    public func broadcasts(toChannel channel: String, before cursor: NotificationHistoryCursor?, limit: Int) async throws -> [NotificationRecord] {
        guard limit > 0 else { return [] }
        var sql = "SELECT \(Self.notificationColumns) FROM notifications WHERE broadcast_channel = ?"
        var binds: [SQLiteData] = [.text(channel)]
        if let cursor {
            sql += " AND (enqueued_at, id) < (?, ?)"
            binds += [.integer(cursor.enqueuedAt.storeMilliseconds), .text(cursor.id)]
        }
        sql += " ORDER BY enqueued_at DESC, id DESC LIMIT ?"
        binds.append(.integer(limit))
        return try await read { [sql, binds] connection in try await connection.query(sql, binds) }.map(NotificationRecord.init(stored:))
    }

    /// The queue as it is (see the protocol): the rows in the state index's enqueued and
    /// processing ranges, in the order workers claim them.
    public func queueEntries(limit: Int) async throws -> [NotificationListing] {
        guard limit > 0 else { return [] }
        let rows = try await read { connection in
            try await connection.query(
                """
                SELECT \(Self.notificationColumns), lease_owner, lease_until FROM notifications WHERE state IN (\(SQLiteStore.literal(.enqueued)), \(SQLiteStore.literal(.processing)))
                ORDER BY coalesce(scheduled_at, enqueued_at), id LIMIT ?
                """,
                [.integer(limit)]
            )
        }
        return try rows.map(Self.listing)
    }

    private static func listing(_ row: SQLiteRow) throws -> NotificationListing {
        NotificationListing(
            row: try NotificationRecord(stored: row), leaseOwner: try row.optionalString("lease_owner"),
            leaseUntil: try row.optionalDate("lease_until")
        )
    }
}
