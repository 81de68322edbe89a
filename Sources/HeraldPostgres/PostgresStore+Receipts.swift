public import Foundation
public import HeraldCore
import HeraldStore
import PostgresNIO

extension PostgresStore {
    /// One statement: the new receipts are inserted and counted, and each notification's count
    /// on each platform goes up by its new receipts. Receipts and counts are written in the
    /// order of their keys, so that two nodes writing the same ones at once wait for each other
    /// instead of deadlocking.
    public func recordReceipts(_ receipts: [Receipt]) async throws -> Int {
        guard !receipts.isEmpty else { return 0 }
        var statement = SQLStatement()
        let hub = statement.bind(self.hub)
        let ids = statement.bind(receipts.map(\.notificationID))
        let devices = statement.bind(receipts.map(\.device))
        let platforms = statement.bind(receipts.map(\.platform.rawValue))
        let at = statement.bind(receipts.map(\.at.storeMilliseconds))
        statement.sql = """
            WITH new AS (
                INSERT INTO herald.receipts (hub, notification_id, device, platform, at)
                SELECT \(hub), r.id, r.device, r.platform, r.at FROM unnest(\(ids), \(devices), \(platforms), \(at)) AS r(id, device, platform, at)
                ORDER BY r.id COLLATE "C", r.device COLLATE "C"
                ON CONFLICT DO NOTHING RETURNING notification_id, platform
            ), counted AS (
                INSERT INTO herald.receipt_counts AS c (hub, notification_id, platform, confirmed)
                SELECT \(hub), notification_id, platform, count(*) FROM new GROUP BY notification_id, platform
                ORDER BY notification_id, platform
                ON CONFLICT (hub, notification_id, platform) DO UPDATE SET confirmed = c.confirmed + EXCLUDED.confirmed
                RETURNING 1
            )
            SELECT count(*)::bigint AS n FROM new
            """
        return try await query(statement).first?.byName.int("n") ?? 0
    }

    public func confirmedCounts(notificationID id: String) async throws -> [Platform: Int] {
        var statement = SQLStatement()
        statement.sql = """
            SELECT platform, confirmed FROM herald.receipt_counts WHERE hub = \(statement.bind(hub)) \
            AND notification_id = \(statement.bind(id))
            """
        var counts: [Platform: Int] = [:]
        for row in try await query(statement) {
            let row = row.byName
            guard let platform = Platform(rawValue: try row.string("platform")) else { continue }
            let confirmed = try row.int("confirmed")
            if confirmed > 0 { counts[platform] = confirmed }
        }
        return counts
    }

    public func forgetReceipts(before date: Date) async throws -> Int {
        var statement = SQLStatement()
        // Any node may sweep: a row another node deleted first is simply not there.
        statement.sql = """
            WITH gone AS (DELETE FROM herald.receipts WHERE hub = \(statement.bind(hub)) AND at < \(statement.bind(date)) RETURNING 1)
            SELECT count(*)::bigint AS n FROM gone
            """
        return try await query(statement).first?.byName.int("n") ?? 0
    }
}
