import Foundation
import HeraldCore
import HeraldStore
import HeraldStoreConformance
import HeraldTestSupport
import Testing

@testable import HeraldPostgres

/// Grouped registration writes keep the tag index and the reservations in step themselves (the
/// row triggers do it for every other write): the index holds exactly each registration's
/// tags, and a written id keeps no reservation, whoever wrote it and however. The installations'
/// tag index likewise holds exactly each installation's tags.
@Suite("PostgreSQL tag indexes", .enabled(if: PostgresTestDatabase.isConfigured, PostgresTestDatabase.skipReason))
struct PostgresRegistrationIndexTests {
    /// Fails when the hub's tag index differs from its registrations' tags, or a registration's
    /// id is still reserved.
    static func expectInStep(_ database: PostgresDatabase, hub: String) async throws {
        try await expectIndexInStep(database, hub: hub, rows: "registrations", index: "registration_tags", idColumn: "registration_id")
        try await database.execute(
            unsafeSQL: """
                DO $$
                BEGIN
                    IF EXISTS (
                        SELECT 1 FROM herald.reservations AS v JOIN herald.registrations AS r ON r.hub = v.hub AND r.id = v.id
                        WHERE v.hub = '\(hub)'
                    ) THEN
                        RAISE EXCEPTION 'a registration''s id is still reserved';
                    END IF;
                END
                $$
                """)
    }

    /// Fails when the hub's installation tag index differs from its installations' tags.
    static func expectInstallationsInStep(_ database: PostgresDatabase, hub: String) async throws {
        try await expectIndexInStep(database, hub: hub, rows: "installations", index: "installation_tags", idColumn: "installation_id")
    }

    /// Fails when the tag index `index` (its rows' ids in `idColumn`) holds other entries than
    /// the tags of the hub's `rows`.
    private static func expectIndexInStep(
        _ database: PostgresDatabase, hub: String, rows: String, index: String, idColumn: String
    ) async throws {
        try await database.execute(
            unsafeSQL: """
                DO $$
                BEGIN
                    IF EXISTS (
                        (SELECT r.id, t.tag FROM herald.\(rows) AS r, unnest(r.tags) AS t(tag) WHERE r.hub = '\(hub)'
                         EXCEPT SELECT g.\(idColumn), g.tag FROM herald.\(index) AS g WHERE g.hub = '\(hub)')
                        UNION ALL
                        (SELECT g.\(idColumn), g.tag FROM herald.\(index) AS g WHERE g.hub = '\(hub)'
                         EXCEPT SELECT r.id, t.tag FROM herald.\(rows) AS r, unnest(r.tags) AS t(tag) WHERE r.hub = '\(hub)')
                    ) THEN
                        RAISE EXCEPTION 'herald.\(index) is out of step with herald.\(rows)';
                    END IF;
                END
                $$
                """)
    }

    /// Runs `write` while another transaction, which ran `statements` (SQL) first, holds the
    /// rows they changed for a second, and returns what `write` returned once both ended.
    static func whileAnotherTransactionHolds<T: Sendable>(
        _ database: PostgresDatabase, _ statements: String, _ write: () async throws -> T
    ) async throws -> T {
        let other = Task {
            try await database.execute(
                unsafeSQL: """
                    DO $$
                    BEGIN
                        \(statements);
                        PERFORM pg_sleep(1);
                    END
                    $$
                    """)
        }
        try await Task.sleep(for: .milliseconds(300))
        let written = try await write()
        try await other.value
        return written
    }

    /// Every writer of installations at once (grouped `PUT`s, some of one installation in the
    /// same group, `PUT`s on a version, which are transactions of their own, and deletes) keeps
    /// both tag indexes exactly in step: the installations' and their registrations'. None of
    /// them fails for having waited for another that waited for it (a deadlock): each takes an
    /// installation's row before its registrations.
    @Test(.timeLimit(.minutes(2)))
    func everyWriterOfInstallationsKeepsBothIndexesInStep() async throws {
        try await PostgresTestDatabase.with { database async throws in
            let hub = PostgresTestDatabase.uniqueHubName()
            let store = database.store(hub: hub)
            for round in 0..<4 {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for index in 0..<36 {
                        let id = "inst-\(index % 9)"
                        let installation = Installation.sample(
                            id: id, pushChannel: String(format: "%064x", index % 9), tags: ["round-\(round % 2)", "i\(index % 3)", "kept"],
                            templates: index % 2 == 0 ? ["t": InstallationTemplate(body: "{}", tags: ["template-\(round)", "kept"])] : [:])
                        group.addTask {
                            switch index % 4 {
                            case 2:
                                // Another writer may have changed it since: the one error
                                // expected (a deadlock would be another).
                                if let current = try await store.installation(id: id) {
                                    do {
                                        _ = try await store.upsertInstallation(installation, ifVersion: current.version)
                                    } catch let error as StoreError where error.code == .versionMismatch {}
                                }
                            case 3 where round == 2:
                                try await store.deleteInstallation(id: id)
                            default:
                                _ = try await store.upsertInstallation(installation, ifVersion: nil)
                            }
                        }
                    }
                    try await group.waitForAll()
                }
                try await Self.expectInStep(database, hub: hub)
                try await Self.expectInstallationsInStep(database, hub: hub)
            }
            #expect(try await store.registrationCount() > 0)
            let stored = try await store.listInstallations(userId: nil, tag: "kept", after: nil, limit: 100)
            #expect(stored.map(\.id).sorted() == (0..<9).map { "inst-\($0)" }.sorted())
            for id in stored.map(\.id) { try await store.deleteInstallation(id: id) }
            try await Self.expectInStep(database, hub: hub)
            try await Self.expectInstallationsInStep(database, hub: hub)
            #expect(try await store.registrationCount() == 0)
        }
    }

    @Test func groupedCreatesUpdatesAndReplacementsKeepTheIndexInStep() async throws {
        try await PostgresTestDatabase.with { database async throws in
            let hub = PostgresTestDatabase.uniqueHubName()
            let store = database.store(hub: hub)
            let ids = (0..<48).map { "issued-\($0)" }
            for id in ids { try await store.reserveRegistrationID(id, owner: "alice", ttl: .seconds(60)) }
            let issued = RegistrationCondition(mustBeIssued: true, owner: "alice", replacesOtherRegistrationsOfHandle: true)
            // Creates, then updates that change some tags and keep others, then writes of pairs
            // of registrations to one device (each deletes the other, with its index entries:
            // one of each pair is left).
            for round in 0..<3 {
                let condition = round < 2 ? issued : RegistrationCondition(owner: "alice", replacesOtherRegistrationsOfHandle: true)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for (index, id) in ids.enumerated() {
                        let device = round == 2 && index % 2 == 1 ? index - 1 : index
                        let tags = round == 0 ? ["username:alice", "news"] : ["username:alice", "n\(index % (round + 2))"]
                        group.addTask {
                            _ = try await store.upsertRegistration(
                                .sample(id: id, handle: String(format: "%064x", device), tags: tags, owner: "alice"), when: condition
                            )
                        }
                    }
                    try await group.waitForAll()
                }
                try await Self.expectInStep(database, hub: hub)
            }
            #expect(try await store.registrationCount() == ids.count / 2)
            // Writes outside the grouped statement still go through the trigger.
            _ = try await store.upsertRegistration(.sample(id: "plain", handle: "plain-device", tags: ["a", "b"]), ifVersion: nil)
            let plain = try #require(try await store.registration(id: "plain"))
            _ = try await store.upsertRegistration(.sample(id: "plain", handle: "plain-device", tags: ["b", "c"]), ifVersion: plain.version)
            try await Self.expectInStep(database, hub: hub)
            #expect(try await store.deleteRegistration(id: "plain", ifVersion: nil, owner: nil))
            try await Self.expectInStep(database, hub: hub)
        }
    }

    /// A grouped write reads the tags a row held with its statement's snapshot: when another
    /// transaction changes them before the write locks the row, the write is applied again on
    /// its own, and the index ends up exactly as the last write left the row.
    @Test(.timeLimit(.minutes(1)))
    func aRowChangedMeanwhileIsWrittenAgainOnItsOwn() async throws {
        try await PostgresTestDatabase.with { database async throws in
            let hub = PostgresTestDatabase.uniqueHubName()
            let store = database.store(hub: hub)
            _ = try await store.upsertRegistration(.sample(id: "contended", handle: "device-1", tags: ["first"]), when: .none)
            // Another transaction changes the tags and holds the row.
            let saved = try await Self.whileAnotherTransactionHolds(
                database, "UPDATE herald.registrations SET tags = ARRAY['meanwhile'], version = version + 1 WHERE hub = '\(hub)' AND id = 'contended'"
            ) {
                try await store.upsertRegistration(.sample(id: "contended", handle: "device-1", tags: ["last"]), when: .none)
            }
            #expect(saved.version == 3)
            #expect(try await store.registration(id: "contended")?.tags == ["last"])
            try await Self.expectInStep(database, hub: hub)
        }
    }

    /// A grouped installation write reads the tags its rows held with its statement's snapshot:
    /// when another transaction changes them before the write locks the row, nothing of the group
    /// is written by that statement and the group is written again by one whose triggers keep
    /// the indexes. Both indexes end up exactly as the last write left the rows.
    @Test(.timeLimit(.minutes(1)))
    func anInstallationChangedMeanwhileIsWrittenAgainThroughTheTriggers() async throws {
        try await PostgresTestDatabase.with { database async throws in
            let hub = PostgresTestDatabase.uniqueHubName()
            let store = database.store(hub: hub)
            _ = try await store.upsertInstallation(.sample(id: "contended", tags: ["first"]), ifVersion: nil)
            // Another transaction changes the installation's tags and its registration's, and
            // holds both rows.
            let saved = try await Self.whileAnotherTransactionHolds(
                database,
                """
                UPDATE herald.installations SET tags = ARRAY['meanwhile'], version = version + 1 WHERE hub = '\(hub)' AND id = 'contended';
                UPDATE herald.registrations SET tags = ARRAY['meanwhile'], version = version + 1
                    WHERE hub = '\(hub)' AND installation_id = 'contended'
                """
            ) {
                try await store.upsertInstallation(.sample(id: "contended", tags: ["last"]), ifVersion: nil)
            }
            #expect(saved.version == 3)
            #expect(try await store.installation(id: "contended")?.tags == ["last"])
            try await Self.expectInStep(database, hub: hub)
            try await Self.expectInstallationsInStep(database, hub: hub)
        }
    }

    /// A write of an issued id reads its reservation by primary key, even while the statistics
    /// know nothing of the hub's reservations (a new hub beside others): it once read every
    /// reservation of the hub through the (hub, expires_at) index, as cheap by the estimate.
    @Test(.timeLimit(.minutes(5)))
    func aWriteReadsItsOwnReservationWhateverTheHubHolds() async throws {
        try await PostgresTestDatabase.withStaleStatistics(of: "reservations") { database in
            try await database.execute(
                unsafeSQL: """
                    INSERT INTO herald.reservations (hub, id, owner, expires_at)
                    SELECT 'other-' || g, 'old-' || g, NULL, 9999999999999 FROM generate_series(1, 5000) AS g
                    """)
            try await database.execute(unsafeSQL: "ANALYZE herald.reservations")
            try await database.execute(
                unsafeSQL: """
                    INSERT INTO herald.reservations (hub, id, owner, expires_at)
                    SELECT 'bench', 'res-' || lpad(g::text, 9, '0'), 'alice', 9999999999999 FROM generate_series(1, 20000) AS g
                    """)
            for id in ["res-000000007", "res-000010000"] {
                try await PostgresTestDatabase.expectFewRowsRead(
                    database, of: "reservations",
                    by: """
                        PERFORM * FROM herald.save_registrations('bench', ARRAY['registration \(id)'], ARRAY['\(id)'],
                            ARRAY['fcm'], ARRAY['device-\(id)'], ARRAY[NULL]::text[], ARRAY[NULL]::text[], ARRAY['alice'],
                            ARRAY[NULL]::bigint[], ARRAY[0::bigint], ARRAY[1::bigint], ARRAY[1], ARRAY['all'],
                            ARRAY[NULL]::text[], ARRAY[NULL]::text[], ARRAY[NULL]::text[], ARRAY[false], ARRAY[NULL]::text[], ARRAY[false],
                            ARRAY[true], ARRAY['alice'], ARRAY[true])
                        """,
                    check: """
                        IF NOT EXISTS (SELECT 1 FROM herald.registrations WHERE hub = 'bench' AND id = '\(id)') THEN
                            RAISE EXCEPTION 'the issued id % was not written', '\(id)';
                        END IF;
                        """,
                    what: id)
            }
            try await PostgresRegistrationIndexTests.expectInStep(database, hub: "bench")
        }
    }
}
