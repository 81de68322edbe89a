import Foundation
import HeraldCore
public import HeraldStore
import PostgresNIO
import Synchronization

/// The ``HeraldStore`` of one hub in a shared PostgreSQL database (``PostgresDatabase``).
///
/// Every row carries the hub's name, so any number of hubs and nodes share the database's
/// tables. Each method is one statement or one transaction; registry rules that depend on what
/// is stored (owner, version, issued ids, one registration per device) are checked under a
/// transaction-level advisory lock on the registration id (and the device's handle), so two
/// nodes writing the same registration at once take turns. Registration and installation
/// writes that arrive together are applied together, one statement and one commit for many.
/// Dates are kept to the millisecond.
public final class PostgresStore: HeraldStore {
    /// The hub whose rows this store reads and writes.
    public let hub: String
    let database: PostgresDatabase
    let now: @Sendable () -> Date
    private let closed = Atomic<Bool>(false)
    let housekeeping = Mutex(Housekeeping())
    /// Registration writes waiting to be applied together (see ``upsertRegistration(_:when:)``).
    let registrationWrites = GroupCommitter<RegistrationWrite, Registration>(
        maximumBatches: PostgresStore.concurrentWriteBatches, maximumBatchSize: PostgresStore.maximumWritesPerBatch
    )
    /// Installation writes waiting to be applied together (see ``upsertInstallation(_:ifVersion:)``).
    let installationWrites = GroupCommitter<InstallationWrite, Installation>(
        maximumBatches: PostgresStore.concurrentWriteBatches, maximumBatchSize: PostgresStore.maximumWritesPerBatch
    )

    init(hub: String, database: PostgresDatabase, now: @escaping @Sendable () -> Date) {
        self.hub = hub
        self.database = database
        self.now = now
    }

    public func ping() async throws {
        try checkOpen()
        try await database.ping()
    }

    /// Stops this store: later calls throw ``StoreError/Code/databaseUnavailable``. The database's
    /// connections belong to ``PostgresDatabase`` and stay open for other hubs.
    public func close() async throws {
        closed.store(true, ordering: .releasing)
    }

    public func workAnnouncements() -> AsyncStream<Void>? {
        database.workAnnouncements(hub: hub)
    }

    func checkOpen() throws(StoreError) {
        if closed.load(ordering: .acquiring) { throw .databaseUnavailable("the store is closed") }
    }

    // MARK: Running statements

    /// Runs one statement and returns its rows.
    @discardableResult
    func query(_ statement: SQLStatement) async throws -> [PostgresRow] {
        try checkOpen()
        let logger = database.clientLogger
        return try await database.run { connection in
            try await connection.query(statement.query, logger: logger).collect()
        }
    }

    /// Runs a prepared statement (prepared on a connection's first use of it) and returns its rows.
    /// With `mappingErrors` false, the client's errors are thrown as they are, for a caller that
    /// decides by the error what to do next (see ``PostgresDatabase/runUnmapped(deadline:_:)``).
    func execute<Statement: PostgresPreparedStatement>(
        _ statement: Statement, mappingErrors: Bool = true
    ) async throws -> [Statement.Row] where Statement.Row: Sendable {
        try checkOpen()
        let logger = database.clientLogger
        let body: @Sendable (PostgresConnection) async throws -> [Statement.Row] = { connection in
            var rows: [Statement.Row] = []
            for try await row in try await connection.execute(statement, logger: logger) { rows.append(row) }
            return rows
        }
        return mappingErrors ? try await database.run(body) : try await database.runUnmapped(body)
    }

    /// Runs `body` in one transaction.
    func transaction<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        try checkOpen()
        return try await database.transaction(body)
    }

    /// Runs one statement on a connection inside a transaction and returns its rows.
    @discardableResult
    func query(_ statement: SQLStatement, on connection: PostgresConnection) async throws -> [PostgresRow] {
        try await connection.query(statement.query, logger: database.clientLogger).collect()
    }

    /// Takes transaction-level advisory locks on `keys` (in a fixed order, so two transactions
    /// never wait on each other), each the hub and a key hashed to 64 bits.
    func lock(_ keys: [String], on connection: PostgresConnection) async throws {
        for key in Set(keys).sorted() {
            var statement = SQLStatement()
            statement.sql = "SELECT pg_advisory_xact_lock(hashtextextended(\(statement.bind(hub + "\u{1F}" + key)), 0))"
            try await query(statement, on: connection)
        }
    }
}

/// SQL with `$n` placeholders and the values bound to them, built a piece at a time:
/// `statement.sql += "WHERE id = \(statement.bind(id))"`. Values are always bound, never
/// written into the SQL.
struct SQLStatement {
    var sql = ""
    var binds = PostgresBindings()

    init(_ sql: String = "") {
        self.sql = sql
    }

    /// Binds `value` (`NULL` for `nil`) and returns its placeholder.
    mutating func bind<Value: PostgresNonThrowingEncodable>(_ value: Value?) -> String {
        if let value { binds.append(value) } else { binds.appendNull() }
        return "$\(binds.count)"
    }

    mutating func bind(_ value: Date?) -> String {
        bind(value?.storeMilliseconds)
    }

    /// Binds a `text[]`.
    mutating func bind(_ value: [String]) -> String {
        binds.append(value)
        return "$\(binds.count)::text[]"
    }

    /// Binds a `bigint[]`.
    mutating func bind(_ value: [Int]) -> String {
        binds.append(value)
        return "$\(binds.count)::bigint[]"
    }

    mutating func bind(_ value: Data) -> String {
        binds.append(ByteBuffer(bytes: value))
        return "$\(binds.count)::bytea"
    }

    var query: PostgresQuery { PostgresQuery(unsafeSQL: sql, binds: binds) }
}

extension PostgresRow {
    /// This row, its columns read by name (see ``PostgresStoredRow``).
    var byName: PostgresStoredRow { PostgresStoredRow(self) }
}

/// A result row as the stores' shared decoders read it, column by column (``StoredRow``): its
/// cells, taken off the row once, each found by comparing names with the row's few columns,
/// starting after the column read last (where a statement lists its columns in the order its
/// decoder reads them, as the registrations' do, the first comparison finds each). A delivery
/// page turns thousands of rows into registrations, sixteen columns each, where postgres-nio's
/// random-access row hashes the name twice for each read and makes a new cell each time; the
/// rows of a page share one reader (``read(_:)``), so its cells are kept in the same storage.
final class PostgresStoredRow: StoredRow {
    private var cells: [PostgresCell] = []
    /// Where the next column is looked for first.
    private var next = 0

    init() {}

    convenience init(_ row: PostgresRow) {
        self.init()
        read(row)
    }

    /// Reads `row`'s cells in place of the row read before.
    func read(_ row: PostgresRow) {
        cells.removeAll(keepingCapacity: true)
        cells.append(contentsOf: row)
        next = 0
    }

    func value<T: PostgresDecodable>(_ column: String, as type: T.Type = T.self) throws(StoreError) -> T {
        let index: Int
        if next < cells.count, cells[next].columnName == column {
            index = next
        } else if let found = cells.firstIndex(where: { $0.columnName == column }) {
            index = found
        } else {
            throw corrupt("the stored column '\(column)' is missing")
        }
        next = index + 1
        do {
            return try cells[index].decode(T.self)
        } catch {
            throw corrupt("the stored column '\(column)' has the wrong type")
        }
    }

    func string(_ column: String) throws(StoreError) -> String { try value(column) }
    func optionalString(_ column: String) throws(StoreError) -> String? { try value(column) }
    func int(_ column: String) throws(StoreError) -> Int { try value(column) }
    func optionalInt(_ column: String) throws(StoreError) -> Int? { try value(column) }
    func bool(_ column: String) throws(StoreError) -> Bool { try value(column) }
    /// Tags, kept as a `text[]`.
    func tags(_ column: String) throws(StoreError) -> [String] { try value(column) }
    func bytes(_ column: String) throws(StoreError) -> Data { Data(try value(column, as: ByteBuffer.self).readableBytesView) }
}
