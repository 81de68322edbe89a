public import Foundation
public import HeraldCore
public import HeraldStore
import PostgresNIO

extension PostgresStore {
    private static let notificationColumns = """
        id, tag_expression, payloads, state, counts, cursor, enqueued_at, started_at, ended_at, \
        template, direct_targets, scheduled_at, part_of, upper_bound, trace_context, spread_seconds, broadcast_channel
        """

    static func decodeNotification(_ row: PostgresRow) throws(StoreError) -> NotificationRecord {
        try NotificationRecord(stored: row.byName)
    }

    /// Persists a new notification in the state given (see the protocol).
    public func enqueueNotification(_ notification: NotificationRecord) async throws {
        if notification.state == .scheduled, notification.scheduledAt == nil {
            throw HeraldError.badRequest("a scheduled notification needs the time it is due (scheduledAt)")
        }
        var statement = try insertStatement(notification)
        // Idle nodes hear of it at once (delivered when the insert commits).
        statement.sql = "WITH inserted AS (\(statement.sql)) SELECT id, pg_notify('\(PostgresDatabase.workChannel)', \(statement.bind(hub))) FROM inserted"
        guard try await !query(statement).isEmpty else {
            throw HeraldError.conflict("a notification with id '\(notification.id)' exists")
        }
    }

    /// Inserts a notification row unless its id is taken, returning its id if it did. With an
    /// idempotency key, the row holds it, and is not inserted either when the key is taken
    /// (the unique index on the key decides, also between nodes).
    func insertStatement(_ n: NotificationRecord, idempotencyKey key: IdempotencyKey? = nil) throws -> SQLStatement {
        var statement = SQLStatement()
        var keyColumns = "", keyValues = "", conflict = "(hub, id)"
        if let key {
            keyColumns = ", idempotency_scope, idempotency_key, idempotency_digest, idempotency_answer, idempotency_expires_at"
            keyValues = """
                , \(statement.bind(key.scope)), \(statement.bind(key.key)), \(statement.bind(key.digest)), \
                \(statement.bind(key.answer)), \(statement.bind(key.expiry(acceptedAt: n.enqueuedAt)))
                """
            conflict = ""
        }
        statement.sql = """
            INSERT INTO herald.notifications (hub, \(Self.notificationColumns)\(keyColumns)) VALUES (\(statement.bind(hub)), \
            \(statement.bind(n.id)), \(statement.bind(n.tagExpression)), \(statement.bind(try StoredJSON.encode(n.payloads))), \
            \(statement.bind(n.state.rawValue)), \(statement.bind(try StoredJSON.encode(n.counts))), \(statement.bind(n.cursor)), \
            \(statement.bind(n.enqueuedAt)), \(statement.bind(n.startedAt)), \(statement.bind(n.endedAt)), \
            \(statement.bind(try n.template.map(StoredJSON.encode))), \(statement.bind(try n.directTargets.map(StoredJSON.encode))), \
            \(statement.bind(n.scheduledAt)), \(statement.bind(n.partOf)), \(statement.bind(n.upperBound)), \(statement.bind(n.traceContext)), \
            \(statement.bind(n.spread.map { Int($0.components.seconds) })), \(statement.bind(n.broadcastChannel))\(keyValues)) \
            ON CONFLICT \(conflict) DO NOTHING RETURNING id
            """
        return statement
    }

    /// Claims the notification that has waited longest (see the protocol). `FOR UPDATE SKIP
    /// LOCKED` lets every node claim at once without waiting on each other's candidates: each
    /// takes the oldest one that nobody else is claiming.
    public func claimNotification(now: Date, lease: Duration, owner: String) async throws -> NotificationRecord? {
        let nowMs = now.storeMilliseconds
        let leaseUntil = nowMs.addingReportingOverflow(max(0, lease.storeMilliseconds)).partialValue
        var statement = SQLStatement()
        let hub = statement.bind(hub), now = statement.bind(nowMs)
        let enqueued = statement.bind(NotificationState.enqueued.rawValue)
        let processing = statement.bind(NotificationState.processing.rawValue)
        let scheduled = statement.bind(NotificationState.scheduled.rawValue)
        // The state list repeats the partial index's condition, so that the index is used.
        statement.sql = """
            UPDATE herald.notifications SET state = \(processing), started_at = coalesce(started_at, \(now)), \
            lease_until = \(statement.bind(leaseUntil)), lease_owner = \(statement.bind(owner)) \
            WHERE hub = \(hub) AND id = (\
            SELECT id FROM herald.notifications WHERE hub = \(hub) AND state IN ('Enqueued', 'Processing', 'Scheduled') \
            AND (state = \(enqueued) OR (state = \(processing) AND lease_until < \(now)) OR (state = \(scheduled) AND scheduled_at <= \(now))) \
            ORDER BY coalesce(scheduled_at, enqueued_at), id LIMIT 1 FOR UPDATE SKIP LOCKED) \
            RETURNING \(Self.notificationColumns)
            """
        return try await query(statement).first.map(Self.decodeNotification)
    }

    /// Records progress while `owner` holds the lease (see the protocol). A notification handed
    /// back (its lease ending now) is announced, so that an idle node resumes it at once.
    public func saveProgress(id: String, owner: String, cursor: String?, counts: OutcomeCounts, leaseUntil: Date) async throws {
        let progress = (cursor: cursor, counts: try StoredJSON.encode(counts))
        try await updateLeased(UpdateLeased(hub: hub, id: id, owner: owner, progress: progress, leaseUntil: leaseUntil.storeMilliseconds))
        if leaseUntil <= now() {
            var announce = SQLStatement()
            announce.sql = "SELECT pg_notify('\(PostgresDatabase.workChannel)', \(announce.bind(hub)))"
            try await query(announce)
        }
    }

    public func renewLease(id: String, owner: String, until: Date) async throws {
        try await updateLeased(UpdateLeased(hub: hub, id: id, owner: owner, progress: nil, leaseUntil: until.storeMilliseconds))
    }

    /// Ends the leases of an earlier run of this node (see the protocol), and announces the
    /// work, so that an idle worker on any node resumes it at once.
    public func endLeases(ownerPrefix: String, except owner: String, now: Date) async throws -> Int {
        var statement = SQLStatement()
        let nowMs = statement.bind(now.storeMilliseconds), prefix = statement.bind(ownerPrefix)
        statement.sql = """
            UPDATE herald.notifications SET lease_until = \(nowMs) \
            WHERE hub = \(statement.bind(hub)) AND state = \(statement.bind(NotificationState.processing.rawValue)) \
            AND left(lease_owner, length(\(prefix))) = \(prefix) AND lease_owner <> \(statement.bind(owner)) \
            AND lease_until > \(nowMs) RETURNING id
            """
        let ended = try await query(statement).count
        if ended > 0 {
            var announce = SQLStatement()
            announce.sql = "SELECT pg_notify('\(PostgresDatabase.workChannel)', \(announce.bind(hub)))"
            try await query(announce)
        }
        return ended
    }

    /// Records the final state and ends the lease, while `owner` holds it (see the protocol).
    public func finishNotification(id: String, owner: String, state: NotificationState, counts: OutcomeCounts, endedAt: Date) async throws {
        var statement = SQLStatement()
        statement.sql = """
            state = \(statement.bind(state.rawValue)), counts = \(statement.bind(try StoredJSON.encode(counts))), \
            ended_at = \(statement.bind(endedAt)), lease_until = NULL, lease_owner = NULL
            """
        try await updateLeased(id: id, owner: owner, statement)
    }

    /// Applies the assignments of `set` to the notification if it is processing under
    /// `owner`'s lease, in one statement that also reads the state it found; otherwise throws
    /// `notFound` (no such notification) or `conflict` (someone else's, or finished).
    private func updateLeased(id: String, owner: String, _ set: SQLStatement) async throws {
        var statement = set
        let hub = statement.bind(hub), idPlaceholder = statement.bind(id)
        statement.sql = """
            WITH updated AS (UPDATE herald.notifications SET \(set.sql) WHERE hub = \(hub) AND id = \(idPlaceholder) \
            AND state = \(statement.bind(NotificationState.processing.rawValue)) AND lease_owner = \(statement.bind(owner)) \
            RETURNING id) \
            SELECT EXISTS (SELECT FROM updated) AS updated, \
            (SELECT state FROM herald.notifications WHERE hub = \(hub) AND id = \(idPlaceholder)) AS state
            """
        guard let row = try await query(statement).first?.byName else { return }
        try Self.checkLeased(id: id, updated: try row.bool("updated"), state: try row.optionalString("state"))
    }

    /// ``updateLeased(id:owner:_:)`` for a lease's renewal or a delivery's progress, prepared.
    private func updateLeased(_ statement: UpdateLeased) async throws {
        guard let row = try await execute(statement).first else { return }
        try Self.checkLeased(id: statement.id, updated: row.updated, state: row.state)
    }

    /// What an update under a lease found: nothing to do when it updated the notification;
    /// otherwise `notFound` (no such notification, `state` is `nil`) or the lease lost.
    private static func checkLeased(id: String, updated: Bool, state: String?) throws {
        if updated { return }
        guard let state else { throw HeraldError.notFound("no notification with id '\(id)'") }
        throw StoreError.leaseLost(id, state: state)
    }

    /// Splits the rest of a claimed notification into partitions (see the protocol): one
    /// transaction that locks the claimed row, and announces the partitions when it commits.
    public func splitNotification(id: String, owner: String, at boundaries: [String]) async throws {
        try await transaction { [self] connection in
            var select = SQLStatement()
            select.sql = """
                SELECT \(Self.notificationColumns) FROM herald.notifications WHERE hub = \(select.bind(hub)) \
                AND id = \(select.bind(id)) AND state = \(select.bind(NotificationState.processing.rawValue)) \
                AND lease_owner = \(select.bind(owner)) FOR UPDATE
                """
            guard let claimed = try await query(select, on: connection).first.map(Self.decodeNotification) else {
                var state = SQLStatement()
                state.sql = "SELECT state FROM herald.notifications WHERE hub = \(state.bind(hub)) AND id = \(state.bind(id))"
                guard let row = try await query(state, on: connection).first else {
                    throw HeraldError.notFound("no notification with id '\(id)'")
                }
                throw StoreError.leaseLost(id, state: try row.byName.string("state"))
            }
            if let refusal = claimed.splitRefusal(at: boundaries) { throw HeraldError.badRequest(refusal) }
            var bound = SQLStatement()
            bound.sql = """
                UPDATE herald.notifications SET upper_bound = \(bound.bind(boundaries[0])) \
                WHERE hub = \(bound.bind(hub)) AND id = \(bound.bind(id))
                """
            try await query(bound, on: connection)
            for partition in claimed.partitions(at: boundaries) {
                guard try await !query(try insertStatement(partition), on: connection).isEmpty else {
                    throw HeraldError.conflict("a notification with id '\(partition.id)' exists")
                }
            }
            var announce = SQLStatement()
            announce.sql = "SELECT pg_notify('\(PostgresDatabase.workChannel)', \(announce.bind(hub)))"
            try await query(announce, on: connection)
        }
    }

    public func notification(id: String) async throws -> NotificationRecord? {
        var statement = SQLStatement()
        let hub = statement.bind(hub), idPlaceholder = statement.bind(id)
        statement.sql = """
            SELECT \(Self.notificationColumns) FROM herald.notifications WHERE hub = \(hub) \
            AND ((id = \(idPlaceholder) AND part_of IS NULL) OR part_of = \(idPlaceholder))
            """
        let records = try await query(statement).map(Self.decodeNotification)
        guard let whole = records.first(where: { $0.partOf == nil }) else { return nil }
        return whole.combined(withPartitions: records.filter { $0.partOf != nil })
    }

    /// Cancels a scheduled notification (see the protocol): one statement, so a worker claiming
    /// it at the same moment either wins or finds it cancelled.
    public func cancelScheduledNotification(id: String, now: Date) async throws -> Bool {
        var statement = SQLStatement()
        let hub = statement.bind(hub), idPlaceholder = statement.bind(id)
        // The old state of the row (locked by the UPDATE when it changes it), and whether it changed.
        statement.sql = """
            WITH cancelled AS (UPDATE herald.notifications SET state = \(statement.bind(NotificationState.cancelled.rawValue)), \
            ended_at = \(statement.bind(now)), lease_until = NULL, lease_owner = NULL WHERE hub = \(hub) AND id = \(idPlaceholder) \
            AND state = \(statement.bind(NotificationState.scheduled.rawValue)) RETURNING id) \
            SELECT (SELECT count(*) FROM cancelled) AS cancelled, \
            (SELECT state FROM herald.notifications WHERE hub = \(hub) AND id = \(idPlaceholder)) AS state
            """
        guard let row = try await query(statement).first?.byName else { return false }
        if try row.int("cancelled") > 0 { return true }
        guard let state = try row.optionalString("state") else { return false }
        throw HeraldError.conflict(
            "the notification '\(id)' is no longer scheduled (it is \(state)); only a scheduled notification can be cancelled"
        )
    }

    public func nextScheduledTime() async throws -> Date? {
        var statement = SQLStatement()
        statement.sql = """
            SELECT min(scheduled_at) AS next FROM herald.notifications \
            WHERE hub = \(statement.bind(hub)) AND state = \(statement.bind(NotificationState.scheduled.rawValue)) \
            AND scheduled_at IS NOT NULL
            """
        return try await query(statement).first?.byName.optionalDate("next")
    }

    public func queueStatistics(now: Date) async throws -> QueueStatistics {
        var statement = SQLStatement()
        let enqueued = statement.bind(NotificationState.enqueued.rawValue)
        let scheduled = statement.bind(NotificationState.scheduled.rawValue)
        let processing = statement.bind(NotificationState.processing.rawValue)
        let nowMs = statement.bind(now.storeMilliseconds)
        statement.sql = """
            SELECT             count(*) FILTER (WHERE state = \(enqueued) OR (state = \(scheduled) AND scheduled_at <= \(nowMs)))::bigint AS waiting,             count(*) FILTER (WHERE state = \(processing))::bigint AS processing,             min(greatest(enqueued_at, coalesce(scheduled_at, enqueued_at)))             FILTER (WHERE state = \(enqueued) OR (state = \(scheduled) AND scheduled_at <= \(nowMs))) AS oldest             FROM herald.notifications             WHERE hub = \(statement.bind(hub)) AND state IN (\(enqueued), \(scheduled), \(processing))
            """
        guard let row = try await query(statement).first?.byName else {
            return QueueStatistics(waiting: 0, processing: 0, oldestWaitingSince: nil)
        }
        return QueueStatistics(waiting: try row.int("waiting"), processing: try row.int("processing"), oldestWaitingSince: try row.optionalDate("oldest"))
    }

    /// One page of the history, newest first (see the protocol and ``NotificationHistoryPlan``),
    /// in one statement: per state, a range of the history index read backwards no further than
    /// the page; the ranges merged; then the rows and their partitions.
    public func notificationHistory(
        states: Set<NotificationState>?, before cursor: NotificationHistoryCursor?, limit: Int
    ) async throws -> [NotificationListing] {
        let plan = NotificationHistoryPlan(states: states)
        return try await plan.page(limit: limit, before: cursor) { wanted, after in
            var statement = SQLStatement()
            let hub = statement.bind(hub), wantedPlaceholder = statement.bind(wanted)
            let afterCondition = after.map { " AND (enqueued_at, id) < (\(statement.bind($0.enqueuedAt)), \(statement.bind($0.id)))" } ?? ""
            func range(_ condition: String) -> String {
                """
                (SELECT enqueued_at, id FROM herald.notifications WHERE hub = \(hub) AND part_of IS NULL AND \(condition)\
                \(afterCondition) ORDER BY enqueued_at DESC, id DESC LIMIT \(wantedPlaceholder))
                """
            }
            var ranges = plan.storedStates.map { range("state = \(statement.bind($0))") }
            if plan.readsSplitNotifications { ranges.append(range("upper_bound IS NOT NULL")) }
            statement.sql = """
                WITH page AS (SELECT enqueued_at, id FROM (\(ranges.joined(separator: " UNION "))) AS ranges \
                ORDER BY enqueued_at DESC, id DESC LIMIT \(wantedPlaceholder)) \
                SELECT \(Self.notificationColumns), lease_owner, lease_until FROM herald.notifications \
                WHERE hub = \(hub) AND part_of IS NULL AND id IN (SELECT id FROM page) \
                UNION ALL SELECT \(Self.notificationColumns), lease_owner, lease_until FROM herald.notifications \
                WHERE hub = \(hub) AND part_of IN (SELECT id FROM page)
                """
            let rows = try await query(statement).map(Self.decodeListing)
            // The page's whole rows are its positions, newest first.
            let positions = rows.filter { $0.record.partOf == nil }
                .map { (enqueuedAt: $0.record.enqueuedAt.storeMilliseconds, id: $0.record.id) }
                .sorted { a, b in a.enqueuedAt != b.enqueuedAt ? a.enqueuedAt > b.enqueuedAt : b.id.utf8.lexicographicallyPrecedes(a.id.utf8) }
            return (positions, rows)
        }
    }

    /// A channel's broadcasts, newest first (see the protocol): a range of the channel's index
    /// read backwards.
    public func broadcasts(toChannel channel: String, before cursor: NotificationHistoryCursor?, limit: Int) async throws -> [NotificationRecord] {
        guard limit > 0 else { return [] }
        var statement = SQLStatement()
        statement.sql = """
            SELECT \(Self.notificationColumns) FROM herald.notifications \
            WHERE hub = \(statement.bind(hub)) AND broadcast_channel = \(statement.bind(channel))
            """
        if let cursor {
            statement.sql += " AND (enqueued_at, id) < (\(statement.bind(cursor.enqueuedAt.storeMilliseconds)), \(statement.bind(cursor.id)))"
        }
        statement.sql += " ORDER BY enqueued_at DESC, id DESC LIMIT \(statement.bind(limit))"
        return try await query(statement).map(Self.decodeNotification)
    }

    /// The queue as it is (see the protocol): the waiting index's enqueued and processing rows,
    /// in the order workers claim them.
    public func queueEntries(limit: Int) async throws -> [NotificationListing] {
        guard limit > 0 else { return [] }
        var statement = SQLStatement()
        // The state list repeats the partial index's condition, so that the index is used.
        statement.sql = """
            SELECT \(Self.notificationColumns), lease_owner, lease_until FROM herald.notifications \
            WHERE hub = \(statement.bind(hub)) AND state IN ('Enqueued', 'Processing', 'Scheduled') \
            AND state IN (\(statement.bind(NotificationState.enqueued.rawValue)), \(statement.bind(NotificationState.processing.rawValue))) \
            ORDER BY coalesce(scheduled_at, enqueued_at), id LIMIT \(statement.bind(limit))
            """
        return try await query(statement).map(Self.decodeListing)
    }

    static func decodeListing(_ row: PostgresRow) throws(StoreError) -> NotificationListing {
        let columns = row.byName
        return NotificationListing(
            row: try NotificationRecord(stored: columns), leaseOwner: try columns.optionalString("lease_owner"),
            leaseUntil: try columns.optionalDate("lease_until")
        )
    }
}

/// The update of a notification's lease (and of its progress, for
/// ``PostgresStore/saveProgress(id:owner:cursor:counts:leaseUntil:)``) while `owner` holds it
/// (see `PostgresStore.updateLeased(id:owner:_:)`), prepared once per connection: a delivery
/// saves its progress after every page. Its row says whether the notification was updated,
/// and its state (`NULL`: no such notification).
struct UpdateLeased: PostgresPreparedStatement {
    static let name = "herald_update_leased_v1"
    static let sql = """
        WITH updated AS (UPDATE herald.notifications SET \
        cursor = CASE WHEN $4 THEN $5 ELSE cursor END, counts = CASE WHEN $4 THEN $6 ELSE counts END, lease_until = $7 \
        WHERE hub = $1 AND id = $2 AND state = $8 AND lease_owner = $3 RETURNING id) \
        SELECT EXISTS (SELECT FROM updated), (SELECT state FROM herald.notifications WHERE hub = $1 AND id = $2)
        """

    struct Row {
        var updated: Bool
        var state: String?
    }

    static var bindingDataTypes: [PostgresDataType] { [.text, .text, .text, .bool, .text, .text, .int8, .text] }

    var hub: String
    var id: String
    var owner: String
    /// The cursor and the counts (JSON) to save; `nil` to renew the lease alone.
    var progress: (cursor: String?, counts: String)?
    var leaseUntil: Int

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 8)
        bindings.append(hub)
        bindings.append(id)
        bindings.append(owner)
        bindings.append(progress != nil)
        bindings.append(progress?.cursor)
        bindings.append(progress?.counts)
        bindings.append(leaseUntil)
        bindings.append(NotificationState.processing.rawValue)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        let (updated, state) = try row.decode((Bool, String?).self)
        return Row(updated: updated, state: state)
    }
}
