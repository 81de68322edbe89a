import Foundation
import HeraldCore
import SQLiteNIO
import HeraldStore

extension SQLiteData {
    init(_ string: String?) {
        self = string.map { .text($0) } ?? .null
    }

    init(_ integer: Int?) {
        self = integer.map { .integer($0) } ?? .null
    }

    init(_ date: Date?) {
        self = date.map { .integer($0.storeMilliseconds) } ?? .null
    }
}

extension SQLiteRow {
    private func corrupt(_ column: String) -> SQLiteStoreError {
        SQLiteStoreError(code: .corruptData, message: "the stored column '\(column)' is missing or has the wrong type")
    }

    func string(_ column: String) throws(SQLiteStoreError) -> String {
        guard case .text(let value) = self.column(column) else { throw corrupt(column) }
        return value
    }

    func optionalString(_ column: String) throws(SQLiteStoreError) -> String? {
        switch self.column(column) {
        case .text(let value): return value
        case .null: return nil
        default: throw corrupt(column)
        }
    }

    func int(_ column: String) throws(SQLiteStoreError) -> Int {
        guard case .integer(let value) = self.column(column) else { throw corrupt(column) }
        return value
    }

    func optionalInt(_ column: String) throws(SQLiteStoreError) -> Int? {
        switch self.column(column) {
        case .integer(let value): return value
        case .null: return nil
        default: throw corrupt(column)
        }
    }

    func date(_ column: String) throws(SQLiteStoreError) -> Date {
        Date(storeMilliseconds: try int(column))
    }

    func optionalDate(_ column: String) throws(SQLiteStoreError) -> Date? {
        try optionalInt(column).map(Date.init(storeMilliseconds:))
    }

    /// Decodes a column holding a JSON array of strings (tags). Every resolution page decodes
    /// one per row, so the form the store writes (no whitespace, no escapes) is read directly;
    /// anything else goes through `JSONDecoder`.
    func jsonStrings(_ column: String) throws(SQLiteStoreError) -> [String] {
        let text = try string(column)
        if let strings = PlainJSONStrings.parse(text) { return strings }
        return try json([String].self, column)
    }

    /// Decodes a JSON column that may be `NULL`.
    func optionalJSON<T: Decodable>(_ type: T.Type, _ column: String) throws(SQLiteStoreError) -> T? {
        if case .null? = self.column(column) { return nil }
        return try json(type, column)
    }

    /// Decodes a JSON column.
    func json<T: Decodable>(_ type: T.Type, _ column: String) throws(SQLiteStoreError) -> T {
        let text = try string(column)
        guard let value = StoredJSON.decode(T.self, from: text) else {
            throw SQLiteStoreError(code: .corruptData, message: "the stored column '\(column)' is not valid JSON")
        }
        return value
    }
}
