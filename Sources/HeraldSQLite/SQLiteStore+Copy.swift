import Foundation
package import HeraldStore
import NIOCore

extension SQLiteStore {
    /// How many rows `table` has, for progress.
    package func rowCount(of table: StoreCopy.Table) async throws -> Int {
        let rows = try await read { connection in try await connection.query("SELECT count(*) AS n FROM \(table.name)") }
        return rows.first?.column("n")?.integer ?? 0
    }

    /// Up to `limit` rows of `table` in its key's order, after the row whose key is `key`
    /// (from the start when `nil`), with the table's columns in order.
    package func copyRows(of table: StoreCopy.Table, after key: [StoreCopy.Value]?, limit: Int) async throws -> [[StoreCopy.Value]] {
        var sql = "SELECT \(table.columnNames.joined(separator: ", ")) FROM \(table.name)"
        var binds: [SQLiteData] = []
        if let key {
            sql += " WHERE (\(table.key.joined(separator: ", "))) > (\(TagConditionSQL.placeholders(key.count)))"
            binds = key.map(Self.sqliteData)
        }
        sql += " ORDER BY \(table.key.joined(separator: ", ")) LIMIT ?"
        binds.append(.integer(limit))
        let rows = try await read { [sql, binds] connection in try await connection.query(sql, binds) }
        return rows.map { row in
            table.columnNames.map { name in Self.copyValue(row.column(name) ?? .null) }
        }
    }

    private static func copyValue(_ data: SQLiteData) -> StoreCopy.Value {
        switch data {
        case .null: .null
        case .integer(let value): .integer(value)
        case .float(let value): .integer(Int(value))
        case .text(let value): .text(value)
        case .blob(let buffer): .bytes(Data(buffer))
        }
    }

    private static func sqliteData(_ value: StoreCopy.Value) -> SQLiteData {
        switch value {
        case .null: .null
        case .integer(let value): .integer(value)
        case .text(let value): .text(value)
        case .bytes(let value): .blob(Array(value))
        }
    }
}
