import Foundation
package import HeraldStore
import PostgresNIO

extension PostgresDatabase {
    /// How many rows of `table` the hub `hub` has.
    package func rowCount(of table: StoreCopy.Table, hub: String) async throws -> Int {
        var statement = SQLStatement()
        statement.sql = "SELECT count(*) AS n FROM herald.\(table.name) WHERE hub = \(statement.bind(hub))"
        let rows = try await run { [statement] connection in try await connection.query(statement.query, logger: self.clientLogger).collect() }
        return try rows.first?.byName.int("n") ?? 0
    }

    /// Inserts rows copied from another store into `table` for the hub `hub`, in one statement;
    /// a row whose key is there already is left as it is. Returns how many were inserted.
    package func insertCopiedRows(_ rows: [[StoreCopy.Value]], into table: StoreCopy.Table, hub: String) async throws -> Int {
        guard !rows.isEmpty else { return 0 }
        var statement = SQLStatement()
        let hubPlaceholder = statement.bind(hub)
        var values: [String] = []
        for row in rows {
            guard row.count == table.columns.count else {
                throw StoreError(code: .corruptData, message: "a row of \(table.name) has \(row.count) values for \(table.columns.count) columns")
            }
            var fields = [hubPlaceholder]
            for (value, column) in zip(row, table.columns) {
                fields.append(try Self.bind(value, as: column.type, column: "\(table.name).\(column.name)", into: &statement))
            }
            values.append("(" + fields.joined(separator: ", ") + ")")
        }
        statement.sql = """
            INSERT INTO herald.\(table.name) (hub, \(table.columnNames.joined(separator: ", "))) \
            VALUES \(values.joined(separator: ", ")) ON CONFLICT DO NOTHING RETURNING 1 AS inserted
            """
        let inserted = try await run { [statement] connection in try await connection.query(statement.query, logger: self.clientLogger).collect() }
        return inserted.count
    }

    /// The placeholder of `value` bound as a column of `type` (with a cast where the bound type
    /// differs).
    private static func bind(_ value: StoreCopy.Value, as type: StoreCopy.ColumnType, column: String, into statement: inout SQLStatement) throws -> String {
        func corrupt() -> StoreError {
            StoreError(code: .corruptData, message: "a value of \(column) cannot be copied")
        }
        switch (type, value) {
        case (.text, .null): return statement.bind(nil as String?)
        case (.bigint, .null): return statement.bind(nil as Int?)
        case (.bytea, .null): return statement.bind(nil as String?) + "::bytea"
        case (.boolean, .null): return statement.bind(nil as String?) + "::boolean"
        case (.jsonb, .null): return statement.bind(nil as String?) + "::jsonb"
        case (.textArray, .null): return statement.bind([String]())
        case (.text, .text(let text)): return statement.bind(text)
        case (.bigint, .integer(let number)): return statement.bind(number)
        case (.bytea, .bytes(let bytes)): return statement.bind(bytes)
        case (.boolean, .integer(let number)): return statement.bind(number != 0)
        case (.jsonb, .text(let json)): return statement.bind(json) + "::jsonb"
        case (.textArray, .text(let json)):
            guard let tags = StoredJSON.decode([String].self, from: json) else { throw corrupt() }
            return statement.bind(tags)
        default:
            throw corrupt()
        }
    }
}
