import Foundation
import HeraldPostgres
import HeraldStore
import HeraldStoreConformance
import Testing

/// The store contract's conformance suite, each check on a hub of its own in the test database.
@Suite("PostgresStore conformance", .enabled(if: PostgresTestDatabase.isConfigured, PostgresTestDatabase.skipReason))
struct PostgresStoreConformanceTests {
    @Test(arguments: StoreConformance.checks)
    func conforms(to check: StoreCheck) async throws {
        try await PostgresTestDatabase.with { database in
            try await check.run { now in database.store(hub: PostgresTestDatabase.uniqueHubName(), now: now) }
        }
    }
}

/// In CI the PostgreSQL tests must run: a missing server fails the run instead of skipping them.
@Suite("PostgreSQL in CI")
struct PostgresAvailabilityTests {
    @Test func theTestDatabaseIsConfiguredInCI() {
        let ci = ProcessInfo.processInfo.environment["CI"].map { !$0.isEmpty && $0 != "false" } ?? false
        guard ci else { return }
        #expect(PostgresTestDatabase.isConfigured, "CI must set HERALD_TEST_DATABASE_URL (scripts/postgres-test-server start)")
    }
}
