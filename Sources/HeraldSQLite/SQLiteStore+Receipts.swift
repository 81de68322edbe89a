public import Foundation
public import HeraldCore
import HeraldStore

extension SQLiteStore {
    public func recordReceipts(_ receipts: [Receipt]) async throws -> Int {
        guard !receipts.isEmpty else { return 0 }
        var binds: [SQLiteData] = []
        binds.reserveCapacity(receipts.count * 4)
        for receipt in receipts {
            binds += [.text(receipt.notificationID), .text(receipt.device), .text(receipt.platform.rawValue), SQLiteData(receipt.at)]
        }
        let rows = Array(repeating: "(?, ?, ?, ?)", count: receipts.count).joined(separator: ", ")
        return try await write { [binds] connection in
            // A repeat (of a stored receipt, or within `receipts`) is not inserted, and not returned.
            let new = try await connection.query(
                "INSERT INTO receipts (notification_id, device, platform, at) VALUES \(rows) ON CONFLICT DO NOTHING RETURNING notification_id, platform",
                binds
            )
            var added: [String: [String: Int]] = [:]
            for row in new {
                guard let id = row.column("notification_id")?.string, let platform = row.column("platform")?.string else { continue }
                added[id, default: [:]][platform, default: 0] += 1
            }
            for (id, platforms) in added {
                for (platform, count) in platforms {
                    _ = try await connection.query(
                        """
                        INSERT INTO receipt_counts (notification_id, platform, confirmed) VALUES (?, ?, ?)
                        ON CONFLICT (notification_id, platform) DO UPDATE SET confirmed = confirmed + excluded.confirmed
                        """,
                        [.text(id), .text(platform), .integer(count)]
                    )
                }
            }
            return new.count
        }
    }

    public func confirmedCounts(notificationID id: String) async throws -> [Platform: Int] {
        let rows = try await read { connection in
            try await connection.query("SELECT platform, confirmed FROM receipt_counts WHERE notification_id = ?", [.text(id)])
        }
        var counts: [Platform: Int] = [:]
        for row in rows {
            guard let platform = row.column("platform")?.string.flatMap(Platform.init(rawValue:)),
                let confirmed = row.column("confirmed")?.integer, confirmed > 0
            else { continue }
            counts[platform] = confirmed
        }
        return counts
    }

    public func forgetReceipts(before date: Date) async throws -> Int {
        let rows = try await write { connection in
            try await connection.query("DELETE FROM receipts WHERE at < ? RETURNING 1", [SQLiteData(date)])
        }
        return rows.count
    }
}
