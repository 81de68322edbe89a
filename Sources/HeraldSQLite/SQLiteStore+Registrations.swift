import Foundation
public import HeraldCore
public import HeraldStore
import Synchronization

extension SQLiteStore {
    public func reserveRegistrationID(_ id: String, owner: String?, ttl: Duration) async throws {
        let now = now().storeMilliseconds
        let expiresAt = now.addingReportingOverflow(max(0, ttl.storeMilliseconds)).partialValue
        let sweep = housekeeping.withLock { Housekeeping.due(&$0.lastReservationSweep, now: now) }
        try await write { connection in
            _ = try await connection.query(
                "INSERT OR REPLACE INTO reservations (id, owner, expires_at) VALUES (?, ?, ?)",
                [.text(id), SQLiteData(owner), .integer(expiresAt)]
            )
            if sweep {
                _ = try await connection.query("DELETE FROM reservations WHERE expires_at <= ?", [.integer(now)])
            }
        }
    }

    public func isRegistrationIDValid(_ id: String) async throws -> Bool {
        let now = now().storeMilliseconds
        let rows = try await read { connection in
            try await connection.query(
                """
                SELECT EXISTS (SELECT 1 FROM registrations WHERE id = ?1)
                    OR EXISTS (SELECT 1 FROM reservations WHERE id = ?1 AND expires_at > ?2) AS valid
                """,
                [.text(id), .integer(now)]
            )
        }
        return rows.first?.column("valid")?.integer == 1
    }

    /// Creates or replaces a registration if `condition` holds (see the protocol).
    /// `createdAt` of a new registration and `updatedAt` are the store's clock, to the
    /// millisecond; tags are stored unique and sorted. The returned registration equals what
    /// ``registration(id:)`` reads. Every field is replaced, `template`, `pushVariables`,
    /// `installationID` and `legacyGCM` included; registrations derived from installations are
    /// written by ``upsertInstallation(_:ifVersion:)``, not through here. Unconditional writes
    /// are group-committed with others; conditional ones are checked and written in the same
    /// transaction, in arrival order.
    public func upsertRegistration(_ registration: Registration, when condition: RegistrationCondition) async throws -> Registration {
        let now = now()
        let row = try RegistrationRow(registration, createdAt: now, updatedAt: now)
        return try await upsert(row, when: condition)
    }

    public func registrationID(forHandles handles: [String], owner: String, orReserve newID: String, ttl: Duration) async throws -> String {
        let now = now().storeMilliseconds
        let expiresAt = now.addingReportingOverflow(max(0, ttl.storeMilliseconds)).partialValue
        let handles = Array(Set(handles)).sorted()
        guard !handles.isEmpty else { throw HeraldError.badRequest("a device needs a handle") }
        return try await write { connection in
            let mine = try await connection.query(
                """
                SELECT id FROM registrations WHERE handle IN (\(TagConditionSQL.placeholders(handles.count))) \
                AND owner = ? AND installation_id IS NULL ORDER BY created_at, id
                """,
                handles.map { .text($0) } + [.text(owner)]
            ).compactMap { $0.column("id")?.string }
            if let first = mine.first {
                let duplicates = mine.dropFirst()
                if !duplicates.isEmpty {
                    _ = try await connection.query(
                        "DELETE FROM registrations WHERE id IN (\(TagConditionSQL.placeholders(duplicates.count)))",
                        duplicates.map { .text($0) }
                    )
                }
                return first
            }
            _ = try await connection.query(
                "INSERT OR REPLACE INTO reservations (id, owner, expires_at) VALUES (?, ?, ?)",
                [.text(newID), .text(owner), .integer(expiresAt)]
            )
            return newID
        }
    }

    public func registration(id: String) async throws -> Registration? {
        let rows = try await read { connection in
            try await connection.query(
                "SELECT \(RegistrationRow.selectColumns) FROM registrations AS r WHERE r.id = ?",
                [.text(id)]
            )
        }
        return try rows.first.map(Registration.init(stored:))
    }

    public func registrations(handle: String, platform: Platform?) async throws -> [Registration] {
        var sql = "SELECT \(RegistrationRow.selectColumns) FROM registrations AS r WHERE r.handle = ?"
        var binds: [SQLiteData] = [.text(handle)]
        if let platform {
            sql += " AND r.platform = ?"
            binds.append(.text(platform.rawValue))
        }
        sql += " ORDER BY r.created_at, r.id"
        let rows = try await read { [sql, binds] connection in try await connection.query(sql, binds) }
        return try rows.map(Registration.init(stored:))
    }

    /// Deletes a registration (see the protocol). A missing registration returns `false`,
    /// with or without `ifVersion`; a reservation of `id` is dropped either way.
    @discardableResult
    public func deleteRegistration(id: String, ifVersion: Int?, owner: String?) async throws -> Bool {
        try await write { connection in
            if let owner {
                let stored = try await connection.query("SELECT owner FROM registrations WHERE id = ?", [.text(id)]).first
                if let stored, stored.column("owner")?.string != owner {
                    throw HeraldError.forbidden("this registration belongs to another user")
                }
            }
            var sql = "DELETE FROM registrations WHERE id = ?"
            var binds: [SQLiteData] = [.text(id)]
            if let ifVersion {
                sql += " AND version = ?"
                binds.append(.integer(ifVersion))
            }
            if try await !connection.query(sql + " RETURNING version", binds).isEmpty {
                return true  // the delete trigger drops the reservation too
            }
            if let ifVersion,
                try await !connection.query("SELECT 1 FROM registrations WHERE id = ?", [.text(id)]).isEmpty
            {
                throw StoreError.versionMismatch("the registration does not have version \(ifVersion)")
            }
            _ = try await connection.query("DELETE FROM reservations WHERE id = ?", [.text(id)])
            return false
        }
    }

    /// Deletes many registrations in one transaction (see the protocol). A registration derived
    /// from an installation takes the installation's other registrations with it, and the
    /// installation is marked ``Installation/pushChannelExpired`` (its version bumped,
    /// `updatedAt` set), so that sends stop reaching the dead channel until the installation
    /// is written again.
    public func deleteRegistrations(ids: [String]) async throws {
        guard !ids.isEmpty else { return }
        let now = now().storeMilliseconds
        try await write { connection in
            var installations: Set<String> = []
            var start = ids.startIndex
            while start < ids.endIndex {
                let end = min(start + RegistrationRow.maxRowsPerStatement, ids.endIndex)
                let chunk = ids[start..<end]
                let deleted = try await connection.query(
                    "DELETE FROM registrations WHERE id IN (\(TagConditionSQL.placeholders(chunk.count))) RETURNING installation_id",
                    chunk.map { .text($0) }
                )
                for row in deleted {
                    if let installationID = row.column("installation_id")?.string { installations.insert(installationID) }
                }
                start = end
            }
            let expired = installations.sorted()
            start = expired.startIndex
            while start < expired.endIndex {
                let end = min(start + RegistrationRow.maxRowsPerStatement, expired.endIndex)
                let chunk = expired[start..<end].map { SQLiteData.text($0) }
                let placeholders = TagConditionSQL.placeholders(chunk.count)
                _ = try await connection.query(
                    """
                    UPDATE installations SET document = json_set(document, '$.pushChannelExpired', json('true')), \
                    version = version + 1, updated_at = ? WHERE id IN (\(placeholders))
                    """,
                    [.integer(now)] + chunk
                )
                _ = try await connection.query("DELETE FROM registrations WHERE installation_id IN (\(placeholders))", chunk)
                start = end
            }
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
            // The handle index finds the few registrations of a device; they are sorted by id.
            var sql = "SELECT \(RegistrationRow.selectColumns) FROM registrations AS r WHERE r.handle = ? AND r.installation_id IS NULL"
            var binds: [SQLiteData] = [.text(handle)]
            if let cursor {
                sql += " AND r.id > ?"
                binds.append(.text(cursor))
            }
            if let tag = filter.tag {
                sql += " AND " + TagConditionSQL.condition(.tag(tag), binds: &binds)
            }
            sql += " ORDER BY r.id LIMIT ?"
            binds.append(.integer(limit))
            return try await readRegistrations(sql, binds)
        }

        let select: String
        let selectBinds: [SQLiteData]
        let idColumn: String
        if let tag = filter.tag {
            // CROSS JOIN keeps the tag index as the outer loop: rows come in id order, no sort.
            select = """
                SELECT \(RegistrationRow.selectColumns) FROM registration_tags AS t \
                CROSS JOIN registrations AS r ON r.id = t.registration_id WHERE t.tag = ?
                """
            selectBinds = [.text(tag)]
            idColumn = "t.registration_id"
        } else {
            select = "SELECT \(RegistrationRow.selectColumns) FROM registrations AS r WHERE 1"
            selectBinds = []
            idColumn = "r.id"
        }

        let rangeStart = DerivedRegistrationIDs.start, rangeEnd = DerivedRegistrationIDs.end

        var result: [Registration] = []
        // Before the range, unless the cursor is past its start.
        if DerivedRegistrationIDs.hasIDsBefore(cursor: cursor) {
            var sql = select + " AND \(idColumn) < ?"
            var binds = selectBinds + [.text(rangeStart)]
            if let cursor {
                sql += " AND \(idColumn) > ?"
                binds.append(.text(cursor))
            }
            sql += " AND r.installation_id IS NULL ORDER BY \(idColumn) LIMIT ?"
            binds.append(.integer(limit))
            result = try await readRegistrations(sql, binds)
        }
        // After the range.
        if result.count < limit {
            var sql = select
            var binds = selectBinds
            if let cursor, !DerivedRegistrationIDs.resumesAtEnd(cursor: cursor) {
                sql += " AND \(idColumn) > ?"
                binds.append(.text(cursor))
            } else {
                sql += " AND \(idColumn) >= ?"
                binds.append(.text(rangeEnd))
            }
            sql += " AND r.installation_id IS NULL ORDER BY \(idColumn) LIMIT ?"
            binds.append(.integer(limit - result.count))
            result += try await readRegistrations(sql, binds)
        }
        return result
    }

    public func registrations(
        matching expression: TagExpression?,
        platforms: Set<Platform>?,
        kind: RegistrationKind?,
        after cursor: String?,
        through upperBound: String?,
        limit: Int
    ) async throws -> [Registration] {
        guard limit > 0 else { return [] }
        let plan = try TagQueryPlan(expression)
        // Conditions on the registration `r` besides the tags: not expired, on a platform asked for.
        var filterSQL = " AND (r.expires_at IS NULL OR r.expires_at > ?)"
        var filterBinds: [SQLiteData] = [.integer(now().storeMilliseconds)]
        if let platforms, !platforms.isSuperset(of: Platform.allCases) {
            guard !platforms.isEmpty else { return [] }
            let names = platforms.map(\.rawValue).sorted()
            filterSQL += " AND r.platform IN (\(TagConditionSQL.placeholders(names.count)))"
            filterBinds += names.map { .text($0) }
        }
        switch kind {
        case .native?: filterSQL += " AND r.template IS NULL"
        case .template?: filterSQL += " AND r.template IS NOT NULL"
        case nil: break
        }
        return try await registrationPage(
            plan, filterSQL: filterSQL, filterBinds: filterBinds, after: cursor, through: upperBound, limit: limit
        )
    }

    /// SQLite keeps no planner statistics (no `ANALYZE` is run): its plans for the pages are
    /// the same whatever the table holds, so there is nothing to refresh.
    public func refreshStatistics() async throws {}

    /// One page of the registrations that `plan` selects and that pass `filterSQL`, a condition
    /// on the registration `r` (with its `filterBinds`), in id order, strictly after `cursor` and
    /// up to and including `upperBound` (when given).
    private func registrationPage(
        _ plan: TagQueryPlan, filterSQL: String, filterBinds: [SQLiteData], after cursor: String?, through upperBound: String? = nil,
        limit: Int
    ) async throws -> [Registration] {
        func restSQL(_ rest: [TagExpression], _ binds: inout [SQLiteData]) -> String {
            rest.map { " AND " + TagConditionSQL.condition($0, binds: &binds) }.joined()
        }

        switch plan {
        case .scan(let condition):
            var sql = "SELECT \(RegistrationRow.selectColumns) FROM registrations AS r WHERE 1"
            var binds: [SQLiteData] = []
            if let cursor {
                sql += " AND r.id > ?"
                binds.append(.text(cursor))
            }
            if let upperBound {
                sql += " AND r.id <= ?"
                binds.append(.text(upperBound))
            }
            sql += filterSQL
            binds += filterBinds
            if let condition { sql += restSQL([condition], &binds) }
            sql += " ORDER BY r.id LIMIT ?"
            binds.append(.integer(limit))
            return try await readRegistrations(sql, binds)

        case .tag(let tag, let rest):
            // CROSS JOIN keeps the tag index as the outer loop: rows come in id order, no sort.
            var sql = """
                SELECT \(RegistrationRow.selectColumns) FROM registration_tags AS t \
                CROSS JOIN registrations AS r ON r.id = t.registration_id WHERE t.tag = ?
                """
            var binds: [SQLiteData] = [.text(tag)]
            if let cursor {
                sql += " AND t.registration_id > ?"
                binds.append(.text(cursor))
            }
            if let upperBound {
                sql += " AND t.registration_id <= ?"
                binds.append(.text(upperBound))
            }
            sql += filterSQL
            binds += filterBinds
            sql += restSQL(rest, &binds)
            sql += " ORDER BY t.registration_id LIMIT ?"
            binds.append(.integer(limit))
            return try await readRegistrations(sql, binds)

        case .anyTag(let tags, let rest):
            // Candidates: the next ids of any of the tags, merged in id order (SQLite merges the
            // sorted index ranges of a compound SELECT with ORDER BY); then the registrations
            // among them that pass the other conditions. Repeat until the page is full.
            var restBinds: [SQLiteData] = []
            let rest = restSQL(rest, &restBinds)
            var result: [Registration] = []
            var after = cursor
            while result.count < limit {
                let wanted = limit - result.count
                var candidateSQL = ""
                var candidateBinds: [SQLiteData] = []
                for (i, tag) in tags.enumerated() {
                    candidateSQL += i == 0 ? "" : " UNION "
                    candidateSQL += "SELECT registration_id FROM registration_tags WHERE tag = ?"
                    candidateBinds.append(.text(tag))
                    if let after {
                        candidateSQL += " AND registration_id > ?"
                        candidateBinds.append(.text(after))
                    }
                    if let upperBound {
                        candidateSQL += " AND registration_id <= ?"
                        candidateBinds.append(.text(upperBound))
                    }
                }
                candidateSQL += " ORDER BY 1 LIMIT ?"
                candidateBinds.append(.integer(wanted))
                let candidates = try await read { [candidateSQL, candidateBinds] connection in
                    try await connection.query(candidateSQL, candidateBinds)
                }.compactMap { $0.column("registration_id")?.string }
                guard let last = candidates.last else { break }

                let sql = """
                    SELECT \(RegistrationRow.selectColumns) FROM registrations AS r \
                    WHERE r.id IN (\(TagConditionSQL.placeholders(candidates.count)))\(filterSQL)\(rest) ORDER BY r.id
                    """
                result += try await readRegistrations(sql, candidates.map { .text($0) } + filterBinds + restBinds)
                if candidates.count < wanted { break }
                after = last
            }
            return result
        }
    }

    /// One page of the registrations an operator browses (see the protocol): the plan of
    /// ``registrations(matching:platforms:kind:after:through:limit:)`` with the query's own conditions.
    public func browseRegistrations(_ query: RegistrationQuery, after cursor: String?, limit: Int) async throws -> [Registration] {
        guard limit > 0 else { return [] }
        let plan = try TagQueryPlan(query.expression)
        let (filterSQL, filterBinds) = Self.browseFilter(query)
        return try await registrationPage(plan, filterSQL: filterSQL, filterBinds: filterBinds, after: cursor, limit: limit)
    }

    /// How many registrations an operator's query selects (see the protocol): a count over the
    /// tag index's rows of the driving tag (or the union of the driving tags' rows), or over
    /// every registration when no tag drives.
    public func countRegistrations(_ query: RegistrationQuery) async throws -> Int {
        let plan = try TagQueryPlan(query.expression)
        let (filterSQL, filterBinds) = Self.browseFilter(query)
        var binds: [SQLiteData] = []
        let sql: String
        switch plan {
        case .scan(let condition):
            var conditionSQL = ""
            var conditionBinds: [SQLiteData] = []
            if let condition { conditionSQL = " AND " + TagConditionSQL.condition(condition, binds: &conditionBinds) }
            sql = "SELECT count(*) AS n FROM registrations AS r WHERE 1\(filterSQL)\(conditionSQL)"
            binds = filterBinds + conditionBinds
        case .tag(let tag, let rest) where rest.isEmpty && filterSQL.isEmpty:
            // The tag index alone answers.
            sql = "SELECT count(*) AS n FROM registration_tags WHERE tag = ?"
            binds = [.text(tag)]
        case .tag(let tag, let rest):
            var restBinds: [SQLiteData] = []
            let restSQL = rest.map { " AND " + TagConditionSQL.condition($0, binds: &restBinds) }.joined()
            sql = """
                SELECT count(*) AS n FROM registration_tags AS t CROSS JOIN registrations AS r ON r.id = t.registration_id \
                WHERE t.tag = ?\(filterSQL)\(restSQL)
                """
            binds = [.text(tag)] + filterBinds + restBinds
        case .anyTag(let tags, let rest):
            var restBinds: [SQLiteData] = []
            let restSQL = rest.map { " AND " + TagConditionSQL.condition($0, binds: &restBinds) }.joined()
            sql = """
                SELECT count(*) AS n FROM registrations AS r WHERE r.id IN \
                (SELECT registration_id FROM registration_tags WHERE tag IN (\(TagConditionSQL.placeholders(tags.count))))\
                \(filterSQL)\(restSQL)
                """
            binds = tags.map { .text($0) } + filterBinds + restBinds
        }
        let rows = try await read { [binds] connection in try await connection.query(sql, binds) }
        return try rows.first?.int("n") ?? 0
    }

    /// The conditions of an operator's query besides the tags, on the registration `r`.
    private static func browseFilter(_ query: RegistrationQuery) -> (sql: String, binds: [SQLiteData]) {
        var sql = ""
        var binds: [SQLiteData] = []
        if let platform = query.platform {
            sql += " AND r.platform = ?"
            binds.append(.text(platform.rawValue))
        }
        if let prefix = query.handlePrefix, !prefix.isEmpty {
            // Compared as text, not as a LIKE pattern; the bounds make it a range of the handle index.
            sql += " AND r.handle >= ? AND substr(r.handle, 1, length(?)) = ?"
            binds += [.text(prefix), .text(prefix), .text(prefix)]
            if let upper = query.handleUpperBound {
                sql += " AND r.handle < ?"
                binds.append(.text(upper))
            }
        }
        if !query.includeInstallationRegistrations { sql += " AND r.installation_id IS NULL" }
        if let kind = query.handleKind {
            sql += " AND r.handle_kind IS ?"
            binds.append(SQLiteData(kind.storedValue))
        }
        return (sql, binds)
    }

    private func readRegistrations(_ sql: String, _ binds: [SQLiteData]) async throws -> [Registration] {
        let rows = try await read { connection in try await connection.query(sql, binds) }
        return try rows.map(Registration.init(stored:))
    }

    /// Upserts many registrations in one transaction, 500 rows per statement, with the
    /// versioning of ``upsertRegistration(_:ifVersion:)`` but keeping the given `createdAt`
    /// (of a new registration) and `updatedAt`: for imports and benchmarks.
    public func insertRegistrations(_ registrations: [Registration]) async throws {
        guard !registrations.isEmpty else { return }
        let registrations = Registration.inInsertOrder(registrations)
        try await write { connection in
            var start = registrations.startIndex
            var binds: [SQLiteData] = []
            binds.reserveCapacity(RegistrationRow.maxRowsPerStatement * RegistrationRow.bindsPerRow)
            let fullSQL = RegistrationRow.upsertSQL(rows: RegistrationRow.maxRowsPerStatement, returning: false)
            while start < registrations.endIndex {
                let end = min(start + RegistrationRow.maxRowsPerStatement, registrations.endIndex)
                binds.removeAll(keepingCapacity: true)
                for registration in registrations[start..<end] {
                    binds += try RegistrationRow(registration, createdAt: registration.createdAt, updatedAt: registration.updatedAt).insertBinds
                }
                let count = end - start
                let sql = count == RegistrationRow.maxRowsPerStatement ? fullSQL : RegistrationRow.upsertSQL(rows: count, returning: false)
                _ = try await connection.query(sql, binds)
                start = end
            }
        }
    }

    public func registrationCount() async throws -> Int {
        let rows = try await read { connection in try await connection.query("SELECT count(*) AS n FROM registrations") }
        return rows.first?.column("n")?.integer ?? 0
    }

    public func registrationCountsByPlatform() async throws -> [Platform: Int] {
        let rows = try await read { connection in
            try await connection.query("SELECT platform, count(*) AS n FROM registrations GROUP BY platform")
        }
        var counts: [Platform: Int] = [:]
        for row in rows {
            guard let platform = try Platform(rawValue: row.string("platform")) else { continue }
            counts[platform] = try row.int("n")
        }
        return counts
    }

    public func registrationIDBoundaries(after cursor: String?, every: Int, limit: Int) async throws -> [String] {
        guard every > 0, limit > 0 else { return [] }
        // A step of `every` ids along the primary key's index from each boundary to the next:
        // SQLite skips the entries of an OFFSET in the index without reading the rows, so the
        // split costs what it cuts (about 1.5 ms per 25,000 ids), where numbering every id
        // after the cursor with a window function cost 150 ms for 100,000.
        return try await read { connection in
            var boundaries: [String] = []
            var after = cursor ?? ""
            while boundaries.count < limit {
                let rows = try await connection.query(
                    "SELECT id FROM registrations WHERE id > ? ORDER BY id LIMIT 1 OFFSET ?",
                    [.text(after), .integer(every - 1)]
                )
                guard let id = rows.first?.column("id")?.string else { break }
                boundaries.append(id)
                after = id
            }
            return boundaries
        }
    }
}
