public import Foundation
import HeraldCore
public import HeraldStore
public import Logging
import NIOCore
import NIOPosix
import Synchronization

/// The embedded ``HeraldStore``: one SQLite file in the data directory.
///
/// The file is in WAL mode: one writer connection applies every write transaction in turn
/// (registration upserts that arrive together are committed together), while reader
/// connections serve reads concurrently. A write has returned only once it is committed; with
/// ``Configuration/Synchronous/normal`` a committed write survives a crash of the process, with
/// ``Configuration/Synchronous/full`` also a loss of power.
///
/// ```swift
/// let store = try await SQLiteStore.open(path: "data/herald.sqlite", logger: logger)
/// defer { try? await store.close() }  // or close it when the service stops
/// ```
///
/// Dates are kept to the millisecond. The store logs nothing above `.debug` unless SQLite
/// fails or stays busy, and never logs a handle, key or payload.
public final class SQLiteStore: HeraldStore {
    /// How the store uses SQLite.
    public struct Configuration: Sendable {
        /// How hard SQLite works to make a commit durable (`PRAGMA synchronous`).
        public struct Synchronous: Sendable, Hashable, CustomStringConvertible {
            let pragma: String
            /// Commits survive a crash of the process; the last ones may be lost on a power
            /// failure (WAL with `synchronous=NORMAL`). The default.
            public static let normal = Synchronous(pragma: "NORMAL")
            /// Every commit is synced to disk before it returns; survives a power failure.
            public static let full = Synchronous(pragma: "FULL")
            public var description: String { pragma.lowercased() }
        }

        /// Read connections (at least 1).
        public var readers: Int
        public var synchronous: Synchronous
        /// How long a statement waits for a lock held by another process before it fails.
        public var busyTimeout: Duration

        public init(readers: Int = 2, synchronous: Synchronous = .normal, busyTimeout: Duration = .seconds(5)) {
            self.readers = readers
            self.synchronous = synchronous
            self.busyTimeout = busyTimeout
        }
    }

    /// The database file.
    public let path: String
    public let configuration: Configuration
    let logger: Logger
    let now: @Sendable () -> Date
    let writer: SQLiteWriter
    let readers: [SQLiteConnection]
    private let nextReader = Atomic<Int>(0)
    private let gate = OperationGate()
    /// Whether the last write failed because the disk is full (SQLite's `SQLITE_FULL`).
    private let diskFull = Atomic<Bool>(false)
    let housekeeping = Mutex(Housekeeping())
    /// Schema versions applied when this store was opened (empty if the file was up to date).
    package let appliedMigrations: [Int]

    private init(
        path: String,
        configuration: Configuration,
        logger: Logger,
        now: @escaping @Sendable () -> Date,
        writer: SQLiteConnection,
        readers: [SQLiteConnection],
        appliedMigrations: [Int]
    ) {
        self.path = path
        self.configuration = configuration
        self.logger = logger
        self.now = now
        self.writer = SQLiteWriter(connection: writer, logger: logger)
        self.readers = readers
        self.appliedMigrations = appliedMigrations
    }

    /// Opens (creating it and its directory if needed) the database at `path` and brings its
    /// schema up to date.
    ///
    /// - Parameters:
    ///   - path: The database file. The `-wal` and `-shm` files SQLite keeps beside it belong
    ///     to it: copy or remove them together.
    ///   - now: The clock for expiry (reservations, sessions, registrations, leases) and
    ///     timestamps; injectable for tests.
    /// - Throws: ``StoreError`` with ``StoreError/Code/schemaTooNew`` if a newer
    ///   Herald wrote the file, ``StoreError/Code/cannotOpen`` if it cannot be opened.
    public static func open(
        path: String,
        configuration: Configuration = .init(),
        logger: Logger,
        now: @escaping @Sendable () -> Date = { Date() }
    ) async throws -> SQLiteStore {
        guard !path.isEmpty, path != ":memory:", !path.hasPrefix("file:") else {
            throw StoreError(code: .cannotOpen, message: "the store needs the path of a database file")
        }
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent()
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try makePrivate(path: path)
        } catch {
            throw StoreError(code: .cannotOpen, message: "cannot create the directory \(directory.path) or its file: \(error.localizedDescription)")
        }

        var opened: [SQLiteConnection] = []
        func connect() async throws -> SQLiteConnection {
            let connection = try await SQLiteConnection.open(path: path)
            opened.append(connection)
            return connection
        }
        do {
            let writer = try await connect()
            try await configure(writer, configuration, cacheKiB: 65_536)
            let mode = try await writer.query("PRAGMA journal_mode = WAL").first?.column("journal_mode")?.string
            guard mode?.lowercased() == "wal" else {
                throw StoreError(code: .cannotOpen, message: "cannot put the database at \(path) in WAL mode")
            }
            // Checkpoint every ~40 MB of WAL rather than SQLite's 4 MB: a checkpoint runs inside
            // the commit that triggers it, and fewer, larger ones copy a hot page once. Cut
            // the WAL file back after a checkpoint that leaves it larger than that.
            _ = try await writer.query("PRAGMA wal_autocheckpoint = 10000")
            _ = try await writer.query("PRAGMA journal_size_limit = 67108864")
            let applied = try await SQLiteMigration.migrate(writer, path: path, now: now().storeMilliseconds, logger: logger)
            // The migrations' statements ran once (and the schema they built made the writer's
            // other kept statements stale).
            writer.forgetStatements()
            var readers: [SQLiteConnection] = []
            for _ in 0..<max(1, configuration.readers) {
                let reader = try await connect()
                try await configure(reader, configuration, cacheKiB: 16_384)
                _ = try await reader.query("PRAGMA query_only = ON")
                readers.append(reader)
            }
            logger.debug("Opened the SQLite store", metadata: ["herald.store.path": "\(path)", "herald.store.readers": "\(readers.count)"])
            return SQLiteStore(
                path: path, configuration: configuration, logger: logger, now: now,
                writer: writer, readers: readers, appliedMigrations: applied
            )
        } catch {
            for connection in opened { try? await connection.close() }
            if let error = error as? StoreError { throw error }
            if let error = error as? SQLiteError {
                logger.error("Cannot open the SQLite store", metadata: ["herald.store.path": "\(path)", "error": "\(error)"])
                throw StoreError(code: .cannotOpen, message: "cannot open the database at \(path) (\(error.reason))")
            }
            throw error
        }
    }

    private static func configure(_ connection: SQLiteConnection, _ configuration: Configuration, cacheKiB: Int) async throws {
        // Pragmas take no bound parameters; every value here is a number or a fixed word.
        let busyMilliseconds = max(0, configuration.busyTimeout.storeMilliseconds)
        for pragma in [
            "PRAGMA synchronous = \(configuration.synchronous.pragma)",
            "PRAGMA foreign_keys = ON",
            "PRAGMA busy_timeout = \(busyMilliseconds)",
            "PRAGMA temp_store = MEMORY",
            "PRAGMA cache_size = -\(cacheKiB)",
        ] {
            _ = try await connection.query(pragma)
        }
    }

    /// Closes every connection once the operations in progress are done. Later calls fail
    /// with ``StoreError/Code/databaseUnavailable``; closing twice does nothing.
    public func close() async throws {
        // Closing runs to the end even for a caller whose task is cancelled (a service group
        // that stopped on an error): a connection left open would keep the file's locks.
        try await Task { try await self.closeConnections() }.value
    }

    private func closeConnections() async throws {
        guard await gate.close() else { return }
        var firstError: (any Error)?
        for reader in readers {
            do { try await reader.close() } catch { firstError = firstError ?? error }
        }
        // The writer closes last: closing the last connection checkpoints the WAL into the file.
        do { try await writer.close() } catch { firstError = firstError ?? error }
        if let firstError { throw mapError(firstError) }
    }

    /// Makes the database file (created empty if missing, which SQLite takes for a new
    /// database) and the journal files beside it readable and writable by this user only: they
    /// hold device tokens and password hashes. SQLite gives its journal files the database
    /// file's permissions.
    private static func makePrivate(path: String) throws {
        let fileManager = FileManager.default
        if !fileManager.fileExists(atPath: path) {
            guard fileManager.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
                throw StoreError(code: .cannotOpen, message: "cannot create the database file \(path)")
            }
        }
        for file in [path, path + "-wal", path + "-shm", path + "-journal"] where fileManager.fileExists(atPath: file) {
            let mode = (try fileManager.attributesOfItem(atPath: file)[.posixPermissions] as? NSNumber)?.intValue ?? 0o600
            if mode & 0o077 != 0 {
                try fileManager.setAttributes([.posixPermissions: mode & ~0o077], ofItemAtPath: file)
            }
        }
    }

    // MARK: Running statements

    /// Reads; and while the last write failed for a full disk, writes too, so that the store
    /// is reported unready until a write works again: a transaction that takes new pages (a
    /// table of 64 KiB, dropped again) and commits them, which fails while the disk (or the
    /// file's page limit) has no room, and leaves the schema as it was.
    public func ping() async throws {
        _ = try await read { connection in try await connection.query("SELECT 1") }
        if diskFull.load(ordering: .relaxed) {
            try await write { connection in
                _ = try await connection.query("CREATE TABLE herald_write_probe (bytes BLOB)")
                _ = try await connection.query("INSERT INTO herald_write_probe VALUES (zeroblob(65536))")
                _ = try await connection.query("DROP TABLE herald_write_probe")
            }
        }
    }

    /// Runs `body` on a reader connection.
    func read<T>(_ body: (SQLiteConnection) async throws -> T) async throws -> T {
        guard gate.enter() else { throw StoreError.databaseUnavailable("the store is closed") }
        defer { gate.leave() }
        let index = nextReader.add(1, ordering: .relaxed).oldValue
        let reader = readers[Int(UInt(bitPattern: index) % UInt(readers.count))]
        do {
            return try await body(reader)
        } catch {
            throw mapError(error)
        }
    }

    /// Runs `body` in one write transaction on the writer connection.
    func write<T: Sendable>(_ body: @Sendable (SQLiteConnection) async throws -> T) async throws -> T {
        guard gate.enter() else { throw StoreError.databaseUnavailable("the store is closed") }
        defer { gate.leave() }
        do {
            let result = try await writer.transaction(body)
            wrote()
            return result
        } catch {
            throw mapError(error)
        }
    }

    /// Upserts through the writer's group commit.
    func upsert(_ row: RegistrationRow, when condition: RegistrationCondition) async throws -> Registration {
        try await groupCommitted { try await $0.upsert(row, when: condition) }
    }

    /// Runs `body`, a group-committed write of the writer, while the store is open.
    func groupCommitted<T: Sendable>(_ body: (SQLiteWriter) async throws -> T) async throws -> T {
        guard gate.enter() else { throw StoreError.databaseUnavailable("the store is closed") }
        defer { gate.leave() }
        do {
            let result = try await body(writer)
            wrote()
            return result
        } catch {
            throw mapError(error)
        }
    }

    /// A write succeeded: if the disk was full, it has room again.
    private func wrote() {
        guard diskFull.load(ordering: .relaxed), diskFull.exchange(false, ordering: .relaxed) else { return }
        logger.notice("The SQLite database can write again: its disk has room", metadata: ["herald.store.path": "\(path)"])
    }

    /// Turns an SQLite error into one whose message is safe to show: SQLite's own message is
    /// logged, not passed on.
    func mapError(_ error: any Error) -> any Error {
        guard let error = error as? SQLiteError else { return error }
        if error.isBusy {
            logger.warning("The SQLite database is busy", metadata: ["error": "\(error)"])
            return StoreError.databaseUnavailable("the database is busy; try again")
        }
        if error.isFull {
            // Logged once, when the disk fills: every write fails the same way until it has room.
            if !diskFull.exchange(true, ordering: .relaxed) {
                logger.error(
                    "The SQLite database cannot write: its disk is full. Nothing is lost; writes fail until there is room",
                    metadata: ["herald.store.path": "\(path)"])
            }
            return StoreError.storageFull
        }
        logger.error("SQLite failed", metadata: ["error": "\(error)"])
        return StoreError(code: .database, message: "the database failed (\(error.reason))")
    }

    /// Runs an SQL statement on the writer, in a transaction, then `beforeCommit` in the same
    /// transaction. For tests of the schema and of a transaction that does not finish.
    package func executeForTesting(_ sql: String, beforeCommit: @Sendable () async throws -> Void = {}) async throws {
        try await write { connection in
            _ = try await connection.query(sql)
            try await beforeCommit()
        }
    }

    /// How many registration upserts wait for the writer's next batch. For tests.
    package func queuedUpsertsForTesting() async -> Int {
        await writer.queuedUpsertsForTesting
    }

    /// How many notification enqueues wait for a batch. For tests.
    package func queuedEnqueuesForTesting() async -> Int {
        await writer.queuedEnqueuesForTesting
    }

    /// Runs SQL statements on the file at `path` (created if missing) with a connection of
    /// its own, outside any store: no migration, no pragma. For tests that build a file as an
    /// older Herald left it.
    package static func executeForTesting(path: String, statements: [String], logger: Logger) async throws {
        let connection = try await SQLiteConnection.open(path: path)
        do {
            for statement in statements { _ = try await connection.query(statement) }
        } catch {
            try? await connection.close()
            throw error
        }
        try await connection.close()
    }

    /// The first column of the first row of a query on a reader, as an integer. For tests.
    /// The kept statements of every connection that SQLite compiled more than once, with how
    /// often (see ``SQLiteConnection/recompiledStatementsForTesting``).
    package func recompiledStatementsForTesting() -> [String: Int] {
        var recompiled: [String: Int] = [:]
        for connection in readers + [writer.connection] {
            recompiled.merge(connection.recompiledStatementsForTesting, uniquingKeysWith: +)
        }
        return recompiled
    }

    package func integerForTesting(_ sql: String) async throws -> Int? {
        try await read { connection in try await connection.query(sql) }.first?.values.first?.integer
    }

    /// The statements of every schema migration up to `version`, in order: a file as that
    /// version of Herald left it (without its `schema_migrations`). For tests.
    package static func schemaForTesting(through version: Int) -> [String] {
        SQLiteMigration.all.filter { $0.version <= version }.flatMap(\.statements)
    }

    /// The first column of every row of a query on a reader, as strings. For tests.
    package func stringsForTesting(_ sql: String) async throws -> [String] {
        try await read { connection in try await connection.query(sql) }.compactMap { $0.values.first?.string }
    }
}
