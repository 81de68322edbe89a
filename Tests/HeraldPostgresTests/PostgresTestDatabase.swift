import Foundation
import HeraldCore
import HeraldPostgres
import Logging
import Testing

/// The PostgreSQL server the tests use: `HERALD_TEST_DATABASE_URL`, as
/// `scripts/postgres-test-server start` prints it. Without it the PostgreSQL tests are skipped,
/// saying so, except in CI (`CI` set), where ``PostgresAvailabilityTests`` fails instead.
enum PostgresTestDatabase {
    static let urlString: String? = {
        let value = ProcessInfo.processInfo.environment["HERALD_TEST_DATABASE_URL"] ?? ""
        return value.isEmpty ? nil : value
    }()

    static var isConfigured: Bool { urlString != nil }

    /// The CA of the test server's TLS certificate (`HERALD_TEST_DATABASE_CA`, as
    /// `scripts/postgres-test-server ca` prints it), when the file is there.
    static let certificateAuthority: String? = {
        let value = ProcessInfo.processInfo.environment["HERALD_TEST_DATABASE_CA"] ?? ""
        return !value.isEmpty && FileManager.default.isReadableFile(atPath: value) ? value : nil
    }()

    static let skipReason: Comment =
        "HERALD_TEST_DATABASE_URL is not set: the PostgreSQL tests are skipped (start a server with `export HERALD_TEST_DATABASE_URL=$(scripts/postgres-test-server start)`)"

    static func url() throws -> DatabaseURL {
        guard let urlString else { throw HeraldError.unavailable("HERALD_TEST_DATABASE_URL is not set") }
        return try DatabaseURL(urlString)
    }

    /// Runs `body` with a running, migrated database at `url` (the test server by default).
    static func with<T>(
        url: DatabaseURL? = nil,
        maximumConnections: Int = 8,
        logger: Logger = testLogger,
        migrate: Bool = true,
        _ body: (PostgresDatabase) async throws -> T
    ) async throws -> T {
        try await PostgresDatabase.with(
            url: try url ?? Self.url(), maximumConnections: maximumConnections, migrate: migrate, logger: logger, body
        )
    }

    /// Runs `body` with a database of its own on the test server (its URL, parsed and as text),
    /// dropped afterwards: for tests of migrations and of copies into an empty database.
    static func withScratchDatabase(_ body: (DatabaseURL, String) async throws -> Void) async throws {
        let configured = try #require(urlString)
        try await PostgresDatabase.withScratchDatabase(on: try Self.url(), prefix: "herald_scratch", logger: testLogger) { url in
            var text = try #require(URLComponents(string: configured))
            text.path = "/" + url.database
            try await body(url, try #require(text.string))
        }
    }

    /// Runs `body` with a database of its own (one connection) whose `table` (in the schema
    /// `herald`) autovacuum never analyzes: for tests of plans on statistics that know nothing
    /// of what a test loads.
    static func withStaleStatistics(of table: String, _ body: (PostgresDatabase) async throws -> Void) async throws {
        try await withScratchDatabase { url, _ in
            try await with(url: url, maximumConnections: 1) { database in
                try await database.execute(unsafeSQL: "ALTER TABLE herald.\(table) SET (autovacuum_enabled = false)")
                try await body(database)
            }
        }
    }

    /// Runs `statement` (PL/pgSQL, such as `PERFORM * FROM herald.save_registrations(…)`) and then `check` (PL/pgSQL
    /// that raises when what was written is wrong) in one transaction, which fails, with the
    /// count, when it read more than `limit` rows of `table` (in the schema `herald`): for tests
    /// of writes that must read only their own rows, whatever the statistics say.
    static func expectFewRowsRead(
        _ database: PostgresDatabase, of table: String, by statement: String, check: String = "", what: String, limit: Int = 20
    ) async throws {
        try await database.execute(
            unsafeSQL: """
                DO $$
                DECLARE
                    fetched bigint;
                BEGIN
                    \(statement);
                    \(check)
                    SELECT coalesce(idx_tup_fetch, 0) + coalesce(seq_tup_read, 0) INTO fetched
                        FROM pg_stat_xact_user_tables WHERE relid = 'herald.\(table)'::regclass;
                    IF fetched > \(limit) THEN
                        RAISE EXCEPTION 'writing % read % rows of herald.\(table)', '\(what)', fetched;
                    END IF;
                END
                $$
                """)
    }

    /// A hub name no other test uses, so that each test starts with an empty store.
    static func uniqueHubName() -> String {
        "test-" + UUID().uuidString.lowercased()
    }
}

let testLogger: Logger = {
    var logger = Logger(label: "herald.postgres.tests")
    logger.logLevel = .critical
    return logger
}()
