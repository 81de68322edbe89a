import CHeraldSQLite
import NIOCore
import NIOPosix
import Synchronization
import VaporCSQLite

/// One connection to an SQLite database file, over the SQLite library that SQLiteNIO builds
/// (`VaporCSQLite`): the one copy of SQLite in the process, so that every connection to a file
/// shares its POSIX locks.
///
/// Each ``query(_:_:)`` runs on a thread of `NIOThreadPool` (SQLite blocks on the disk), holds the
/// connection for the whole statement, and answers with every row at once. A query runs to its
/// end even when the task that asked is cancelled: no cancellation leaves a transaction open
/// or a group commit half applied. Statements are
/// compiled once and kept: a statement's SQL is the key of a cache of prepared statements
/// (``cacheCapacity`` of them, the least recently used dropped first), reset and cleared after
/// each use. Compiling SQL was about a sixth of a send's CPU when every query compiled its
/// statement again.
///
/// Each connection runs with SQLite's query planner stability guarantee: plans never depend on
/// bound values, which otherwise make SQLite compile a kept statement again at every run with new
/// bindings (any `LIMIT ?`, any `?` it could compare with a partial index's condition). So a
/// condition that should select a partial index names its values in the SQL (the queue's states).
final class SQLiteConnection: Sendable {
    /// How many prepared statements a connection keeps. Herald's statements with a fixed text
    /// number a few dozen per connection; the rest (multi-row writes, `IN` lists) vary with
    /// their size and take the remaining room in turn.
    static var cacheCapacity: Int { 128 }

    private struct Statement {
        var handle: OpaquePointer
        var columns: SQLiteColumns
        /// SQLite's count of this statement's recompilations (after a schema change) when
        /// `columns` were read.
        var recompilations: Int32
        var lastUse: UInt64
    }

    // Touched only under the connection's lock.
    private struct State: ~Copyable, @unchecked Sendable {
        var handle: OpaquePointer?
        var statements: [String: Statement] = [:]
        var uses: UInt64 = 0

        deinit {
            for statement in statements.values { sqlite_nio_sqlite3_finalize(statement.handle) }
            if let handle { sqlite_nio_sqlite3_close(handle) }
        }
    }

    private let state: Mutex<State>
    private let threadPool: NIOThreadPool

    private init(handle: OpaquePointer, threadPool: NIOThreadPool) {
        self.state = Mutex(State(handle: handle))
        self.threadPool = threadPool
    }

    private static let libraryInitialized = Mutex(false)

    /// Opens (creating if missing) the database file at `path`.
    static func open(path: String, threadPool: NIOThreadPool = .singleton) async throws -> SQLiteConnection {
        try await onThreadPool(threadPool) { () throws(SQLiteError) -> SQLiteConnection in
            // SQLite configures its globals once, on first use; doing that before any
            // connection can race with itself, so it happens under a lock.
            libraryInitialized.withLock { initialized in
                if !initialized {
                    sqlite_nio_sqlite3_initialize()
                    initialized = true
                }
            }
            var handle: OpaquePointer?
            // No SQLite mutex per connection: the connection's own lock serializes its use.
            let flags = SQLITE_OPEN_CREATE | SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
            let result = sqlite_nio_sqlite3_open_v2(path, &handle, flags, nil)
            guard result == SQLITE_OK, let handle else {
                let message = handle.flatMap { sqlite_nio_sqlite3_errmsg($0) }.map { String(cString: $0) } ?? "cannot open the file"
                sqlite_nio_sqlite3_close(handle)
                throw SQLiteError(code: result, message: message)
            }
            let stable = herald_sqlite3_enable_stable_plans(UnsafeMutableRawPointer(handle))
            guard stable == SQLITE_OK else {
                sqlite_nio_sqlite3_close(handle)
                throw SQLiteError(code: stable, message: "cannot make the query plans independent of bound values")
            }
            return SQLiteConnection(handle: handle, threadPool: threadPool)
        }
    }

    /// Runs one SQL statement with `binds` for its `?` parameters, in order, and returns its rows.
    @discardableResult
    func query(_ sql: String, _ binds: [SQLiteData] = []) async throws -> [SQLiteRow] {
        try await Self.onThreadPool(threadPool) { () throws(SQLiteError) -> [SQLiteRow] in
            try self.state.withLock { state throws(SQLiteError) -> [SQLiteRow] in
                try Self.run(sql, binds, state: &state)
            }
        }
    }

    /// Finalizes the kept statements and closes the connection; later queries fail.
    func close() async throws {
        try await Self.onThreadPool(threadPool) { () throws(SQLiteError) in
            try self.state.withLock { state throws(SQLiteError) in
                guard let handle = state.handle else { return }
                for statement in state.statements.values { sqlite_nio_sqlite3_finalize(statement.handle) }
                state.statements.removeAll()
                let result = sqlite_nio_sqlite3_close(handle)
                guard result == SQLITE_OK else { throw Self.error(result, handle) }
                state.handle = nil
            }
        }
    }

    /// Finalizes the kept statements: for statements that ran once (a schema migration's), whose
    /// compiled form would only take room.
    func forgetStatements() {
        state.withLock { state in
            for statement in state.statements.values { sqlite_nio_sqlite3_finalize(statement.handle) }
            state.statements.removeAll()
        }
    }

    /// How many prepared statements the connection keeps now. For tests.
    var cachedStatementsForTesting: Int {
        state.withLock { $0.statements.count }
    }

    /// The statements kept now that SQLite compiled more than once (after a schema change, or
    /// because a bound value could change their plan), with how often. For tests: a statement
    /// on a hot path that is compiled again at every run costs what the cache saves.
    var recompiledStatementsForTesting: [String: Int] {
        state.withLock { state in
            var recompiled: [String: Int] = [:]
            for (sql, statement) in state.statements {
                let count = sqlite_nio_sqlite3_stmt_status(statement.handle, SQLITE_STMTSTATUS_REPREPARE, 0)
                if count > 0 { recompiled[sql] = Int(count) }
            }
            return recompiled
        }
    }

    // MARK: - On the thread pool

    private static func onThreadPool<T: Sendable>(
        _ threadPool: NIOThreadPool, _ body: @escaping @Sendable () throws(SQLiteError) -> T
    ) async throws -> T {
        try await withUnsafeThrowingContinuation { continuation in
            threadPool.submit { workState in
                guard case .active = workState else {
                    continuation.resume(throwing: SQLiteError(code: SQLITE_MISUSE, message: "the SQLite thread pool has stopped"))
                    return
                }
                continuation.resume(with: Result { () throws(SQLiteError) -> T in try body() })
            }
        }
    }

    private static func run(_ sql: String, _ binds: [SQLiteData], state: inout State) throws(SQLiteError) -> [SQLiteRow] {
        guard let connection = state.handle else {
            throw SQLiteError(code: SQLITE_MISUSE, message: "the connection is closed")
        }
        guard let kept = try prepared(sql, connection, state: &state) else { return [] }
        let handle = state.statements.values[kept].handle
        defer {
            sqlite_nio_sqlite3_reset(handle)
            sqlite_nio_sqlite3_clear_bindings(handle)
        }
        for (offset, value) in binds.enumerated() {
            let result = bind(value, at: Int32(offset + 1), handle)
            guard result == SQLITE_OK else { throw error(result, connection) }
        }

        var rows: [SQLiteRow] = []
        var columns = state.statements.values[kept].columns
        while true {
            let result = sqlite_nio_sqlite3_step(handle)
            if result == SQLITE_DONE { break }
            guard result == SQLITE_ROW else { throw error(result, connection) }
            if rows.isEmpty {
                // A schema change recompiles a kept statement, and `SELECT *` may then return
                // other columns.
                let recompilations = sqlite_nio_sqlite3_stmt_status(handle, SQLITE_STMTSTATUS_REPREPARE, 0)
                if recompilations != state.statements.values[kept].recompilations {
                    columns = Self.columns(of: handle)
                    state.statements.values[kept].columns = columns
                    state.statements.values[kept].recompilations = recompilations
                }
            }
            rows.append(SQLiteRow(columns: columns, values: values(of: handle, count: columns.names.count)))
        }
        return rows
    }

    /// Where the kept statement for `sql` is in the cache, compiled and kept on first use; `nil`
    /// for SQL that holds no statement (only a comment). One lookup of the text on a hit.
    private static func prepared(
        _ sql: String, _ connection: OpaquePointer, state: inout State
    ) throws(SQLiteError) -> Dictionary<String, Statement>.Index? {
        state.uses &+= 1
        if let kept = state.statements.index(forKey: sql) {
            state.statements.values[kept].lastUse = state.uses
            return kept
        }
        var handle: OpaquePointer?
        let result = sqlite_nio_sqlite3_prepare_v3(connection, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &handle, nil)
        guard result == SQLITE_OK else { throw error(result, connection) }
        guard let handle else { return nil }
        if state.statements.count >= cacheCapacity,
            let (oldest, statement) = state.statements.min(by: { $0.value.lastUse < $1.value.lastUse })
        {
            sqlite_nio_sqlite3_finalize(statement.handle)
            state.statements[oldest] = nil
        }
        state.statements[sql] = Statement(
            handle: handle, columns: columns(of: handle),
            recompilations: sqlite_nio_sqlite3_stmt_status(handle, SQLITE_STMTSTATUS_REPREPARE, 0),
            lastUse: state.uses
        )
        return state.statements.index(forKey: sql)
    }

    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    private static func bind(_ value: SQLiteData, at index: Int32, _ handle: OpaquePointer) -> Int32 {
        switch value {
        case .integer(let value):
            return sqlite_nio_sqlite3_bind_int64(handle, index, Int64(value))
        case .float(let value):
            return sqlite_nio_sqlite3_bind_double(handle, index, value)
        case .text(var value):
            return value.withUTF8 { utf8 in
                // An empty buffer may have no address, and a null pointer would bind NULL.
                guard let base = utf8.baseAddress, !utf8.isEmpty else {
                    return sqlite_nio_sqlite3_bind_text64(handle, index, "", 0, transient, UInt8(SQLITE_UTF8))
                }
                return base.withMemoryRebound(to: CChar.self, capacity: utf8.count) {
                    sqlite_nio_sqlite3_bind_text64(handle, index, $0, UInt64(utf8.count), transient, UInt8(SQLITE_UTF8))
                }
            }
        case .blob(let bytes):
            return bytes.withUnsafeBytes { buffer in
                guard let base = buffer.baseAddress, !buffer.isEmpty else {
                    return sqlite_nio_sqlite3_bind_zeroblob(handle, index, 0)
                }
                return sqlite_nio_sqlite3_bind_blob64(handle, index, base, UInt64(buffer.count), transient)
            }
        case .null:
            return sqlite_nio_sqlite3_bind_null(handle, index)
        }
    }

    private static func columns(of handle: OpaquePointer) -> SQLiteColumns {
        let count = sqlite_nio_sqlite3_column_count(handle)
        return SQLiteColumns(
            names: (0..<count).map { index in
                sqlite_nio_sqlite3_column_name(handle, index).map { String(cString: $0) } ?? ""
            })
    }

    private static func values(of handle: OpaquePointer, count: Int) -> [SQLiteData] {
        var values: [SQLiteData] = []
        values.reserveCapacity(count)
        for index in 0..<Int32(count) {
            switch sqlite_nio_sqlite3_column_type(handle, index) {
            case SQLITE_INTEGER:
                values.append(.integer(Int(sqlite_nio_sqlite3_column_int64(handle, index))))
            case SQLITE_FLOAT:
                values.append(.float(sqlite_nio_sqlite3_column_double(handle, index)))
            case SQLITE_TEXT:
                // The pointer first, then the length: SQLite's order for a value it may convert.
                let text = sqlite_nio_sqlite3_column_text(handle, index)
                let length = Int(sqlite_nio_sqlite3_column_bytes(handle, index))
                values.append(.text(text.map { String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self) } ?? ""))
            case SQLITE_BLOB:
                let bytes = sqlite_nio_sqlite3_column_blob(handle, index)
                let length = Int(sqlite_nio_sqlite3_column_bytes(handle, index))
                values.append(.blob(bytes.map { Array(UnsafeRawBufferPointer(start: $0, count: length)) } ?? []))
            default:
                values.append(.null)
            }
        }
        return values
    }

    private static func error(_ result: Int32, _ connection: OpaquePointer) -> SQLiteError {
        SQLiteError(
            code: sqlite_nio_sqlite3_extended_errcode(connection),
            message: sqlite_nio_sqlite3_errmsg(connection).map { String(cString: $0) } ?? "error \(result)"
        )
    }
}
