import Foundation
public import HeraldCore
public import HeraldStore
import PostgresNIO
import Synchronization

extension PostgresStore {
    /// In the order ``Registration/init(stored:)`` reads them (see ``PostgresStoredRow``).
    static let registrationColumns = """
        r.platform, r.p256dh, r.auth, r.id, r.handle, r.handle_kind, r.owner, r.expires_at, r.template, \
        r.push_variables, r.installation_id, r.legacy_gcm, r.version, r.created_at, r.updated_at, r.tags
        """

    /// Rows per multi-row statement.
    static let maxRowsPerStatement = 500

    static func decodeRegistration(_ row: PostgresRow) throws(StoreError) -> Registration {
        try Registration(stored: row.byName)
    }

    /// The registrations of `rows`, read with one ``PostgresStoredRow``.
    static func decodeRegistrations(_ rows: [PostgresRow]) throws(StoreError) -> [Registration] {
        let reader = PostgresStoredRow()
        var registrations: [Registration] = []
        registrations.reserveCapacity(rows.count)
        for row in rows {
            reader.read(row)
            registrations.append(try Registration(stored: reader))
        }
        return registrations
    }

    /// An upsert of `rows`, whose ids must be distinct: a new registration gets version 1, an
    /// existing one keeps `created_at` and gets version + 1. Yields `id, version, created_at`
    /// per row written. With `sameInstallationOnly`, an existing row is replaced only if it
    /// belongs to the same installation, and yields nothing otherwise. `prefix` (a `WITH`
    /// clause and its values) comes first.
    func upsertStatement(
        _ rows: some Collection<StoredRegistration>, sameInstallationOnly: Bool = false, after prefix: SQLStatement = SQLStatement()
    ) -> SQLStatement {
        var statement = prefix
        statement.sql +=
            ("""
            INSERT INTO herald.registrations AS r (hub, id, platform, handle, p256dh, auth, owner, expires_at, version, \
            created_at, updated_at, tags, template, push_variables, installation_id, legacy_gcm, handle_kind) VALUES 
            """)
        let hubPlaceholder = statement.bind(hub)
        for (index, row) in rows.enumerated() {
            let r = row.registration
            let values = [
                hubPlaceholder, statement.bind(r.id), statement.bind(r.platform.rawValue), statement.bind(r.handle),
                statement.bind(r.webPushKeys?.p256dh), statement.bind(r.webPushKeys?.auth), statement.bind(r.owner),
                statement.bind(r.expiresAt), "1", statement.bind(r.createdAt.storeMilliseconds),
                statement.bind(r.updatedAt.storeMilliseconds), statement.bind(r.tags), statement.bind(row.templateJSON),
                statement.bind(row.pushVariablesJSON), statement.bind(r.installationID), statement.bind(r.legacyGCM),
                statement.bind(r.handleKind.storedValue),
            ]
            statement.sql += (index == 0 ? "(" : ", (") + values.joined(separator: ", ") + ")"
        }
        statement.sql += """
             ON CONFLICT (hub, id) DO UPDATE SET platform = excluded.platform, handle = excluded.handle, \
            p256dh = excluded.p256dh, auth = excluded.auth, owner = excluded.owner, expires_at = excluded.expires_at, \
            version = r.version + 1, updated_at = excluded.updated_at, tags = excluded.tags, template = excluded.template, \
            push_variables = excluded.push_variables, installation_id = excluded.installation_id, \
            legacy_gcm = excluded.legacy_gcm, handle_kind = excluded.handle_kind
            """
        if sameInstallationOnly { statement.sql += " WHERE r.installation_id IS NOT DISTINCT FROM excluded.installation_id" }
        statement.sql += " RETURNING r.id, r.version, r.created_at"
        return statement
    }

    /// `row`'s registration with the version and `createdAt` that a write returned.
    static func stored(_ row: StoredRegistration, from returned: PostgresRow) throws(StoreError) -> Registration {
        let returned = returned.byName
        var registration = row.registration
        registration.version = try returned.int("version")
        registration.createdAt = try returned.date("created_at")
        return registration
    }

    public func reserveRegistrationID(_ id: String, owner: String?, ttl: Duration) async throws {
        let now = now().storeMilliseconds
        let expiresAt = now.addingReportingOverflow(max(0, ttl.storeMilliseconds)).partialValue
        let sweep = housekeeping.withLock { Housekeeping.due(&$0.lastReservationSweep, now: now) }
        var statement = SQLStatement()
        statement.sql = """
            INSERT INTO herald.reservations (hub, id, owner, expires_at) \
            VALUES (\(statement.bind(hub)), \(statement.bind(id)), \(statement.bind(owner)), \(statement.bind(expiresAt))) \
            ON CONFLICT (hub, id) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
            """
        try await query(statement)
        if sweep {
            var sweepStatement = SQLStatement()
            sweepStatement.sql =
                "DELETE FROM herald.reservations WHERE hub = \(sweepStatement.bind(hub)) AND expires_at <= \(sweepStatement.bind(now))"
            try await query(sweepStatement)
        }
    }

    public func isRegistrationIDValid(_ id: String) async throws -> Bool {
        var statement = SQLStatement()
        let hub = statement.bind(hub), id = statement.bind(id)
        statement.sql = """
            SELECT EXISTS (SELECT 1 FROM herald.registrations WHERE hub = \(hub) AND id = \(id)) \
            OR EXISTS (SELECT 1 FROM herald.reservations WHERE hub = \(hub) AND id = \(id) \
            AND expires_at > \(statement.bind(now().storeMilliseconds))) AS valid
            """
        return try await query(statement).first?.byName.value("valid", as: Bool.self) ?? false
    }

    /// Creates or replaces a registration if `condition` holds (see the protocol).
    ///
    /// Writes that arrive together are applied together (see ``GroupCommitter``): one call of
    /// `herald.save_registrations` per run of distinct ids, which takes the advisory locks of the
    /// conditional ones (on the id and, when it replaces the device's other registrations, on
    /// the device), so that concurrent writers on any node take turns, then checks and writes
    /// every row in one statement. A write on a version (`ifVersion`) is a transaction of its own.
    public func upsertRegistration(_ registration: Registration, when condition: RegistrationCondition) async throws -> Registration {
        try checkOpen()
        let now = now()
        let row = try StoredRegistration(registration, createdAt: now, updatedAt: now)
        guard condition.ifVersion == nil else { return try await upsertRegistrationAlone(row, when: condition) }
        return try await registrationWrites.submit(RegistrationWrite(row: row, condition: condition)) { writes in
            await self.applyRegistrationWrites(writes)
        }
    }

    /// Writes one registration in a transaction of its own, under advisory locks on its id (and,
    /// when it replaces the device's other registrations, on the device): for writes on a version.
    func upsertRegistrationAlone(_ row: StoredRegistration, when condition: RegistrationCondition) async throws -> Registration {
        let id = row.registration.id
        let deviceKey = Self.deviceKey(row.registration)
        return try await transaction { [self] connection in
            try await lock(["registration \(id)"] + (condition.replacesOtherRegistrationsOfHandle ? [deviceKey] : []), on: connection)
            var read = SQLStatement()
            read.sql = "SELECT owner FROM herald.registrations WHERE hub = \(read.bind(hub)) AND id = \(read.bind(id))"
            let existing = try await query(read, on: connection).first
            var isIssued = false
            if existing == nil, condition.mustBeIssued {
                var issued = SQLStatement()
                issued.sql = """
                    SELECT 1 FROM herald.reservations WHERE hub = \(issued.bind(hub)) AND id = \(issued.bind(id)) \
                    AND expires_at > \(issued.bind(row.registration.updatedAt.storeMilliseconds))
                    """
                isIssued = try await !query(issued, on: connection).isEmpty
            }
            let existingOwner: String?? = try existing.map { row throws(StoreError) in try row.byName.optionalString("owner") }
            if let violation = condition.violation(id: id, existingOwner: existingOwner, isIssued: isIssued) {
                throw violation
            }
            let stored: Registration
            if let ifVersion = condition.ifVersion {
                var update = SQLStatement()
                let r = row.registration
                update.sql = """
                    UPDATE herald.registrations AS r SET platform = \(update.bind(r.platform.rawValue)), \
                    handle = \(update.bind(r.handle)), p256dh = \(update.bind(r.webPushKeys?.p256dh)), \
                    auth = \(update.bind(r.webPushKeys?.auth)), owner = \(update.bind(r.owner)), \
                    expires_at = \(update.bind(r.expiresAt)), updated_at = \(update.bind(r.updatedAt.storeMilliseconds)), \
                    tags = \(update.bind(r.tags)), template = \(update.bind(row.templateJSON)), \
                    push_variables = \(update.bind(row.pushVariablesJSON)), installation_id = \(update.bind(r.installationID)), \
                    legacy_gcm = \(update.bind(r.legacyGCM)), handle_kind = \(update.bind(r.handleKind.storedValue)), \
                    version = r.version + 1 \
                    WHERE r.hub = \(update.bind(hub)) AND r.id = \(update.bind(r.id)) AND r.version = \(update.bind(ifVersion)) \
                    RETURNING r.id, r.version, r.created_at
                    """
                guard let returned = try await query(update, on: connection).first else {
                    throw StoreError.versionMismatch("the registration does not have version \(ifVersion)")
                }
                stored = try Self.stored(row, from: returned)
            } else {
                guard let returned = try await query(upsertStatement([row]), on: connection).first else {
                    throw StoreError(code: .database, message: "an upserted registration was not returned")
                }
                stored = try Self.stored(row, from: returned)
            }
            if condition.replacesOtherRegistrationsOfHandle {
                var delete = SQLStatement()
                delete.sql = """
                    DELETE FROM herald.registrations WHERE hub = \(delete.bind(hub)) AND handle = \(delete.bind(stored.handle)) \
                    AND platform = \(delete.bind(stored.platform.rawValue)) AND id <> \(delete.bind(id)) AND installation_id IS NULL
                    """
                try await query(delete, on: connection)
            }
            return stored
        }
    }

    /// The registration id a device should use (see the protocol), with one statement: the
    /// owner's registrations of the handles are read, all but the oldest deleted, and `newID`
    /// reserved if there was none. Calls for the same owner do not wait for each other: two at
    /// once find the same oldest registration and delete the same duplicates, or, finding none,
    /// reserve an id each, as they would one after the other.
    public func registrationID(forHandles handles: [String], owner: String, orReserve newID: String, ttl: Duration) async throws -> String {
        let now = now().storeMilliseconds
        let expiresAt = now.addingReportingOverflow(max(0, ttl.storeMilliseconds)).partialValue
        let handles = Array(Set(handles)).sorted()
        guard !handles.isEmpty else { throw HeraldError.badRequest("a device needs a handle") }
        let statement = RegistrationIDForHandles(hub: hub, handles: handles, owner: owner, newID: newID, expiresAt: expiresAt)
        guard let id = try await execute(statement).first else { throw StoreError(code: .database, message: "a registration id was not returned") }
        return id
    }

    public func registration(id: String) async throws -> Registration? {
        var statement = SQLStatement()
        statement.sql =
            "SELECT \(Self.registrationColumns) FROM herald.registrations AS r WHERE r.hub = \(statement.bind(hub)) AND r.id = \(statement.bind(id))"
        return try await query(statement).first.map(Self.decodeRegistration)
    }

    public func registrations(handle: String, platform: Platform?) async throws -> [Registration] {
        var statement = SQLStatement()
        statement.sql = """
            SELECT \(Self.registrationColumns) FROM herald.registrations AS r \
            WHERE r.hub = \(statement.bind(hub)) AND r.handle = \(statement.bind(handle))
            """
        if let platform { statement.sql += " AND r.platform = \(statement.bind(platform.rawValue))" }
        statement.sql += " ORDER BY r.created_at, r.id"
        return try await readRegistrations(statement)
    }

    /// Deletes a registration (see the protocol). A missing registration returns `false`,
    /// with or without `ifVersion`; a reservation of `id` is dropped either way.
    @discardableResult
    public func deleteRegistration(id: String, ifVersion: Int?, owner: String?) async throws -> Bool {
        try await transaction { [self] connection in
            if let owner {
                var read = SQLStatement()
                read.sql = "SELECT owner FROM herald.registrations WHERE hub = \(read.bind(hub)) AND id = \(read.bind(id)) FOR UPDATE"
                if let stored = try await query(read, on: connection).first,
                    try stored.byName.optionalString("owner") != owner
                {
                    throw HeraldError.forbidden("this registration belongs to another user")
                }
            }
            var delete = SQLStatement()
            delete.sql = "DELETE FROM herald.registrations WHERE hub = \(delete.bind(hub)) AND id = \(delete.bind(id))"
            if let ifVersion { delete.sql += " AND version = \(delete.bind(ifVersion))" }
            delete.sql += " RETURNING version"
            if try await !query(delete, on: connection).isEmpty {
                return true  // the trigger drops the reservation too
            }
            if let ifVersion {
                var exists = SQLStatement()
                exists.sql = "SELECT 1 FROM herald.registrations WHERE hub = \(exists.bind(hub)) AND id = \(exists.bind(id))"
                if try await !query(exists, on: connection).isEmpty {
                    throw StoreError.versionMismatch("the registration does not have version \(ifVersion)")
                }
            }
            var unreserve = SQLStatement()
            unreserve.sql = "DELETE FROM herald.reservations WHERE hub = \(unreserve.bind(hub)) AND id = \(unreserve.bind(id))"
            try await query(unreserve, on: connection)
            return false
        }
    }

    /// Deletes many registrations in one transaction (see the protocol). A registration derived
    /// from an installation takes the installation's other registrations with it, and the
    /// installation is marked ``Installation/pushChannelExpired`` (its version bumped,
    /// `updatedAt` set).
    public func deleteRegistrations(ids: [String]) async throws {
        guard !ids.isEmpty else { return }
        let now = now().storeMilliseconds
        try await transaction { [self] connection in
            var delete = SQLStatement()
            delete.sql = """
                DELETE FROM herald.registrations WHERE hub = \(delete.bind(hub)) AND id = ANY (\(delete.bind(ids))) \
                RETURNING installation_id
                """
            var installations: Set<String> = []
            for row in try await query(delete, on: connection) {
                if let id = try row.byName.optionalString("installation_id") { installations.insert(id) }
            }
            guard !installations.isEmpty else { return }
            let expired = installations.sorted()
            var mark = SQLStatement()
            mark.sql = """
                UPDATE herald.installations SET \
                document = jsonb_set(document, '{\(StoredInstallationDocument.pushChannelExpiredField)}', 'true'), \
                version = version + 1, updated_at = \(mark.bind(now)) \
                WHERE hub = \(mark.bind(hub)) AND id = ANY (\(mark.bind(expired)))
                """
            try await query(mark, on: connection)
            var derived = SQLStatement()
            derived.sql = "DELETE FROM herald.registrations WHERE hub = \(derived.bind(hub)) AND installation_id = ANY (\(derived.bind(expired)))"
            try await query(derived, on: connection)
        }
    }

    /// One page of registrations for the hub API's listings (see the protocol).
    ///
    /// Registrations derived from installations are skipped without reading them: their ids
    /// all start with ``Installation/registrationIDPrefix``, so they form one range of the id
    /// order, which an unfiltered or by-tag listing reads around (before it, then after it).
    public func listRegistrations(_ filter: RegistrationFilter, after cursor: String?, limit: Int) async throws -> [Registration] {
        guard limit > 0 else { return [] }
        if let handle = filter.handle {
            var statement = SQLStatement()
            statement.sql = """
                SELECT \(Self.registrationColumns) FROM herald.registrations AS r WHERE r.hub = \(statement.bind(hub)) \
                AND r.handle = \(statement.bind(handle)) AND r.installation_id IS NULL
                """
            if let cursor { statement.sql += " AND r.id > \(statement.bind(cursor))" }
            if let tag = filter.tag { statement.sql += " AND \(statement.bind(tag)) = ANY (r.tags)" }
            statement.sql += " ORDER BY r.id LIMIT \(statement.bind(limit))"
            return try await readRegistrations(statement)
        }

        let rangeStart = DerivedRegistrationIDs.start, rangeEnd = DerivedRegistrationIDs.end

        /// The listing's statement up to its id conditions; `idColumn` is what it orders by.
        func select() -> (SQLStatement, idColumn: String) {
            var statement = SQLStatement()
            if let tag = filter.tag {
                statement.sql = """
                    SELECT \(Self.registrationColumns) FROM herald.registration_tags AS t \
                    JOIN herald.registrations AS r ON r.hub = t.hub AND r.id = t.registration_id \
                    WHERE t.hub = \(statement.bind(hub)) AND t.tag = \(statement.bind(tag))
                    """
                return (statement, "t.registration_id")
            }
            statement.sql = "SELECT \(Self.registrationColumns) FROM herald.registrations AS r WHERE r.hub = \(statement.bind(hub))"
            return (statement, "r.id")
        }

        var result: [Registration] = []
        // Before the range, unless the cursor is past its start.
        if DerivedRegistrationIDs.hasIDsBefore(cursor: cursor) {
            var (statement, idColumn) = select()
            statement.sql += " AND \(idColumn) < \(statement.bind(rangeStart))"
            if let cursor { statement.sql += " AND \(idColumn) > \(statement.bind(cursor))" }
            statement.sql += " AND r.installation_id IS NULL ORDER BY \(idColumn) LIMIT \(statement.bind(limit))"
            result = try await readRegistrations(statement)
        }
        // After the range.
        if result.count < limit {
            var (statement, idColumn) = select()
            if let cursor, !DerivedRegistrationIDs.resumesAtEnd(cursor: cursor) {
                statement.sql += " AND \(idColumn) > \(statement.bind(cursor))"
            } else {
                statement.sql += " AND \(idColumn) >= \(statement.bind(rangeEnd))"
            }
            statement.sql += " AND r.installation_id IS NULL ORDER BY \(idColumn) LIMIT \(statement.bind(limit - result.count))"
            result += try await readRegistrations(statement)
        }
        return result
    }

    /// How many registrations an operator's query selects (see the protocol): a count over the
    /// tag index's rows of the driving tag (or the union of the driving tags' rows), or over
    /// every registration of the hub when no tag drives.
    public func countRegistrations(_ query: RegistrationQuery) async throws -> Int {
        let plan = try TagQueryPlan(query.expression)
        var statement = SQLStatement()
        let hub = statement.bind(hub)
        switch plan {
        case .scan(let condition):
            statement.sql = "SELECT count(*)::bigint AS n FROM herald.registrations AS r WHERE r.hub = \(hub)"
            statement.sql += Self.browseFilters(query, condition.map { [$0] } ?? [], &statement)
        case .tag(let tag, let rest):
            let tagPlaceholder = statement.bind(tag)
            let filters = Self.browseFilters(query, rest, &statement)
            if filters.isEmpty {
                // The tag index alone answers.
                statement.sql = "SELECT count(*)::bigint AS n FROM herald.registration_tags WHERE hub = \(hub) AND tag = \(tagPlaceholder)"
            } else {
                statement.sql = """
                    SELECT count(*)::bigint AS n FROM herald.registration_tags AS t \
                    JOIN herald.registrations AS r ON r.hub = t.hub AND r.id = t.registration_id \
                    WHERE t.hub = \(hub) AND t.tag = \(tagPlaceholder)\(filters)
                    """
            }
        case .anyTag(let tags, let rest):
            let tagsPlaceholder = statement.bind(tags)
            let filters = Self.browseFilters(query, rest, &statement)
            statement.sql = """
                SELECT count(*)::bigint AS n FROM herald.registrations AS r WHERE r.hub = \(hub) AND r.id IN \
                (SELECT registration_id FROM herald.registration_tags WHERE hub = \(hub) AND tag = ANY (\(tagsPlaceholder)))\(filters)
                """
        }
        return try await self.query(statement).first?.byName.int("n") ?? 0
    }

    /// The conditions of an operator's query besides the driving tags, on the registration `r`:
    /// its platform, handle prefix and kind of registration, and `rest` of the expression.
    static func browseFilters(_ query: RegistrationQuery, _ rest: [TagExpression], _ statement: inout SQLStatement) -> String {
        var sql = ""
        if let platform = query.platform { sql += " AND r.platform = \(statement.bind(platform.rawValue))" }
        if let prefix = query.handlePrefix, !prefix.isEmpty {
            // Compared as text, not as a LIKE pattern; the bounds make it a range of the handle index.
            let placeholder = statement.bind(prefix)
            sql += " AND r.handle >= \(placeholder) AND left(r.handle, length(\(placeholder))) = \(placeholder)"
            if let upper = query.handleUpperBound { sql += " AND r.handle < \(statement.bind(upper))" }
        }
        if !query.includeInstallationRegistrations { sql += " AND r.installation_id IS NULL" }
        if let kind = query.handleKind { sql += " AND r.handle_kind IS NOT DISTINCT FROM \(statement.bind(kind.storedValue))" }
        for condition in rest { sql += " AND " + Self.condition(condition, &statement) }
        return sql
    }

    /// An SQL condition on the tags of the registration aliased `r` that holds when
    /// `expression` matches; every tag is bound.
    static func condition(_ expression: TagExpression, _ statement: inout SQLStatement) -> String {
        switch expression {
        case .tag(let tag):
            return "\(statement.bind(tag)) = ANY (r.tags)"
        case .not(let inner):
            return "NOT " + condition(inner, &statement)
        case .and:
            let parts = TagQueryPlan.flatten(expression, and: true).map { condition($0, &statement) }
            return "(" + parts.joined(separator: " AND ") + ")"
        case .or:
            let (tags, others) = TagQueryPlan.disjuncts(expression)
            var parts: [String] = []
            if !tags.isEmpty { parts.append("r.tags && \(statement.bind(tags))") }
            parts += others.map { condition($0, &statement) }
            return "(" + parts.joined(separator: " OR ") + ")"
        }
    }

    func readRegistrations(_ statement: SQLStatement) async throws -> [Registration] {
        try Self.decodeRegistrations(try await query(statement))
    }

    /// Upserts many registrations in one transaction, 500 rows per statement, with the
    /// versioning of ``upsertRegistration(_:ifVersion:)`` but keeping the given `createdAt`
    /// (of a new registration) and `updatedAt`: for imports and benchmarks. A repeated id is
    /// applied in the order given.
    public func insertRegistrations(_ registrations: [Registration]) async throws {
        guard !registrations.isEmpty else { return }
        let rows = try Registration.inInsertOrder(registrations).map {
            try StoredRegistration($0, createdAt: $0.createdAt, updatedAt: $0.updatedAt)
        }
        try await transaction { [self] connection in
            for chunk in Self.distinctChunks(rows, id: \.registration.id) {
                try await query(upsertStatement(chunk), on: connection)
            }
        }
    }

    /// `rows` in order, cut into runs of at most ``maxRowsPerStatement`` with no id twice (one
    /// statement cannot write a row twice).
    static func distinctChunks<Row>(_ rows: [Row], id: (Row) -> String) -> [ArraySlice<Row>] {
        var chunks: [ArraySlice<Row>] = []
        var start = rows.startIndex
        var ids: Set<String> = []
        for index in rows.indices {
            if index - start == maxRowsPerStatement || ids.contains(id(rows[index])) {
                chunks.append(rows[start..<index])
                start = index
                ids = []
            }
            ids.insert(id(rows[index]))
        }
        if start < rows.endIndex { chunks.append(rows[start...]) }
        return chunks
    }

    public func registrationCount() async throws -> Int {
        var statement = SQLStatement()
        statement.sql = "SELECT count(*) AS n FROM herald.registrations WHERE hub = \(statement.bind(hub))"
        return try await query(statement).first?.byName.int("n") ?? 0
    }

    public func registrationCountsByPlatform() async throws -> [Platform: Int] {
        var statement = SQLStatement()
        statement.sql = "SELECT platform, count(*)::bigint AS n FROM herald.registrations WHERE hub = \(statement.bind(hub)) GROUP BY platform"
        var counts: [Platform: Int] = [:]
        for row in try await query(statement) {
            let columns = row.byName
            guard let platform = try Platform(rawValue: columns.string("platform")) else { continue }
            counts[platform] = try columns.int("n")
        }
        return counts
    }

    public func registrationIDBoundaries(after cursor: String?, every: Int, limit: Int) async throws -> [String] {
        guard every > 0, limit > 0 else { return [] }
        var boundaries: [(n: Int, id: String)] = []
        for row in try await boundaryRows(after: cursor, every: every, limit: limit, explaining: false) {
            let columns = row.byName
            boundaries.append((try columns.int("n"), try columns.string("id")))
        }
        // In the order they were found (sorted here: the statement's plan holds no sort).
        return boundaries.sorted { $0.n < $1.n }.map(\.id)
    }

    /// The plan PostgreSQL chooses for ``registrationIDBoundaries(after:every:limit:)``
    /// (`EXPLAIN`, in its transaction), for tests.
    package func explainRegistrationIDBoundaries(after cursor: String?, every: Int, limit: Int) async throws -> [String] {
        try await boundaryRows(after: cursor, every: every, limit: limit, explaining: true).map { try $0.decode(String.self) }
    }

    /// From each boundary to the next along the primary key's index (`OFFSET every - 1`): the
    /// index's entries are skipped, not numbered and filtered as a window function would (2 to
    /// 4 times the time for a million registrations). In a transaction with the page's planner
    /// settings (``indexRangeSettings``), so that each step is an index scan whatever the
    /// statistics say: on a table just loaded, the planner would sort every row after the
    /// boundary at each step.
    private func boundaryRows(after cursor: String?, every: Int, limit: Int, explaining: Bool) async throws -> [PostgresRow] {
        try checkOpen()
        var statement = SQLStatement()
        let hubParameter = statement.bind(hub), skip = statement.bind(every - 1)
        statement.sql = """
            WITH RECURSIVE boundary (id, n) AS ( \
            SELECT (SELECT id FROM herald.registrations WHERE hub = \(hubParameter) AND id > \(statement.bind(cursor ?? "")) \
            ORDER BY id OFFSET \(skip) LIMIT 1), 1 \
            UNION ALL SELECT (SELECT r.id FROM herald.registrations AS r WHERE r.hub = \(hubParameter) AND r.id > b.id \
            ORDER BY r.id OFFSET \(skip) LIMIT 1), b.n + 1 FROM boundary AS b \
            WHERE b.id IS NOT NULL AND b.n < \(statement.bind(limit))) \
            SELECT id, n FROM boundary WHERE id IS NOT NULL
            """
        let logger = database.clientLogger
        let query = explaining ? PostgresQuery(unsafeSQL: "EXPLAIN " + statement.sql, binds: statement.binds) : statement.query
        return try await database.run { connection in
            try await connection.withTransaction(logger: logger) { connection in
                try await connection.query(PostgresQuery(unsafeSQL: Self.indexRangeSettings), logger: logger)
                return try await connection.query(query, logger: logger).collect()
            }
        }
    }
}

/// The statement of ``PostgresStore/registrationID(forHandles:owner:orReserve:ttl:)``, prepared
/// once per connection.
struct RegistrationIDForHandles: PostgresPreparedStatement {
    static let name = "herald_registration_id_for_handles_v1"
    static let sql = """
        WITH mine AS (
            SELECT id, created_at FROM herald.registrations
            WHERE hub = $1 AND handle = ANY ($2::text[]) AND owner = $3 AND installation_id IS NULL
        ), kept AS (
            SELECT id FROM mine ORDER BY created_at, id LIMIT 1
        ), duplicates AS (
            DELETE FROM herald.registrations WHERE hub = $1 AND id IN (SELECT id FROM mine) AND id NOT IN (SELECT id FROM kept)
            RETURNING id
        ), reserved AS (
            INSERT INTO herald.reservations (hub, id, owner, expires_at)
            SELECT $1, $4, $3, $5 WHERE NOT EXISTS (SELECT 1 FROM kept)
            ON CONFLICT (hub, id) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
            RETURNING id
        )
        SELECT coalesce((SELECT id FROM kept), (SELECT id FROM reserved)) AS id
        """

    var hub: String
    var handles: [String]
    var owner: String
    var newID: String
    var expiresAt: Int

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 5)
        bindings.append(hub)
        bindings.append(handles)
        bindings.append(owner)
        bindings.append(newID)
        bindings.append(expiresAt)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> String {
        try row.decode(String.self)
    }
}
