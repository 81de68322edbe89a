import Foundation
import HeraldPostgres
import Testing

/// Registration writes on a table whose statistics are stale (filled in bulk and never
/// analyzed, as a new hub is while it grows): each write reads the rows it writes and the
/// registrations of the device it replaces, not the whole hub.
@Suite("Registration writes on stale statistics", .enabled(if: PostgresTestDatabase.isConfigured, PostgresTestDatabase.skipReason))
struct RegistrationWritePlanTests {
    static let devices = 20_000

    /// Fills the hub `bench` with ``devices`` FCM registrations in one statement, `reg-000000001`
    /// and on, each with the tags `tags` (SQL, of the series' `g`).
    static func fillBench(_ database: PostgresDatabase, tags: String) async throws {
        try await database.execute(
            unsafeSQL: """
                INSERT INTO herald.registrations (hub, id, platform, handle, version, created_at, updated_at, tags)
                SELECT 'bench', 'reg-' || lpad(g::text, 9, '0'), 'fcm', 'bench:' || md5(g::text), 1, 0, 0, \(tags)
                FROM generate_series(1, \(devices)) AS g
                """)
    }

    @Test(.timeLimit(.minutes(5)))
    func aWriteReadsItsOwnRowsWhateverTheHubHolds() async throws {
        try await PostgresTestDatabase.withStaleStatistics(of: "registrations") { database in
            try await Self.fillBench(database, tags: "ARRAY['all']")
            // An update of a stored row, a new row that replaces the registrations of its
            // device, and a new row of a new device: one transaction each, which fails (with
            // the count) when it read more than a few rows of the registrations.
            // (A handle is an SQL expression: the replaced device's is read by primary key.)
            let replaced = "(SELECT handle FROM herald.registrations WHERE hub = 'bench' AND id = 'reg-000000007')"
            for (id, handle) in [("reg-000010000", "'bench:changed'"), ("reg-new-1", replaced), ("reg-new-2", "'bench:new'")] {
                try await PostgresTestDatabase.expectFewRowsRead(
                    database, of: "registrations",
                    by: """
                        PERFORM * FROM herald.save_registrations('bench', ARRAY['\(id)'], ARRAY['\(id)'], ARRAY['fcm'],
                            ARRAY[\(handle)], ARRAY[NULL]::text[], ARRAY[NULL]::text[], ARRAY[NULL]::text[],
                            ARRAY[NULL]::bigint[], ARRAY[0::bigint], ARRAY[1::bigint], ARRAY[1], ARRAY['all'],
                            ARRAY[NULL]::text[], ARRAY[NULL]::text[], ARRAY[NULL]::text[], ARRAY[false], ARRAY[NULL]::text[], ARRAY[false],
                            ARRAY[false], ARRAY[NULL]::text[], ARRAY[true])
                        """,
                    what: id)
            }
            // What the writes did: the replaced device's registration is gone.
            try await database.execute(
                unsafeSQL: """
                    DO $$
                    BEGIN
                        IF EXISTS (SELECT 1 FROM herald.registrations WHERE hub = 'bench' AND id = 'reg-000000007') THEN
                            RAISE EXCEPTION 'the replaced registration is still there';
                        END IF;
                        IF (SELECT handle FROM herald.registrations WHERE hub = 'bench' AND id = 'reg-000010000') <> 'bench:changed' THEN
                            RAISE EXCEPTION 'the update was not written';
                        END IF;
                    END
                    $$
                    """)
        }
    }

    /// An installation write deletes the registrations its installation no longer has, found by
    /// the installation: on statistics taken when the hub's registrations had no installation,
    /// it still reads that installation's, not every installation registration of the hub.
    @Test(.timeLimit(.minutes(5)))
    func anInstallationWriteFindsTheRegistrationsItReplacesByKey() async throws {
        try await PostgresTestDatabase.withStaleStatistics(of: "registrations") { database in
            try await Self.fillBench(database, tags: "ARRAY['all']")
            try await database.execute(unsafeSQL: "ANALYZE herald.registrations")
            try await database.execute(
                unsafeSQL: """
                    INSERT INTO herald.registrations (hub, id, platform, handle, version, created_at, updated_at, tags, installation_id)
                    SELECT 'bench', 'inst-' || lpad(g::text, 9, '0') || '-old', 'fcm', 'inst:' || md5(g::text), 1, 0, 0, ARRAY['all'],
                        'inst-' || lpad(g::text, 9, '0')
                    FROM generate_series(1, \(Self.devices)) AS g
                    """)
            // The installation `inst-000000005` written with a registration of a new id: its
            // old one goes.
            try await PostgresTestDatabase.expectFewRowsRead(
                database, of: "registrations",
                by: """
                    PERFORM * FROM herald.save_installations('bench', ARRAY['inst-000000005'], ARRAY[NULL]::text[], ARRAY[1],
                        ARRAY['all'], ARRAY['{}'], ARRAY[1::bigint], ARRAY['inst-000000005-new'], ARRAY['fcm'], ARRAY['inst:new'],
                        ARRAY[NULL]::text[], ARRAY[NULL]::text[], ARRAY[NULL]::bigint[], ARRAY[1::bigint], ARRAY[1], ARRAY['all'],
                        ARRAY[NULL]::text[], ARRAY[NULL]::text[], ARRAY['inst-000000005'], ARRAY[false], ARRAY[NULL]::text[])
                    """,
                check: """
                    IF (SELECT array_agg(id) FROM herald.registrations WHERE hub = 'bench' AND installation_id = 'inst-000000005')
                        <> ARRAY['inst-000000005-new'] THEN
                        RAISE EXCEPTION 'the installation''s registrations are not the one it was written with';
                    END IF;
                    """,
                what: "an installation")
            try await PostgresRegistrationIndexTests.expectInStep(database, hub: "bench")
            try await PostgresRegistrationIndexTests.expectInstallationsInStep(database, hub: "bench")
        }
    }

    /// The triggers that keep the tag index find each entry by its key, on an index filled in
    /// bulk and never analyzed: an update of one row's tags and a delete read that row's
    /// entries, not the hub's.
    @Test(.timeLimit(.minutes(5)))
    func theTagIndexIsKeptByKeyWhateverItHolds() async throws {
        try await PostgresTestDatabase.withStaleStatistics(of: "registration_tags") { database in
            try await Self.fillBench(database, tags: "ARRAY['all', 'group-' || (g % 10)]")
            try await PostgresTestDatabase.expectFewRowsRead(
                database, of: "registration_tags",
                by: "UPDATE herald.registrations SET tags = ARRAY['all', 'moved'] WHERE hub = 'bench' AND id = 'reg-000010000'",
                check: """
                    IF (SELECT array_agg(tag ORDER BY tag) FROM herald.registration_tags
                        WHERE hub = 'bench' AND registration_id = 'reg-000010000') <> ARRAY['all', 'moved'] THEN
                        RAISE EXCEPTION 'the updated row''s entries are not its tags';
                    END IF;
                    """,
                what: "an update of tags")
            try await PostgresTestDatabase.expectFewRowsRead(
                database, of: "registration_tags",
                by: "DELETE FROM herald.registrations WHERE hub = 'bench' AND id = 'reg-000000007'",
                check: """
                    IF EXISTS (SELECT 1 FROM herald.registration_tags WHERE hub = 'bench' AND registration_id = 'reg-000000007') THEN
                        RAISE EXCEPTION 'the deleted row''s entries are still there';
                    END IF;
                    """,
                what: "a delete")
            try await PostgresRegistrationIndexTests.expectInStep(database, hub: "bench")
        }
    }
}
