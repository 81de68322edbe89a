import Logging
import PostgresNIO
import Synchronization

/// Statistics for tables that grow faster than autovacuum looks at them.
///
/// A statement's plan is chosen from the table's statistics, and a plan kept for a connection
/// (such as `herald.save_registrations`'s, made once per connection) lasts until the statistics
/// change. A table that was empty when they were taken (a new deployment) is planned as if it
/// held a row: the planner may then look rows up through an index that reads every row of the
/// hub, which costs more with every write, until autovacuum next analyzes the table (within a
/// minute, or after a tenth of it changed). So the nodes analyze the registrations themselves
/// whenever the rows this node wrote since the last time reach the count the statistics know
/// (and at least ``youngTableWrites``): a few times while a table is young, almost never once
/// it is large. `ANALYZE` reads a sample of the table, and makes every connection plan its
/// statements again.
extension PostgresDatabase {
    /// Rows written before the first analysis of a table this node writes to.
    static let youngTableWrites = 500

    /// Counts `rows` written to the registrations (by registration or installation writes), and
    /// starts an analysis of the registrations in the background when they are due one.
    func noteRegistrationWrites(_ rows: Int) {
        let due = statistics.withLock { state -> Bool in
            state.written += rows
            guard !state.analyzing, state.written >= max(Self.youngTableWrites, state.knownRows) else { return false }
            state.analyzing = true
            state.written = 0
            return true
        }
        guard due else { return }
        Task {
            var rows: Int?
            do {
                try await analyze(["registrations", "registration_tags"])
                rows = try await estimatedRows(of: "registrations")
                logger.debug("Brought the statistics of the registrations up to date", metadata: ["herald.count": "\(rows ?? 0)"])
            } catch {
                logger.debug("Could not bring the statistics of the registrations up to date", metadata: ["error": "\(error)"])
            }
            statistics.withLock { state in
                state.analyzing = false
                if let rows { state.knownRows = rows }
            }
        }
    }

    /// The rows the planner's statistics say `table` (in the schema `herald`) holds.
    private func estimatedRows(of table: String) async throws -> Int {
        var read = SQLStatement()
        read.sql = "SELECT greatest(reltuples, 0)::bigint AS n FROM pg_class WHERE oid = \(read.bind("herald." + table))::regclass"
        let rows = try await run { [read] connection in try await connection.query(read.query, logger: self.clientLogger).collect() }
        return try rows.first?.byName.int("n") ?? 0
    }
}

/// What ``PostgresDatabase/noteRegistrationWrites(_:)`` keeps.
struct TableStatistics {
    /// Rows this node wrote since the last analysis.
    var written = 0
    /// The rows the statistics counted at the last analysis.
    var knownRows = 0
    var analyzing = false
}
