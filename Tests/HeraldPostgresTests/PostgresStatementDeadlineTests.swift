import Foundation
import HeraldStore
import HeraldTestSupport
import PostgresNIO
import Testing

@testable import HeraldPostgres

/// A statement's deadline: one not answered in time is abandoned when its deadline passes, and
/// the timer of one answered in time is gone with it.
@Suite("PostgreSQL statement deadlines", .enabled(if: PostgresTestDatabase.isConfigured, PostgresTestDatabase.skipReason))
struct PostgresStatementDeadlineTests {
    @Test(.timeLimit(.minutes(1)))
    func aStatementPastItsDeadlineIsAbandonedThenAndOneInTimeIsNot() async throws {
        let record = LogRecorder()
        try await PostgresTestDatabase.with(logger: record.logger()) { database in
            let started = ContinuousClock.now
            await #expect(throws: StoreError.databaseUnavailable("the database did not answer in time; try again")) {
                try await database.run(deadline: .milliseconds(300)) { connection in
                    try await connection.query("SELECT pg_sleep(5)", logger: database.clientLogger)
                }
            }
            let waited = ContinuousClock.now - started
            #expect(waited >= .milliseconds(300) && waited < .seconds(3), "\(waited)")
            let abandoned = { record.text.components(separatedBy: "A database statement was not answered in time").count - 1 }
            #expect(abandoned() == 1)

            // Answered well within its deadline: the timer does not fire afterwards.
            _ = try await database.run(deadline: .milliseconds(500)) { connection in
                try await connection.query("SELECT 1", logger: database.clientLogger)
            }
            try await Task.sleep(for: .milliseconds(800))
            #expect(abandoned() == 1)
            try await database.ping()
        }
    }
}
