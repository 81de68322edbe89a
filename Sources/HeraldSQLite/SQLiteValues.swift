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
///
/// Rows are read by column name, about fifteen names per row of a delivery page, so the
/// lookup avoids `Hasher`: names go into a small open-addressing table by a hash of their
/// length and three of their bytes, and a lookup compares the name it lands on.
final class SQLiteColumns: Sendable {
    let names: [String]
    /// For each slot, the index of the column that hashes there plus one; 0 for none.
    private let slots: [Int]
    private let mask: Int

    init(names: [String]) {
        self.names = names
        var size = 8
        while size < names.count * 4 { size *= 2 }
        mask = size - 1
        var slots = [Int](repeating: 0, count: size)
        for (index, name) in names.enumerated() {
            var slot = Self.hash(name) & mask
            // The first of two columns with one name wins, as in SQLite's own lookups.
            while slots[slot] != 0, names[slots[slot] - 1] != name { slot = (slot + 1) & mask }
            if slots[slot] == 0 { slots[slot] = index + 1 }
        }
        self.slots = slots
    }

    /// The index of the first column named `name`, or `nil` if the result has none.
    func index(of name: String) -> Int? {
        var slot = Self.hash(name) & mask
        while true {
            let entry = slots[slot]
            guard entry != 0 else { return nil }
            if names[entry - 1] == name { return entry - 1 }
            slot = (slot + 1) & mask
        }
    }

    private static func hash(_ name: String) -> Int {
        let utf8 = name.utf8
        let count = utf8.count
        guard count > 0 else { return 0 }
        let first = Int(utf8[utf8.startIndex])
        let middle = Int(utf8[utf8.index(utf8.startIndex, offsetBy: count / 2)])
        let last = Int(utf8[utf8.index(before: utf8.endIndex)])
        return count &* 0x9E37 &+ first &* 0x3B9 &+ middle &* 0x61 &+ last &* 0x1F
    }
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
