import Foundation
public import HeraldCore
public import HeraldStore
import Logging
import PostgresNIO

/// Pages of registrations (deliveries, the console's device browser) whose cost does not
/// depend on the planner's statistics.
///
/// A page is a range of the primary key (or of the tag index) read in id order until it is
/// full: the cheapest plan whatever the table holds. The planner picks it only if its
/// statistics are current, though. Right after a bulk load (a store copy, an import, a
/// benchmark's seeding) they are not: it expects a few rows where there are hundreds of
/// thousands, and plans a bitmap scan of every row after the cursor followed by a sort, whose
/// cost grows with what is left to read (a broadcast then costs the square of its devices). So
/// a page's statements run in a transaction of their own in which the planner may not scan a
/// table whole, use a bitmap or join by hash or merge: what remains are ordered index scans
/// (and nested loops over them), each stopping once the page is full.
extension PostgresStore {
    /// The planner settings of a page's transaction (`set_config(…, true)`: for that transaction
    /// only). Sorting stays allowed: a page of candidates (`id = ANY ($n)`) is looked up by
    /// key and sorted, which is cheaper than walking the index in order.
    static let indexRangeSettings = """
        SELECT set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', true), \
        set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true)
        """

    public func registrations(
        matching expression: TagExpression?,
        platforms: Set<Platform>?,
        kind: RegistrationKind?,
        after cursor: String?,
        through upperBound: String?,
        limit: Int
    ) async throws -> [Registration] {
        guard limit > 0 else { return [] }
        if let platforms, platforms.isEmpty { return [] }
        let plan = try TagQueryPlan(expression)
        return try await registrationPage(
            plan, filters: deliveryFilters(platforms: platforms, kind: kind), after: cursor, through: upperBound, limit: limit
        ).registrations
    }

    /// One page of the registrations an operator browses (see the protocol): the plan of
    /// ``registrations(matching:platforms:kind:after:through:limit:)`` with the query's own conditions.
    public func browseRegistrations(_ query: RegistrationQuery, after cursor: String?, limit: Int) async throws -> [Registration] {
        guard limit > 0 else { return [] }
        let plan = try TagQueryPlan(query.expression)
        return try await registrationPage(plan, filters: { Self.browseFilters(query, $0, &$1) }, after: cursor, through: nil, limit: limit)
            .registrations
    }

    /// Analyzes the registrations and their tag index (every hub's: statistics are kept per
    /// table), with a deadline of its own: on a large table it samples for a while.
    public func refreshStatistics() async throws {
        try checkOpen()
        try await database.analyze(["registrations", "registration_tags"])
    }

    /// The plans PostgreSQL chooses for the statements of one page of
    /// ``registrations(matching:platforms:kind:after:through:limit:)`` (`EXPLAIN`, in the
    /// page's transaction), for tests; without ``indexRangeSettings`` when `settings` is
    /// `false`, to see what the planner would choose by itself. For a page of any of several
    /// tags, only the statement that reads the candidates is explained.
    package func explainRegistrationPage(
        matching expression: TagExpression?,
        platforms: Set<Platform>?,
        kind: RegistrationKind?,
        after cursor: String?,
        through upperBound: String?,
        limit: Int,
        settings: Bool = true
    ) async throws -> [String] {
        let plan = try TagQueryPlan(expression)
        return try await registrationPage(
            plan, filters: deliveryFilters(platforms: platforms, kind: kind), after: cursor, through: upperBound, limit: limit,
            explaining: true, settings: settings
        ).plans
    }

    /// Conditions of a delivery on the registration `r` besides the tags: not expired, on a
    /// platform asked for, of the kind asked for, and matching `rest`.
    private func deliveryFilters(
        platforms: Set<Platform>?, kind: RegistrationKind?
    ) -> @Sendable ([TagExpression], inout SQLStatement) -> String {
        let now = now().storeMilliseconds
        return { rest, statement in
            var sql = " AND (r.expires_at IS NULL OR r.expires_at > \(statement.bind(now)))"
            if let platforms, !platforms.isSuperset(of: Platform.allCases) {
                sql += " AND r.platform = ANY (\(statement.bind(platforms.map(\.rawValue).sorted())))"
            }
            switch kind {
            case .native?: sql += " AND r.template IS NULL"
            case .template?: sql += " AND r.template IS NOT NULL"
            case nil: break
            }
            for condition in rest { sql += " AND " + Self.condition(condition, &statement) }
            return sql
        }
    }

    /// One page of the registrations that `plan` selects and that pass `filters` (which
    /// writes the conditions on the registration `r` besides the tags, and the plan's `rest`,
    /// into a statement), in id order, strictly after `cursor` and up to and including
    /// `upperBound`: its statements in one transaction with ``indexRangeSettings``. With
    /// `explaining`, each statement is explained instead (its plan kept, no rows read).
    private func registrationPage(
        _ plan: TagQueryPlan,
        filters: @escaping @Sendable ([TagExpression], inout SQLStatement) -> String,
        after cursor: String?,
        through upperBound: String?,
        limit: Int,
        explaining: Bool = false,
        settings: Bool = true
    ) async throws -> (registrations: [Registration], plans: [String]) {
        try checkOpen()
        let hub = self.hub, logger = database.clientLogger
        return try await database.run { connection in
            try await connection.withTransaction(logger: logger) { connection in
                if settings { try await connection.query(PostgresQuery(unsafeSQL: Self.indexRangeSettings), logger: logger) }
                var plans: [String] = []
                let rows = try await Self.page(plan, hub: hub, filters: filters, after: cursor, through: upperBound, limit: limit) { statement in
                    guard explaining else { return try await connection.query(statement.query, logger: logger).collect() }
                    let explained = PostgresQuery(unsafeSQL: "EXPLAIN " + statement.sql, binds: statement.binds)
                    for row in try await connection.query(explained, logger: logger).collect() { plans.append(try row.decode(String.self)) }
                    return []
                }
                return (try Self.decodeRegistrations(rows), plans)
            }
        }
    }

    /// The rows of one page (see ``registrationPage(_:filters:after:through:limit:explaining:settings:)``),
    /// each statement run by `read`.
    private static func page(
        _ plan: TagQueryPlan,
        hub: String,
        filters: ([TagExpression], inout SQLStatement) -> String,
        after cursor: String?,
        through upperBound: String?,
        limit: Int,
        read: (SQLStatement) async throws -> [PostgresRow]
    ) async throws -> [PostgresRow] {
        switch plan {
        case .scan(let condition):
            var statement = SQLStatement()
            statement.sql = "SELECT \(registrationColumns) FROM herald.registrations AS r WHERE r.hub = \(statement.bind(hub))"
            if let cursor { statement.sql += " AND r.id > \(statement.bind(cursor))" }
            if let upperBound { statement.sql += " AND r.id <= \(statement.bind(upperBound))" }
            statement.sql += filters(condition.map { [$0] } ?? [], &statement)
            statement.sql += " ORDER BY r.id LIMIT \(statement.bind(limit))"
            return try await read(statement)

        case .tag(let tag, let rest):
            // The tag index drives: its rows come in id order, no sort.
            var statement = SQLStatement()
            statement.sql = """
                SELECT \(registrationColumns) FROM herald.registration_tags AS t \
                JOIN herald.registrations AS r ON r.hub = t.hub AND r.id = t.registration_id \
                WHERE t.hub = \(statement.bind(hub)) AND t.tag = \(statement.bind(tag))
                """
            if let cursor { statement.sql += " AND t.registration_id > \(statement.bind(cursor))" }
            if let upperBound { statement.sql += " AND t.registration_id <= \(statement.bind(upperBound))" }
            statement.sql += filters(rest, &statement)
            statement.sql += " ORDER BY t.registration_id LIMIT \(statement.bind(limit))"
            return try await read(statement)

        case .anyTag(let tags, let rest):
            // Candidates: the next ids of each tag (each an ordered index range, read no further
            // than the page), merged; then the registrations among them that pass the other
            // conditions. Repeat until the page is full.
            var result: [PostgresRow] = []
            var after = cursor
            while result.count < limit {
                let wanted = limit - result.count
                var candidates = SQLStatement()
                let hubPlaceholder = candidates.bind(hub)
                let wantedPlaceholder = candidates.bind(wanted)
                var range = after.map { " AND registration_id > \(candidates.bind($0))" } ?? ""
                if let upperBound { range += " AND registration_id <= \(candidates.bind(upperBound))" }
                let ranges = tags.map { tag in
                    """
                    (SELECT registration_id FROM herald.registration_tags WHERE hub = \(hubPlaceholder) \
                    AND tag = \(candidates.bind(tag))\(range) ORDER BY registration_id LIMIT \(wantedPlaceholder))
                    """
                }
                candidates.sql = """
                    SELECT DISTINCT registration_id FROM (\(ranges.joined(separator: " UNION ALL "))) AS c \
                    ORDER BY registration_id LIMIT \(wantedPlaceholder)
                    """
                var ids: [String] = []
                for row in try await read(candidates) { ids.append(try row.byName.string("registration_id")) }
                guard let last = ids.last else { break }

                var statement = SQLStatement()
                statement.sql = """
                    SELECT \(registrationColumns) FROM herald.registrations AS r \
                    WHERE r.hub = \(statement.bind(hub)) AND r.id = ANY (\(statement.bind(ids)))
                    """
                statement.sql += filters(rest, &statement) + " ORDER BY r.id"
                result += try await read(statement)
                if ids.count < wanted { break }
                after = last
            }
            return result
        }
    }
}
