public import Foundation
public import HeraldCore
import SQLiteNIO
import HeraldStore

extension SQLiteStore {
    private static let columns = """
        id, tag_expression, payloads, state, counts, cursor, enqueued_at, started_at, ended_at, \
        template, direct_targets, scheduled_at
        """

    private static func decode(_ row: SQLiteRow) throws(SQLiteStoreError) -> NotificationRecord {
        guard let state = NotificationState(rawValue: try row.string("state")) else {
            throw SQLiteStoreError(code: .corruptData, message: "a stored notification has an unknown state")
        }
        return NotificationRecord(
            id: try row.string("id"),
            tagExpression: try row.optionalString("tag_expression"),
            payloads: try row.json([PlatformPayload].self, "payloads"),
            template: try row.optionalJSON(TemplateSend.self, "template"),
            directTargets: try row.optionalJSON([DirectTarget].self, "direct_targets"),
            scheduledAt: try row.optionalDate("scheduled_at"),
            state: state,
            counts: try row.json(OutcomeCounts.self, "counts"),
            cursor: try row.optionalString("cursor"),
            enqueuedAt: try row.date("enqueued_at"),
            startedAt: try row.optionalDate("started_at"),
            endedAt: try row.optionalDate("ended_at")
        )
    }

    /// Persists a new notification as given, in the state given: normally
    /// ``NotificationState/enqueued``, or ``NotificationState/scheduled`` for one whose
    /// ``NotificationRecord/scheduledAt`` is to come. Throws ``HeraldError/conflict(_:)`` if the
    /// id is taken, ``HeraldError/badRequest(_:)`` for a scheduled one without a time.
    public func enqueueNotification(_ notification: NotificationRecord) async throws {
        if notification.state == .scheduled, notification.scheduledAt == nil {
            throw HeraldError.badRequest("a scheduled notification needs the time it is due (scheduledAt)")
        }
        let binds: [SQLiteData] = [
            .text(notification.id), SQLiteData(notification.tagExpression), .text(try StoredJSON.encode(notification.payloads)),
            .text(notification.state.rawValue), .text(try StoredJSON.encode(notification.counts)), SQLiteData(notification.cursor),
            SQLiteData(notification.enqueuedAt), SQLiteData(notification.startedAt), SQLiteData(notification.endedAt),
            SQLiteData(try notification.template.map(StoredJSON.encode)), SQLiteData(try notification.directTargets.map(StoredJSON.encode)),
            SQLiteData(notification.scheduledAt),
        ]
        let inserted = try await write { connection in
            try await !connection.query(
                """
                INSERT INTO notifications (\(Self.columns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (id) DO NOTHING RETURNING id
                """,
                binds
            ).isEmpty
        }
        guard inserted else { throw HeraldError.conflict("a notification with id '\(notification.id)' exists") }
    }

    /// Claims the notification that has waited longest (see the protocol): the one due first,
    /// a scheduled notification being due at its `scheduledAt` and any other at its
    /// `enqueuedAt`. The state index finds the candidates; finished notifications are not read.
    public func claimNotification(now: Date, lease: Duration) async throws -> NotificationRecord? {
        let nowMs = now.storeMilliseconds
        let leaseUntil = nowMs.addingReportingOverflow(max(0, lease.storeMilliseconds)).partialValue
        let rows = try await write { connection in
            try await connection.query(
                """
                UPDATE notifications SET state = ?1, started_at = coalesce(started_at, ?3), lease_until = ?4
                WHERE id = (
                    SELECT id FROM notifications
                    WHERE state IN (?1, ?2, ?5)
                        AND (state = ?2 OR (state = ?1 AND lease_until < ?3) OR (state = ?5 AND scheduled_at <= ?3))
                    ORDER BY coalesce(scheduled_at, enqueued_at), id LIMIT 1
                )
                RETURNING \(Self.columns)
                """,
                [
                    .text(NotificationState.processing.rawValue), .text(NotificationState.enqueued.rawValue),
                    .integer(nowMs), .integer(leaseUntil), .text(NotificationState.scheduled.rawValue),
                ]
            )
        }
        return try rows.first.map(Self.decode)
    }

    /// Records progress. Throws ``HeraldError/notFound(_:)`` for an unknown id.
    public func saveProgress(id: String, cursor: String?, counts: OutcomeCounts, leaseUntil: Date) async throws {
        let binds: [SQLiteData] = [SQLiteData(cursor), .text(try StoredJSON.encode(counts)), SQLiteData(leaseUntil), .text(id)]
        try await updateNotification(
            id: id,
            sql: "UPDATE notifications SET cursor = ?, counts = ?, lease_until = ? WHERE id = ? RETURNING id",
            binds: binds
        )
    }

    /// Records the final state and clears the lease. Throws ``HeraldError/notFound(_:)`` for an
    /// unknown id.
    public func finishNotification(id: String, state: NotificationState, counts: OutcomeCounts, endedAt: Date) async throws {
        let binds: [SQLiteData] = [.text(state.rawValue), .text(try StoredJSON.encode(counts)), SQLiteData(endedAt), .text(id)]
        try await updateNotification(
            id: id,
            sql: "UPDATE notifications SET state = ?, counts = ?, ended_at = ?, lease_until = NULL WHERE id = ? RETURNING id",
            binds: binds
        )
    }

    private func updateNotification(id: String, sql: String, binds: [SQLiteData]) async throws {
        let updated = try await write { connection in try await !connection.query(sql, binds).isEmpty }
        guard updated else { throw HeraldError.notFound("no notification with id '\(id)'") }
    }

    public func notification(id: String) async throws -> NotificationRecord? {
        let rows = try await read { connection in
            try await connection.query("SELECT \(Self.columns) FROM notifications WHERE id = ?", [.text(id)])
        }
        return try rows.first.map(Self.decode)
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
                "UPDATE notifications SET state = ?, ended_at = ?, lease_until = NULL WHERE id = ? AND state = ? RETURNING id",
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
                SELECT scheduled_at FROM notifications WHERE state = ? AND scheduled_at IS NOT NULL
                ORDER BY scheduled_at LIMIT 1
                """,
                [.text(NotificationState.scheduled.rawValue)]
            )
        }
        return try rows.first?.optionalDate("scheduled_at")
    }
}
