import HeraldSQLite
import HeraldStore
import HeraldStoreConformance
import Testing

/// The store contract's conformance suite, each check on a fresh SQLite file.
@Suite("SQLiteStore conformance")
struct SQLiteStoreConformanceTests {
    @Test(arguments: StoreConformance.checks)
    func conforms(to check: StoreCheck) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try await check.run { now in
            try await SQLiteStore.open(path: directory.databasePath, logger: testLogger, now: now)
        }
    }
}
