import Foundation
import HeraldCore
import HeraldPostgres
import HeraldStore
import Testing

/// The plans of delivery pages on a table whose statistics are stale: loaded in bulk and never
/// analyzed, as after `herald store copy`, an import or a benchmark's seeding. Whatever the
/// statistics say, a page is an index range scan that stops once the page is full: no bitmap
/// scan of every row after the cursor, no sort, no scan of the whole table.
@Suite("Registration pages on stale statistics", .enabled(if: PostgresTestDatabase.isConfigured, PostgresTestDatabase.skipReason))
struct RegistrationPagePlanTests {
    static let devices = 100_000

    /// Registrations `reg-000000001`… of the hub `bench`, all tagged `all`, every third `a` and
    /// every fourth `b`, written by one statement into a table autovacuum leaves alone (so
    /// that nothing analyzes it behind the test's back).
    static func load(_ database: PostgresDatabase) async throws {
        try await database.execute(unsafeSQL: "ALTER TABLE herald.registrations SET (autovacuum_enabled = false)")
        try await database.execute(unsafeSQL: "ALTER TABLE herald.registration_tags SET (autovacuum_enabled = false)")
        try await database.execute(
            unsafeSQL: """
                INSERT INTO herald.registrations (hub, id, platform, handle, version, created_at, updated_at, tags)
                SELECT 'bench', 'reg-' || lpad(g::text, 9, '0'), 'fcm', 'bench:' || md5(g::text), 1, 0, 0,
                    ARRAY['all'] || CASE WHEN g % 3 = 0 THEN ARRAY['a'] ELSE '{}' END || CASE WHEN g % 4 = 0 THEN ARRAY['b'] ELSE '{}' END
                FROM generate_series(1, \(devices)) AS g
                """)
    }

    /// The cases: a broadcast (a scan of the registrations), one tag (the tag index joined to
    /// the registrations), a tag and a condition, and any of two tags (candidates from the tag
    /// index, then looked up by key).
    static let expressions: [(String, TagExpression?)] = [
        ("broadcast", nil), ("one tag", .tag("a")), ("a tag and a condition", .and(.tag("all"), .not(.tag("b")))),
        ("any of two tags", .or(.tag("a"), .tag("b"))),
    ]

    @Test(.timeLimit(.minutes(5)))
    func pagesAreIndexRangeScansWhateverTheStatisticsSay() async throws {
        try await PostgresTestDatabase.withScratchDatabase { url, _ in
            try await PostgresTestDatabase.with(url: url, maximumConnections: 2) { database in
                try await Self.load(database)
                let store = database.store(hub: "bench")
                let cursor = "reg-000050000"

                // What the planner would do by itself: it expects a few rows after the cursor,
                // where there are 50,000, and reads them all to sort them.
                let unguided = try await store.explainRegistrationPage(
                    matching: nil, platforms: [.fcm], kind: .native, after: cursor, through: nil, limit: 2000, settings: false
                ).joined(separator: "\n")
                #expect(unguided.contains("Bitmap") || unguided.contains("Sort") || unguided.contains("Seq Scan"), "\(unguided)")

                for (name, expression) in Self.expressions {
                    for upperBound in [nil, "reg-000075000"] {
                        let plan = try await store.explainRegistrationPage(
                            matching: expression, platforms: [.fcm], kind: .native, after: cursor, through: upperBound, limit: 2000
                        ).joined(separator: "\n")
                        let label = "\(name), through \(upperBound ?? "the end"):\n\(plan)"
                        #expect(plan.contains("Index Scan") || plan.contains("Index Only Scan"), "\(label)")
                        #expect(!plan.contains("Bitmap"), "\(label)")
                        #expect(!plan.contains("Seq Scan"), "\(label)")
                        #expect(!plan.contains("Hash Join") && !plan.contains("Merge Join"), "\(label)")
                        if expression.map({ if case .or = $0 { true } else { false } }) != true {
                            // Any of two tags merges the tags' candidates: a sort of a page of ids.
                            #expect(!plan.contains("Sort"), "\(label)")
                        }
                        // The upper bound is part of the index range, not a filter on what it read.
                        if let upperBound { #expect(plan.contains("<= '\(upperBound)'"), "\(label)") }
                    }
                }

                // The pages read what they should, from the cursor, up to the bound.
                let page = try await store.registrations(
                    matching: nil, platforms: [.fcm], kind: .native, after: cursor, through: "reg-000050999", limit: 2000
                )
                #expect(page.count == 999)
                #expect(page.first?.id == "reg-000050001")
                #expect(page.last?.id == "reg-000050999")
                let tagged = try await store.registrations(
                    matching: .tag("a"), platforms: nil, kind: nil, after: cursor, through: "reg-000050030", limit: 2000
                )
                #expect(tagged.map(\.id) == stride(from: 50_001, through: 50_030, by: 1).filter { $0 % 3 == 0 }.map { String(format: "reg-%09d", $0) })

                // A large send's partition boundaries: each step an index scan from the last
                // boundary, skipping its entries, never a sort of what follows it.
                let boundaryPlan = try await store.explainRegistrationIDBoundaries(after: cursor, every: 10_000, limit: 63)
                    .joined(separator: "\n")
                #expect(boundaryPlan.contains("Index Only Scan") || boundaryPlan.contains("Index Scan"), "\(boundaryPlan)")
                #expect(!boundaryPlan.contains("Bitmap") && !boundaryPlan.contains("Seq Scan") && !boundaryPlan.contains("Sort"), "\(boundaryPlan)")
                #expect(
                    try await store.registrationIDBoundaries(after: cursor, every: 10_000, limit: 63)
                        == stride(from: 60_000, through: 100_000, by: 10_000).map { String(format: "reg-%09d", $0) })
                #expect(try await store.registrationIDBoundaries(after: cursor, every: 10_000, limit: 2) == ["reg-000060000", "reg-000070000"])

                // Once the statistics are brought up to date, the planner chooses the index range
                // by itself.
                try await store.refreshStatistics()
                let analyzed = try await store.explainRegistrationPage(
                    matching: nil, platforms: [.fcm], kind: .native, after: cursor, through: nil, limit: 2000, settings: false
                ).joined(separator: "\n")
                #expect(analyzed.contains("Index Scan") && !analyzed.contains("Bitmap") && !analyzed.contains("Sort"), "\(analyzed)")
            }
        }
    }
}
