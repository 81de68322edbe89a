import Foundation
import HeraldCore
import HeraldStore
import NIOCore

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

extension SQLiteRow: StoredRow {
    private func corruptColumn(_ column: String) -> StoreError {
        corrupt("the stored column '\(column)' is missing or has the wrong type")
    }

    package func string(_ column: String) throws(StoreError) -> String {
        guard case .text(let value) = self.column(column) else { throw corruptColumn(column) }
        return value
    }

    package func optionalString(_ column: String) throws(StoreError) -> String? {
        switch self.column(column) {
        case .text(let value): return value
        case .null: return nil
        default: throw corruptColumn(column)
        }
    }

    package func int(_ column: String) throws(StoreError) -> Int {
        guard case .integer(let value) = self.column(column) else { throw corruptColumn(column) }
        return value
    }

    package func optionalInt(_ column: String) throws(StoreError) -> Int? {
        switch self.column(column) {
        case .integer(let value): return value
        case .null: return nil
        default: throw corruptColumn(column)
        }
    }

    /// A boolean, kept as an integer.
    package func bool(_ column: String) throws(StoreError) -> Bool {
        try int(column) != 0
    }

    package func bytes(_ column: String) throws(StoreError) -> Data {
        guard case .blob(let bytes) = self.column(column) else { throw corruptColumn(column) }
        return Data(bytes)
    }

    /// Tags, kept as a JSON array of strings. Every resolution page decodes one per row, so
    /// the form the store writes (no whitespace, no escapes) is read directly; anything else
    /// goes through `JSONDecoder`.
    package func tags(_ column: String) throws(StoreError) -> [String] {
        let text = try string(column)
        if let strings = PlainJSONStrings.parse(text) { return strings }
        return try json([String].self, column)
    }
}
