/// Reading a ``JSONValue`` straight from UTF-8 bytes (RFC 8259), without `Codable`.
///
/// `JSONDecoder` reaches a value of unknown shape only by asking for each shape in turn, and
/// every refused guess throws: a string costs four thrown errors. Request bodies, payloads and
/// stored documents are read on every request, so they are read here in one pass instead. What
/// is accepted is what `JSONDecoder` accepts (no comments, no leading zeros, numbers a `Double`
/// can hold, valid UTF-8, paired surrogates, nesting up to ``maximumDepth``, and as it does, a
/// comma after the last item of an array or object), and the value is the same: numbers as
/// `Double`, an object's members sorted by key, the first of a repeated key kept.
extension JSONValue {
    /// A reason the bytes are not one JSON value, and where.
    public struct SyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
        /// What is wrong.
        public var reason: String
        /// The offset of the byte where it was found.
        public var offset: Int

        public init(reason: String, offset: Int) {
            self.reason = reason
            self.offset = offset
        }

        public var description: String { "\(reason) at byte \(offset)" }
    }

    /// How deeply arrays and objects may nest (as `JSONDecoder`'s limit).
    public static let maximumDepth = 512

    /// Reads one JSON value from `bytes`, with whitespace around it and nothing else.
    public init(parsing bytes: some Collection<UInt8>) throws(SyntaxError) {
        let parsed = bytes.withContiguousStorageIfAvailable { buffer in Result { () throws(SyntaxError) in try Self.parse(buffer) } }
        if let parsed {
            self = try parsed.get()
        } else {
            let copy = Array(bytes)
            self = try copy.withUnsafeBufferPointer { buffer throws(SyntaxError) in try Self.parse(buffer) }
        }
    }

    /// Reads one JSON value from `text`.
    public init(parsing text: String) throws(SyntaxError) {
        try self.init(parsing: text.utf8)
    }

    private static func parse(_ buffer: UnsafeBufferPointer<UInt8>) throws(SyntaxError) -> JSONValue {
        var reader = JSONReader(bytes: buffer)
        reader.skipWhitespace()
        let value = try reader.value(depth: 0)
        reader.skipWhitespace()
        guard reader.index == buffer.count else { throw reader.error("unexpected text after the value") }
        return value
    }
}

/// One pass over the bytes of a JSON text.
private struct JSONReader {
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0

    init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    func error(_ reason: String, at offset: Int? = nil) -> JSONValue.SyntaxError {
        JSONValue.SyntaxError(reason: reason, offset: offset ?? index)
    }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"): index += 1
            default: return
            }
        }
    }

    mutating func value(depth: Int) throws(JSONValue.SyntaxError) -> JSONValue {
        guard index < bytes.count else { throw error("unexpected end of the text") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try object(depth: depth + 1)
        case UInt8(ascii: "["): return try array(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"):
            try literal("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try literal("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try literal("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default: throw error("unexpected character")
        }
    }

    private mutating func literal(_ word: StaticString) throws(JSONValue.SyntaxError) {
        let count = word.utf8CodeUnitCount
        guard bytes.count - index >= count,
            UnsafeBufferPointer(rebasing: bytes[index..<index + count]).elementsEqual(UnsafeBufferPointer(start: word.utf8Start, count: count))
        else { throw error("unexpected character") }
        index += count
    }

    private mutating func object(depth: Int) throws(JSONValue.SyntaxError) -> JSONValue {
        guard depth <= JSONValue.maximumDepth else { throw error("too deeply nested") }
        index += 1
        skipWhitespace()
        if skip(UInt8(ascii: "}")) { return .object([]) }
        var members: [(key: String, value: JSONValue)] = []
        repeat {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a member name in quotes") }
            let key = try string()
            skipWhitespace()
            guard skip(UInt8(ascii: ":")) else { throw error("expected ':' after a member name") }
            skipWhitespace()
            members.append((key, try value(depth: depth)))
        } while try !closes(with: UInt8(ascii: "}"), in: "an object")
        return .object(Self.sortedKeepingFirst(members))
    }

    /// Whether the byte at `index` is `byte`; if so, `index` moves past it.
    private mutating func skip(_ byte: UInt8) -> Bool {
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    /// After an item of an array or an object: true when `close` ends it (also after a comma,
    /// as `JSONDecoder` reads it), false when a comma is followed by another item.
    private mutating func closes(with close: UInt8, in container: String) throws(JSONValue.SyntaxError) -> Bool {
        skipWhitespace()
        guard index < bytes.count else { throw error("unexpected end of the text") }
        if skip(UInt8(ascii: ",")) {
            skipWhitespace()
            return skip(close)
        }
        guard skip(close) else { throw error("expected ',' or '\(Character(Unicode.Scalar(close)))' in \(container)") }
        return true
    }

    /// `members` sorted by key (as the `Codable` decoding sorts them), a repeated key once, with
    /// its first value.
    private static func sortedKeepingFirst(_ members: [(key: String, value: JSONValue)]) -> [(key: String, value: JSONValue)] {
        guard members.count > 1 else { return members }
        // Sorted by key and then by place, the first of each run of a key is the one written first.
        let sorted = members.enumerated().sorted { $0.element.key < $1.element.key || ($0.element.key == $1.element.key && $0.offset < $1.offset) }
        var result: [(key: String, value: JSONValue)] = []
        result.reserveCapacity(sorted.count)
        for (_, member) in sorted where result.last?.key != member.key {
            result.append(member)
        }
        return result
    }

    private mutating func array(depth: Int) throws(JSONValue.SyntaxError) -> JSONValue {
        guard depth <= JSONValue.maximumDepth else { throw error("too deeply nested") }
        index += 1
        skipWhitespace()
        if skip(UInt8(ascii: "]")) { return .array([]) }
        var items: [JSONValue] = []
        repeat {
            skipWhitespace()
            items.append(try value(depth: depth))
        } while try !closes(with: UInt8(ascii: "]"), in: "an array")
        return .array(items)
    }

    /// A string from its opening quote through its closing one.
    private mutating func string() throws(JSONValue.SyntaxError) -> String {
        let start = index
        index += 1
        let contentStart = index
        // Most strings have no escape: their bytes are the string's, once validated as UTF-8.
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let text = try Self.validated(UnsafeBufferPointer(rebasing: bytes[contentStart..<index]), at: contentStart)
                index += 1
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            guard byte >= 0x20 else { throw error("a control character in a string must be escaped") }
            index += 1
        }
        guard index < bytes.count else { throw error("a string is not closed", at: start) }
        var decoded = Array(UnsafeBufferPointer(rebasing: bytes[contentStart..<index]))
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return try decoded.withUnsafeBufferPointer { buffer throws(JSONValue.SyntaxError) in try Self.validated(buffer, at: contentStart) }
            case UInt8(ascii: "\\"):
                try escape(into: &decoded)
            default:
                guard byte >= 0x20 else { throw error("a control character in a string must be escaped") }
                decoded.append(byte)
                index += 1
            }
        }
        throw error("a string is not closed", at: start)
    }

    private static func validated(_ utf8: UnsafeBufferPointer<UInt8>, at offset: Int) throws(JSONValue.SyntaxError) -> String {
        guard let text = String(validating: utf8, as: UTF8.self) else {
            throw JSONValue.SyntaxError(reason: "a string is not valid UTF-8", offset: offset)
        }
        return text
    }

    /// One escape sequence, from its backslash, appended as UTF-8.
    private mutating func escape(into decoded: inout [UInt8]) throws(JSONValue.SyntaxError) {
        let start = index
        do {
            try JSONEscape.decode(bytes, at: &index, into: &decoded)
        } catch {
            throw self.error(error.reason, at: start)
        }
    }

    /// A number, checked against the grammar and read as the nearest `Double`.
    private mutating func number() throws(JSONValue.SyntaxError) -> Double {
        let start = index
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, isDigit(bytes[index]) else { throw error("a number needs a digit", at: start) }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < bytes.count, isDigit(bytes[index]) { throw error("a number has no leading zero", at: start) }
        } else {
            skipDigits()
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw error("a number needs a digit after its '.'", at: start) }
            skipDigits()
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { throw error("a number needs a digit in its exponent", at: start) }
            skipDigits()
        }
        let text = UnsafeBufferPointer(rebasing: bytes[start..<index])
        guard let number = Double(String(decoding: text, as: UTF8.self)), number.isFinite else {
            throw error("a number out of range", at: start)
        }
        // One that only rounds to zero is out of range too.
        if number == 0, let nonzero = text.firstIndex(where: { $0 >= UInt8(ascii: "1") && $0 <= UInt8(ascii: "9") }),
            nonzero < (text.firstIndex(where: { $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }) ?? text.count)
        {
            throw error("a number out of range", at: start)
        }
        return number
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    private mutating func skipDigits() {
        while index < bytes.count, isDigit(bytes[index]) { index += 1 }
    }
}
