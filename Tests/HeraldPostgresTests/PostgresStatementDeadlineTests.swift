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

    /// One task looks for statements past their deadline while any is waited for, and ends when
    /// none is: after each idle spell, the next late statement starts it again and is abandoned
    /// as the first was; one answered in time beside it is not.
    @Test(.timeLimit(.minutes(1)))
    func theDeadlineWatchStartsAgainAfterEachIdleSpell() async throws {
        let record = LogRecorder()
        try await PostgresTestDatabase.with(logger: record.logger()) { database in
            let abandoned = { record.text.components(separatedBy: "A database statement was not answered in time").count - 1 }
            for cycle in 1...3 {
                let started = ContinuousClock.now
                let late = Task {
                    try await database.run(deadline: .milliseconds(200)) { connection in
                        _ = try await connection.query("SELECT pg_sleep(5)", logger: database.clientLogger)
                    }
                }
                _ = try await database.run(deadline: .seconds(5)) { connection in
                    try await connection.query("SELECT pg_sleep(0.4)", logger: database.clientLogger)
                }
                await #expect(throws: StoreError.databaseUnavailable("the database did not answer in time; try again")) { try await late.value }
                #expect(ContinuousClock.now - started < .seconds(2))
                #expect(abandoned() == cycle)
                // Longer than the watch's interval: with nothing waited for, the watch ends.
                try await Task.sleep(for: PostgresDatabase.deadlineSweepInterval * 4)
            }
            try await database.ping()
        }
    }
}
