public import Foundation
import HeraldCore
import HeraldStore
public import Logging
import NIOPosix
import NIOSSL
import PostgresNIO
public import ServiceLifecycle
import Synchronization

/// The PostgreSQL database that several Herald nodes share: one pool of connections, the
/// schema, and a ``PostgresStore`` per hub.
///
/// It is a `Service`: its ``run()`` keeps the connection pool and must run, in the service
/// group or a task, for as long as stores are used; queries wait for a connection until it
/// runs. Call ``migrate()`` once it runs, before the first store is used.
///
/// ```swift
/// let database = try PostgresDatabase(url: DatabaseURL("postgres://herald:secret@db/herald"), logger: logger)
/// // run `database` in the service group, then:
/// try await database.migrate()
/// let store = database.store(hub: "app")
/// ```
public final class PostgresDatabase: Service, Sendable {
    /// Where the database is (its ``DatabaseURL/description`` has no password).
    public let url: DatabaseURL
    /// The pool's configuration, for the pools made when the database comes back.
    private let poolConfiguration: PostgresClient.Configuration
    /// The pool of connections, and a continuation that hands a replacement to ``run()``.
    private let pool: Mutex<(client: PostgresClient, replacements: AsyncStream<PostgresClient>.Continuation?)>
    /// Whether the database answered the last time the listening connection tried: while it
    /// does not, statements fail at once with `unavailable` rather than wait for the pool.
    private let reachable = Atomic<Bool>(true)
    /// The statements being waited for (see ``abandoningAfter(_:_:)``), each with what abandons
    /// it: when the database turns unreachable, they fail at once instead of at their deadline.
    private let waitingStatements = Mutex(WaitingStatements())
    let logger: Logger
    /// ``logger`` at `.warning` or above, for postgres-nio's own lines.
    let clientLogger: Logger
    /// The channel on which a node announces work to the others (`NOTIFY`, payload: the hub).
    static let workChannel = "herald_work"
    /// Each hub's listeners of ``workChannel``, by a number of their own.
    private let listeners = Mutex<(next: Int, byHub: [String: [Int: AsyncStream<Void>.Continuation]])>((0, [:]))
    /// Reads of hub definitions waiting to be made together (see ``definition(named:knownRevision:)``).
    let definitionReads = GroupCommitter<DefinitionRead, HubDefinitionLookup>(maximumBatches: 2, maximumBatchSize: 256)
    /// The writes to the registrations since their statistics were last brought up to date
    /// (see ``noteRegistrationWrites(_:)``).
    let statistics = Mutex(TableStatistics())

    /// Connections the pool keeps open for good, of those it lends first. Each connection beyond
    /// them is given an idle timer every time it is put back (tasks that sleep, cancelled when it
    /// is lent again), which cost a node a tenth of its CPU per installation `PUT`; the first
    /// connections carry the statements of a busy node, and no such timer. More open when needed,
    /// up to the maximum, and close after a minute unused.
    static let keptConnections = 4

    /// The connections kept open for good in a pool of at most `maximum`: ``keptConnections``,
    /// and always one fewer than the maximum, so that a pool of one (as a one-off command opens)
    /// connects only when a statement first needs it.
    static func keptConnections(maximum: Int) -> Int {
        min(keptConnections, max(1, maximum) - 1)
    }

    /// - Parameters:
    ///   - maximumConnections: The most connections this process opens; PostgreSQL's own
    ///     `max_connections` (100 by default) bounds the sum over all nodes.
    public init(url: DatabaseURL, maximumConnections: Int = 20, logger: Logger) {
        self.url = url
        self.logger = logger
        var configuration: PostgresClient.Configuration
        if let socketPath = url.socketPath {
            configuration = .init(unixSocketPath: socketPath, username: url.username, password: url.password, database: url.database)
        } else {
            let tls: PostgresClient.Configuration.TLS =
                switch url.tlsMode {
                case .disable: .disable
                case .prefer: .prefer(Self.tlsConfiguration(url))
                case .require, .verifyCA, .verifyFull: .require(Self.tlsConfiguration(url))
                }
            configuration = .init(
                host: url.host ?? "localhost", port: url.port, username: url.username, password: url.password,
                database: url.database, tls: tls
            )
        }
        configuration.options.maximumConnections = max(1, maximumConnections)
        configuration.options.minimumConnections = Self.keptConnections(maximum: configuration.options.maximumConnections)
        configuration.options.connectTimeout = url.connectTimeout ?? .seconds(10)
        configuration.options.additionalStartupParameters = [("application_name", url.applicationName ?? "herald")]
        // The client's own log lines can quote a failed query with its values (device tokens):
        // only its warnings and errors are let through; Herald logs what went wrong itself.
        var clientLogger = logger
        clientLogger.logLevel = max(logger.logLevel, .warning)
        self.clientLogger = clientLogger
        self.poolConfiguration = configuration
        self.pool = Mutex((PostgresClient(configuration: configuration, backgroundLogger: clientLogger), nil))
    }

    /// The pool statements run on now.
    var client: PostgresClient { pool.withLock { $0.client } }

    /// libpq's `prefer` and `require` do not verify the certificate; `verify-ca` and
    /// `verify-full` do, against the system's trust roots or the URL's `sslrootcert`. Given
    /// `sslrootcert`, `require` verifies the chain as `verify-ca` does (libpq's rule).
    private static func tlsConfiguration(_ url: DatabaseURL) -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification =
            switch url.tlsMode {
            case .verifyFull: .fullVerification
            case .verifyCA: .noHostnameVerification
            case .require where url.rootCertificateFile != nil: .noHostnameVerification
            default: .none
            }
        if let file = url.rootCertificateFile { tls.trustRoots = .file(file) }
        return tls
    }

    /// One connection of its own, outside the pool: it fails at once with the server's reason
    /// (a refused password, an unknown database), where the pool would keep retrying.
    private func connect(logFailure: Bool = true) async throws -> PostgresConnection {
        var configuration: PostgresConnection.Configuration
        if let socketPath = url.socketPath {
            configuration = .init(unixSocketPath: socketPath, username: url.username, password: url.password, database: url.database)
        } else {
            let tls: PostgresConnection.Configuration.TLS =
                switch url.tlsMode {
                case .disable: .disable
                case .prefer: .prefer(try NIOSSLContext(configuration: Self.tlsConfiguration(url)))
                case .require, .verifyCA, .verifyFull: .require(try NIOSSLContext(configuration: Self.tlsConfiguration(url)))
                }
            configuration = .init(
                host: url.host ?? "localhost", port: url.port, username: url.username, password: url.password,
                database: url.database, tls: tls
            )
        }
        let timeout = url.connectTimeout ?? .seconds(10)
        configuration.options.connectTimeout = .milliseconds(Int64(timeout.storeMilliseconds))
        configuration.options.additionalStartupParameters = [("application_name", url.applicationName ?? "herald")]
        do {
            return try await PostgresConnection.connect(configuration: configuration, id: 0, logger: self.clientLogger)
        } catch {
            let failure = connectError(error)
            if logFailure {
                logger.error("Cannot connect to the database", metadata: ["herald.store.database": "\(url)", "error": "\(failure.message)"])
            }
            throw failure
        }
    }

    /// Why a connection could not be made, without the password.
    private func connectError(_ error: any Error) -> StoreError {
        var reason = "\(type(of: error))"
        if let error = error as? PSQLError {
            reason = error.serverInfo?[.message] ?? "\(error.code)"
            if let underlying = error.underlying { reason += ": \(underlying)" }
        } else if let error = error as? NIOSSLError {
            reason = "TLS: \(error)"
        } else {
            reason = "\(error)"
        }
        if let password = url.password, !password.isEmpty { reason = reason.replacingOccurrences(of: password, with: "***") }
        return StoreError(code: .cannotConnect, message: "cannot connect to the database \(url): \(reason)")
    }

    /// Keeps the connection pool, and one connection listening for work announced by other
    /// nodes, until the task is cancelled or the service group shuts down.
    ///
    /// When the database comes back after an outage, the pool is replaced by a new one: the
    /// old one waits ever longer between attempts to reconnect (up to a minute), and, after a
    /// minute without a connection, fails every request at once; the new one connects at once.
    public func run() async throws {
        let (replacements, continuation) = AsyncStream<PostgresClient>.makeStream()
        let first = pool.withLock { pool in
            pool.replacements = continuation
            return pool.client
        }
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                group.addTask { await self.listenForWork() }
                group.addTask {
                    // Each pool runs in a task of its own until the next one replaces it.
                    var running = Task { await first.run() }
                    await withTaskCancellationHandler {
                        for await client in replacements {
                            running.cancel()
                            running = Task { await client.run() }
                        }
                    } onCancel: {
                        continuation.finish()
                    }
                    // Not awaited: the pool closes its connections at once, but postgres-nio
                    // 1.33 can then wait for ever on a statement the server never answered.
                    running.cancel()
                }
            }
        }
        continuation.finish()
    }

    /// Replaces the pool by a new one (see ``run()``); the old one closes its connections.
    package func replacePool() {
        let client = PostgresClient(configuration: poolConfiguration, backgroundLogger: clientLogger)
        pool.withLock { pool in
            guard let replacements = pool.replacements else { return }
            pool.client = client
            replacements.yield(client)
        }
    }

    /// `LISTEN`s on ``workChannel`` on a connection of its own (outside the pool, so it never
    /// holds a pooled connection and closes as soon as the task is cancelled) and passes each
    /// announcement to its hub's listeners; after a lost connection, listens again (and wakes
    /// every listener, since announcements may have been missed meanwhile).
    ///
    /// It also watches the database for the other statements: when the connection is lost or
    /// cannot be made, the database is unreachable (statements fail at once, see ``run(_:)``);
    /// when it is made again, it is reachable, and the pool is replaced (see ``run()``).
    private func listenForWork() async {
        var first = true
        while !Task.isCancelled {
            do {
                let connection = try await connect(logFailure: false)
                if !reachable.exchange(true, ordering: .relaxed) {
                    logger.notice("The database answers again", metadata: ["herald.store.database": "\(url)"])
                    replacePool()
                }
                do {
                    try await withTaskCancellationHandler {
                        try await connection.listen(on: Self.workChannel) { notifications in
                            if !first { announceToAll() }
                            first = false
                            for try await notification in notifications { announce(hub: notification.payload) }
                        }
                    } onCancel: {
                        connection.close().whenComplete { _ in }
                    }
                } catch {
                    try? await connection.close()
                    throw error
                }
                try? await connection.close()
            } catch {
                if Task.isCancelled { return }
                if Self.isUnreachable(error), reachable.exchange(false, ordering: .relaxed) {
                    logger.error(
                        "The database is unreachable; requests fail with 503 and delivery pauses until it answers again",
                        metadata: ["herald.store.database": "\(url)"]
                    )
                    // What waits for the pool would wait for its deadline: it fails now.
                    for statement in waitingStatements.withLock({ Array($0.byID.values) }) { statement.abandon(.unreachable) }
                }
                logger.debug("Listening for work announcements failed; listening again shortly", metadata: ["error": "\(mapError(error))"])
            }
            try? await Task.sleep(for: .seconds(1))
        }
    }

    /// Whether `error` says the server cannot be reached or dropped the connection (rather than
    /// refusing something, such as too many connections).
    private static func isUnreachable(_ error: any Error) -> Bool {
        if let error = error as? StoreError { return error.code == .cannotConnect && !error.refusedByServer }
        guard let error = error as? PSQLError else { return false }
        switch error.code {
        case .connectionError, .serverClosedConnection, .uncleanShutdown: return true
        case .server: return error.serverInfo?[.sqlState].map { $0.hasPrefix("57P") || $0.hasPrefix("08") } ?? false
        default: return false
        }
    }

    private func announce(hub: String) {
        let continuations = listeners.withLock { Array(($0.byHub[hub] ?? [:]).values) }
        for continuation in continuations { continuation.yield() }
    }

    private func announceToAll() {
        let continuations = listeners.withLock { $0.byHub.values.flatMap(\.values) }
        for continuation in continuations { continuation.yield() }
    }

    /// Work announced for `hub` by any node, as it is announced (see ``HeraldStore/workAnnouncements()``).
    func workAnnouncements(hub: String) -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let key = listeners.withLock { state in
            let key = state.next
            state.next += 1
            state.byHub[hub, default: [:]][key] = continuation
            return key
        }
        continuation.onTermination = { [weak self] _ in
            self?.listeners.withLock { _ = $0.byHub[hub]?.removeValue(forKey: key) }
        }
        return stream
    }

    /// Brings the schema up to date (see ``PostgresMigration``) and returns the versions it
    /// applied; none when it was up to date. Safe to call from several nodes at once: each
    /// migration is applied exactly once.
    ///
    /// - Throws: ``StoreError`` with ``StoreError/Code/cannotConnect`` when the
    ///   server cannot be reached within the connect timeout or refuses the sign-in (the message
    ///   says why, without the password), ``StoreError/Code/schemaTooNew``
    ///   for a database from a newer Herald.
    @discardableResult
    public func migrate() async throws -> [Int] {
        try await migrate(through: PostgresMigration.all.last?.version ?? 0)
    }

    /// Applies the migrations up to `version` only: for tests of an upgrade from an earlier
    /// schema.
    package func migrate(through version: Int) async throws -> [Int] {
        let connection = try await connect()
        do {
            let applied = try await PostgresMigration.migrate(
                on: connection, migrations: PostgresMigration.all.filter { $0.version <= version }, database: url, logger: logger)
            try? await connection.close()
            return applied
        } catch {
            try? await connection.close()
            throw mapError(error)
        }
    }

    /// The store of the hub `hub`. Stores are cheap: they share this database's connections.
    ///
    /// - Parameter now: The clock for expiry and timestamps; injectable for tests.
    public func store(hub: String, now: @escaping @Sendable () -> Date = { Date() }) -> PostgresStore {
        PostgresStore(hub: hub, database: self, now: now)
    }

    /// Returns once the database answers; for readiness checks.
    public func ping() async throws {
        _ = try await run { connection in try await connection.query("SELECT 1", logger: self.clientLogger) }
    }

    /// The newest schema version this Herald knows.
    public static var latestSchemaVersion: Int { PostgresMigration.latestVersion }

    /// The schema versions applied to the database, in order.
    public func schemaVersions() async throws -> [Int] {
        try await run { connection in
            var versions: [Int] = []
            let rows = try await connection.query("SELECT version FROM herald.schema_migrations ORDER BY version", logger: self.clientLogger)
            for try await version in rows.decode(Int.self) { versions.append(version) }
            return versions
        }
    }

    /// Runs an SQL statement, as given, outside any store: for tests, benchmarks and scratch
    /// databases; never with text from a request.
    package func execute(unsafeSQL sql: String) async throws {
        _ = try await run { connection in try await connection.query(PostgresQuery(unsafeSQL: sql), logger: self.clientLogger) }
    }

    // MARK: Running statements

    /// Runs `body` on a connection of the pool, abandoned after `deadline`; fails at once with
    /// `unavailable` while the database is unreachable (see ``listenForWork()``).
    func run<T: Sendable>(
        deadline: Duration = statementDeadline,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        do {
            return try await runUnmapped(deadline: deadline, body)
        } catch {
            throw mapError(error)
        }
    }

    /// ``run(_:)``, throwing the client's errors as they are: for a caller that decides by the
    /// error what to do next, before passing it through ``mapError(_:)``.
    func runUnmapped<T: Sendable>(
        deadline: Duration = statementDeadline,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        try checkReachable()
        let client = self.client
        return try await abandoningAfter(deadline) { try await client.withConnection(body) }
    }

    /// Whether `error` (as ``runUnmapped(_:)`` throws it) would fail any other write as well: the
    /// database could not be asked or did not answer (unreachable, shutting down, a lost
    /// connection, a statement abandoned) or its disk is full; rather than it refused what it was
    /// asked (a value, a rule, a deadlock), which another statement may not meet.
    static func failsEveryWrite(_ error: any Error) -> Bool {
        if let error = error as? StoreError { return !error.isInternal }
        if error is CancellationError { return true }
        if String(reflecting: type(of: error)).hasSuffix(".ConnectionPoolError") { return true }
        guard let error = error as? PSQLError else { return false }
        switch error.code {
        case .server:
            let state = error.serverInfo?[.sqlState] ?? ""
            return state.hasPrefix("08") || state.hasPrefix("57P") || state == "53100"
        default:
            return true
        }
    }

    /// How long a request's statement (its wait for a connection included) may take.
    static let statementDeadline: Duration = .seconds(20)

    /// How long a statement of upkeep may take: `ANALYZE` of a large table, which samples it.
    /// Bulk writes are cut into batches that each fit ``statementDeadline`` instead.
    static let upkeepDeadline: Duration = .seconds(600)

    /// Brings the planner statistics of `tables` (names in the schema `herald`, such as
    /// `registrations`) up to date, with ``upkeepDeadline``: after a bulk load, whose rows the
    /// statistics would otherwise miss until autovacuum comes by.
    package func analyze(_ tables: [String]) async throws {
        guard !tables.isEmpty else { return }
        // Names of Herald's own tables, never text from a request.
        let list = tables.map { "herald." + $0 }.joined(separator: ", ")
        _ = try await run(deadline: Self.upkeepDeadline) { connection in
            try await connection.query(PostgresQuery(unsafeSQL: "ANALYZE \(list)"), logger: self.clientLogger)
        }
    }

    /// Runs `operation` in a task of its own and returns what it returns, unless it takes longer
    /// than `deadline`, or the database turns unreachable meanwhile: then it is abandoned
    /// (cancelled, and no longer waited for) and `unavailable` is thrown.
    ///
    /// postgres-nio 1.33 can leave a statement unanswered for ever when the server shuts down
    /// just as it is sent; without this, the delivery worker that sent it would wait for ever,
    /// and a graceful shutdown with it.
    private func abandoningAfter<T: Sendable>(
        _ deadline: Duration,
        _ operation: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let waiting = Mutex<CheckedContinuation<T, any Error>?>(nil)
        let logger = self.logger
        let id = waitingStatements.withLock { statements in
            statements.next += 1
            return statements.next
        }
        defer { waitingStatements.withLock { _ = $0.byID.removeValue(forKey: id) } }
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            waiting.withLock { $0 = continuation }
            let work = Task<Void, Never> { @Sendable in
                let result: Result<T, any Error>
                do {
                    result = .success(try await operation())
                } catch {
                    result = .failure(error)
                }
                waiting.withLock { $0.take() }?.resume(with: result)
            }
            let statement = WaitingStatement(deadline: .now + deadline) { @Sendable reason in
                guard let continuation = waiting.withLock({ $0.take() }) else { return }
                work.cancel()
                switch reason {
                case .unreachable:
                    continuation.resume(throwing: StoreError.databaseUnavailable("the database is unreachable; try again"))
                case .deadline:
                    logger.error("A database statement was not answered in time; it is abandoned", metadata: ["herald.timeout": "\(deadline)"])
                    continuation.resume(throwing: StoreError.databaseUnavailable("the database did not answer in time; try again"))
                }
            }
            let startsSweeping = waitingStatements.withLock { statements in
                statements.byID[id] = statement
                defer { statements.sweeping = true }
                return !statements.sweeping
            }
            if startsSweeping { Task { await self.abandonStatementsPastTheirDeadline() } }
        }
    }

    /// The statements being waited for, and whether a task looks for those past their deadline.
    private struct WaitingStatements {
        var next = 0
        var byID: [Int: WaitingStatement] = [:]
        var sweeping = false
    }

    /// A statement being waited for (see ``abandoningAfter(_:_:)``): when it is due, and what
    /// stops the wait, saying why.
    private struct WaitingStatement: Sendable {
        enum Reason { case deadline, unreachable }
        var deadline: ContinuousClock.Instant
        var abandon: @Sendable (Reason) -> Void
    }

    /// How often ``abandonStatementsPastTheirDeadline()`` looks: a statement is abandoned at most
    /// this long after its deadline.
    static let deadlineSweepInterval: Duration = .milliseconds(100)

    /// Abandons the statements past their deadline, every ``deadlineSweepInterval``, while any is
    /// waited for: one task for them all, rather than a timer set on an event loop and cancelled
    /// again for every statement.
    private func abandonStatementsPastTheirDeadline() async {
        while true {
            try? await Task.sleep(for: Self.deadlineSweepInterval)
            let now = ContinuousClock.now
            let due = waitingStatements.withLock { statements -> [WaitingStatement]? in
                guard !statements.byID.isEmpty else {
                    statements.sweeping = false
                    return nil
                }
                return statements.byID.values.filter { $0.deadline <= now }
            }
            guard let due else { return }
            for statement in due { statement.abandon(.deadline) }
        }
    }

    /// Runs `body` in one transaction (`READ COMMITTED`), rolled back if it throws; like a
    /// statement (see ``run(deadline:_:)``), abandoned after `deadline` or when the database
    /// turns unreachable, its wait for a connection included.
    func transaction<T: Sendable>(
        deadline: Duration = statementDeadline,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        do {
            try checkReachable()
            let client = self.client
            let logger = clientLogger
            return try await abandoningAfter(deadline) {
                try await client.withTransaction(logger: logger) { connection in try await body(connection) }
            }
        } catch {
            throw mapError(error)
        }
    }

    private func checkReachable() throws(StoreError) {
        guard reachable.load(ordering: .relaxed) else { throw .databaseUnavailable("the database is unreachable; try again") }
    }

    /// Turns an error of the client into one safe to show: PostgreSQL's own message is logged,
    /// not passed on; errors of Herald's own pass unchanged.
    func mapError(_ error: any Error) -> any Error {
        if error is HeraldError || error is StoreError || error is CancellationError { return error }
        // The pool gave up connecting (after a minute without a connection), or closed: its error
        // type is in postgres-nio's `_ConnectionPoolModule`, which is not meant to be imported.
        if String(reflecting: type(of: error)).hasSuffix(".ConnectionPoolError") {
            return StoreError.databaseUnavailable("the database is unavailable; try again")
        }
        if let transaction = error as? PostgresTransactionError {
            if let closureError = transaction.closureError { return mapError(closureError) }
            if let other = transaction.beginError ?? transaction.commitError { return mapError(other) }
            return StoreError(code: .database, message: "a transaction failed")
        }
        if let error = error as? PostgresDecodingError {
            logger.error("A stored value could not be decoded", metadata: ["herald.store.column": "\(error.columnName)"])
            return StoreError(code: .corruptData, message: "the stored column '\(error.columnName)' has the wrong type")
        }
        guard let error = error as? PSQLError else { return error }
        switch error.code {
        case .server:
            let state = error.serverInfo?[.sqlState] ?? "?"
            if state == PostgresMigration.ruleFailedState {
                // Raised by Herald's own SQL (`herald.fail_unless`), whose message says which rule.
                return HeraldError.conflict(error.serverInfo?[.message] ?? "a registry rule did not hold")
            }
            logger.error(
                "PostgreSQL refused a statement",
                metadata: ["herald.store.sqlstate": "\(state)", "error": "\(error.serverInfo?[.message] ?? "")"]
            )
            switch state {
            case "40001", "40P01", "55P03", "57014":
                // Serialization failure, deadlock, lock not available, statement timeout: passes.
                return StoreError.databaseUnavailable("the database is busy; try again")
            case "53100":
                // disk_full: the server's disk has no room; nothing of the statement was written.
                return StoreError.storageFull
            case "3D000", "28000", "28P01":
                return StoreError(code: .cannotConnect, message: "the database \(url) refused the connection (\(state))", refusedByServer: true)
            case let state where state.hasPrefix("08") || state.hasPrefix("57P"):
                return StoreError.databaseUnavailable("the database is unavailable; try again")
            default:
                return StoreError(code: .database, message: "the database failed (\(state))")
            }
        case .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .poolClosed,
            .sslUnsupported, .failedToAddSSLHandler:
            logger.warning("The database connection failed", metadata: ["herald.store.database": "\(url)", "error": "\(error.code)"])
            return StoreError.databaseUnavailable("the database is unavailable; try again")
        case .unsupportedAuthMechanism, .authMechanismRequiresPassword, .saslError:
            return StoreError(code: .cannotConnect, message: "cannot sign in to the database \(url) (\(error.code))")
        default:
            logger.error("The database client failed", metadata: ["error": "\(error.code)"])
            return StoreError(code: .database, message: "the database failed (\(error.code))")
        }
    }
}
