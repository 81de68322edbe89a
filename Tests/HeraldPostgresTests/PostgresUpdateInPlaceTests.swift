import Foundation
import HeraldPostgres
import Testing

/// Rows written again keep their indexed columns, and their pages keep room for the new
/// versions: an update then adds no index entry (a HOT update).
@Suite("PostgreSQL updates in place", .enabled(if: PostgresTestDatabase.isConfigured, PostgresTestDatabase.skipReason))
struct PostgresUpdateInPlaceTests {
    /// 2,000 registrations and installations written, then 200 of each written again as a
    /// device's or an installation's `PUT` writes them, in one transaction: at least nine in
    /// ten updates stay on their page (on full pages, almost none did).
    @Test func rowsWrittenAgainStayOnTheirPage() async throws {
        try await PostgresTestDatabase.with { database async throws in
            let hub = PostgresTestDatabase.uniqueHubName()
            try await database.execute(
                unsafeSQL: """
                    DO $$
                    DECLARE
                        updated bigint;
                        in_place bigint;
                    BEGIN
                        INSERT INTO herald.registrations (hub, id, platform, handle, version, created_at, updated_at, tags, installation_id)
                        SELECT '\(hub)', 'reg-' || g, 'apns', md5(g::text) || md5(g::text), 1, 0, 0, ARRAY['all'], 'inst-' || g
                        FROM generate_series(1, 2000) AS g;
                        INSERT INTO herald.installations (hub, id, user_id, tags, document, version, created_at, updated_at)
                        SELECT '\(hub)', 'inst-' || g, 'user-' || g, ARRAY['all'], '{"platform": "apns"}', 1, 0, 0
                        FROM generate_series(1, 2000) AS g;
                        UPDATE herald.registrations SET handle = handle, installation_id = installation_id,
                            version = version + 1, updated_at = 1
                        WHERE hub = '\(hub)' AND id IN (SELECT 'reg-' || (g * 10) FROM generate_series(1, 200) AS g);
                        UPDATE herald.installations SET user_id = user_id, document = '{"platform": "apns", "again": true}',
                            version = version + 1, updated_at = 1
                        WHERE hub = '\(hub)' AND id IN (SELECT 'inst-' || (g * 10) FROM generate_series(1, 200) AS g);
                        SELECT n_tup_upd, n_tup_hot_upd INTO updated, in_place FROM pg_stat_xact_user_tables
                        WHERE relid = 'herald.registrations'::regclass;
                        IF updated <> 200 OR in_place < 180 THEN
                            RAISE EXCEPTION 'registrations: % of % updates stayed on their page', in_place, updated;
                        END IF;
                        SELECT n_tup_upd, n_tup_hot_upd INTO updated, in_place FROM pg_stat_xact_user_tables
                        WHERE relid = 'herald.installations'::regclass;
                        IF updated <> 200 OR in_place < 180 THEN
                            RAISE EXCEPTION 'installations: % of % updates stayed on their page', in_place, updated;
                        END IF;
                        DELETE FROM herald.registrations WHERE hub = '\(hub)';
                        DELETE FROM herald.installations WHERE hub = '\(hub)';
                    END
                    $$
                    """)
        }
    }
}
