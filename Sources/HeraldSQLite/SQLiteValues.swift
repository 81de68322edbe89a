import VaporCSQLite

/// A value bound to a statement or read from a row: SQLite's five storage classes.
enum SQLiteData: Sendable, Equatable {
    case integer(Int)
    case float(Double)
    case text(String)
    case blob([UInt8])
    case null

    /// The value as an integer, converting a real number or a numeric text; `nil` for a blob or NULL.
    var integer: Int? {
        switch self {
        case .integer(let value): value
        case .float(let value): Int(exactly: value.rounded(.towardZero))
        case .text(let value): Int(value)
        case .blob, .null: nil
        }
    }

    /// The value as text, converting a number; `nil` for a blob or NULL.
    var string: String? {
        switch self {
        case .integer(let value): String(value)
        case .float(let value): String(value)
        case .text(let value): value
        case .blob, .null: nil
        }
    }
}

/// The names of a statement's result columns, shared by every row it returns.
final class SQLiteColumns: Sendable {
    let names: [String]
    private let indexes: [String: Int]

    init(names: [String]) {
        self.names = names
        var indexes: [String: Int] = [:]
        indexes.reserveCapacity(names.count)
        // The first of two columns with one name wins, as in SQLite's own lookups.
        for (index, name) in names.enumerated() where indexes[name] == nil {
            indexes[name] = index
        }
        self.indexes = indexes
    }

    func index(of name: String) -> Int? { indexes[name] }
}

/// One result row.
struct SQLiteRow: Sendable {
    let columns: SQLiteColumns
    /// The row's values, in the order of `columns.names`.
    let values: [SQLiteData]

    /// The value of the column named `name`, or `nil` if the result has no such column.
    func column(_ name: String) -> SQLiteData? {
        columns.index(of: name).map { values[$0] }
    }
}

/// A failed SQLite call: its extended result code and SQLite's message (which names tables and
/// constraints, never bound values).
struct SQLiteError: Error, CustomStringConvertible {
    /// The extended result code (`SQLITE_BUSY_TIMEOUT`, `SQLITE_CONSTRAINT_UNIQUE`, …).
    var code: Int32
    var message: String

    /// The primary result code (`SQLITE_BUSY`, `SQLITE_FULL`, …).
    var primaryCode: Int32 { code & 0xFF }

    /// The database is locked by another connection or transaction: worth trying again.
    var isBusy: Bool { primaryCode == SQLITE_BUSY || primaryCode == SQLITE_LOCKED }

    /// The disk (or the database's size limit) is full.
    var isFull: Bool { primaryCode == SQLITE_FULL }

    /// SQLite's short English name of the code ("database is locked", "constraint failed").
    var reason: String {
        sqlite_nio_sqlite3_errstr(code).map { String(cString: $0) } ?? "error \(code)"
    }

    var description: String { "\(reason) (\(code)): \(message)" }
}
