import Foundation
import HeraldCore
import HeraldStore

/// A JSON document kept in one of the hub storage's shared values: every node reads the same
/// one, and a change is a compare-and-set, tried again when another process changed the
/// document first, so no change is lost.
struct SharedDocument<Value: Codable & Sendable>: Sendable {
    let storage: any HubStorage
    let name: String
    let empty: Value

    /// The document as stored now (`empty` before the first change).
    func read() async throws -> Value {
        try decode(try await storage.sharedValue(named: name))
    }

    /// Applies `change` to the stored document and stores the result, and returns what
    /// `change` returned. A change that leaves the document as it was writes nothing.
    func update<Result: Sendable>(_ change: (inout Value) throws -> Result) async throws -> Result {
        var stored = try await storage.sharedValue(named: name)
        while true {
            var value = try decode(stored)
            let result = try change(&value)
            let encoded = try encode(value)
            let unchanged = try encoded == stored || (stored == nil && encoded == encode(empty))
            if unchanged { return result }
            let now = try await storage.replaceSharedValue(named: name, expected: stored, with: encoded)
            if now == encoded { return result }
            stored = now
        }
    }

    private func decode(_ text: String?) throws -> Value {
        guard let text else { return empty }
        do {
            return try JSONDecoder.sharedDocument().decode(Value.self, from: Data(text.utf8))
        } catch {
            throw HeraldError(code: .internalError, message: "the shared value \(name) in \(storage.location) is damaged")
        }
    }

    private func encode(_ value: Value) throws -> String {
        String(decoding: try JSONEncoder.sharedDocument().encode(value), as: UTF8.self)
    }
}

extension JSONEncoder {
    /// Sorted keys and ISO 8601 dates: the same value always encodes to the same text.
    fileprivate static func sharedDocument() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }
}
extension JSONDecoder {
    fileprivate static func sharedDocument() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}
