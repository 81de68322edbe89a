extension NotificationTemplate {
    /// The deepest nesting of objects and arrays a JSON template may have.
    static let maxJSONDepth = 64

    /// Checks a JSON body (RFC 8259) and compiles it: the text between string values is
    /// copied as written (so key order, spacing and number spelling are kept), and each
    /// string value that holds expressions becomes segments. Keys are never evaluated.
    struct JSONCompiler {
        private let bytes: [UInt8]
        private var index = 0
        /// Where the raw text not yet handed to the builder starts.
        private var rawStart = 0
        private var builder = ProgramBuilder()

        init(body: String) {
            bytes = Array(body.utf8)
        }

        mutating func compile() throws(HeraldError) -> Program {
            skipSpace()
            // Leading whitespace is dropped from the output; it means nothing in JSON.
            rawStart = index
            try parseValue(depth: 0)
            skipSpace()
            if index < bytes.count {
                throw malformed("unexpected \(describe(index)) after the end of the JSON document", at: index)
            }
            builder.raw(String(decoding: bytes[rawStart...], as: UTF8.self))
            return builder.finish()
        }

        // MARK: Grammar

        private mutating func parseValue(depth: Int) throws(HeraldError) {
            guard index < bytes.count else { throw malformed("the document ends where a value was expected", at: index) }
            switch bytes[index] {
            case UInt8(ascii: "{"): try parseObject(depth: depth + 1)
            case UInt8(ascii: "["): try parseArray(depth: depth + 1)
            case UInt8(ascii: "\""): try parseString(isKey: false)
            case UInt8(ascii: "t"): try parseWord("true")
            case UInt8(ascii: "f"): try parseWord("false")
            case UInt8(ascii: "n"): try parseWord("null")
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try parseNumber()
            default:
                throw malformed(
                    "expected a value (an object, array, string, number, true, false or null), found \(describe(index))",
                    at: index
                )
            }
        }

        private mutating func parseObject(depth: Int) throws(HeraldError) {
            try checkDepth(depth)
            index += 1
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
                return
            }
            while true {
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                    throw malformed("expected a member name in double quotes, found \(describe(index))", at: index)
                }
                try parseString(isKey: true)
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else {
                    throw malformed("expected ':' after a member name, found \(describe(index))", at: index)
                }
                index += 1
                skipSpace()
                try parseValue(depth: depth)
                skipSpace()
                guard index < bytes.count else { throw malformed("the object is not closed with '}'", at: index) }
                if bytes[index] == UInt8(ascii: "}") {
                    index += 1
                    return
                }
                guard bytes[index] == UInt8(ascii: ",") else {
                    throw malformed("expected ',' or '}' after an object member, found \(describe(index))", at: index)
                }
                index += 1
                skipSpace()
            }
        }

        private mutating func parseArray(depth: Int) throws(HeraldError) {
            try checkDepth(depth)
            index += 1
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                index += 1
                return
            }
            while true {
                try parseValue(depth: depth)
                skipSpace()
                guard index < bytes.count else { throw malformed("the array is not closed with ']'", at: index) }
                if bytes[index] == UInt8(ascii: "]") {
                    index += 1
                    return
                }
                guard bytes[index] == UInt8(ascii: ",") else {
                    throw malformed("expected ',' or ']' after an array element, found \(describe(index))", at: index)
                }
                index += 1
                skipSpace()
            }
        }

        private func checkDepth(_ depth: Int) throws(HeraldError) {
            guard depth <= NotificationTemplate.maxJSONDepth else {
                throw malformed(
                    "objects and arrays are nested more than \(NotificationTemplate.maxJSONDepth) levels deep",
                    at: index
                )
            }
        }

        private mutating func parseWord(_ word: StaticString) throws(HeraldError) {
            let expected = UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
            guard bytes.count - index >= expected.count, bytes[index..<index + expected.count].elementsEqual(expected)
            else {
                throw malformed("expected '\(word)', found \(describe(index))", at: index)
            }
            index += expected.count
        }

        private mutating func parseNumber() throws(HeraldError) {
            let start = index
            func digits() -> Int {
                var count = 0
                while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
                    index += 1
                    count += 1
                }
                return count
            }
            if bytes[index] == UInt8(ascii: "-") { index += 1 }
            if index < bytes.count, bytes[index] == UInt8(ascii: "0") {
                index += 1
            } else if digits() == 0 {
                throw malformed("a number needs digits after '-'", at: start)
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                guard digits() > 0 else { throw malformed("a number needs digits after '.'", at: start) }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                    index += 1
                }
                guard digits() > 0 else { throw malformed("a number needs digits in its exponent", at: start) }
            }
        }

        /// Parses the string at `index` (its opening quote); a value with expressions is
        /// handed to the builder.
        private mutating func parseString(isKey: Bool) throws(HeraldError) {
            let start = index
            index += 1
            var decoded: [UInt8]?  // only built when the string has escapes
            var segmentStart = index
            while true {
                guard index < bytes.count else { throw malformed("the string is not closed with '\"'", at: start) }
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") { break }
                if byte < 0x20 {
                    throw malformed(
                        "a control character (U+\(hex4(UInt32(byte)))) must be escaped inside a string",
                        at: index
                    )
                }
                if byte == UInt8(ascii: "\\") {
                    if decoded == nil { decoded = [] }
                    decoded!.append(contentsOf: bytes[segmentStart..<index])
                    try decodeEscape(into: &decoded!)
                    segmentStart = index
                    continue
                }
                index += 1
            }
            let end = index  // the closing quote
            index += 1
            guard !isKey else { return }

            let value: String
            if var decoded {
                decoded.append(contentsOf: bytes[segmentStart..<end])
                value = String(decoding: decoded, as: UTF8.self)
            } else {
                value = String(decoding: bytes[start + 1..<end], as: UTF8.self)
            }
            let parsed: ParsedValue
            do {
                parsed = try NotificationTemplate.parseValue(value)
            } catch {
                throw HeraldError.badRequest(
                    error.message("in the JSON string value at \(NotificationTemplate.location(ofByte: start, in: bytes))")
                )
            }
            guard parsed.hasExpressions else { return }

            builder.raw(String(decoding: bytes[rawStart..<start], as: UTF8.self))
            rawStart = index
            if parsed.parts.count == 1, case .expression(.numeric, let name) = parsed.parts[0] {
                builder.jsonNumber(name)
            } else {
                builder.raw("\"")
                builder.value(parsed.parts, escaping: .jsonString)
                builder.raw("\"")
            }
        }

        /// Decodes the escape at `index` (its backslash) into `output`.
        private mutating func decodeEscape(into output: inout [UInt8]) throws(HeraldError) {
            let start = index
            do {
                try JSONEscape.decode(bytes, at: &index, into: &output)
            } catch {
                throw malformed(error.reason, at: start)
            }
        }

        // MARK: Helpers

        private mutating func skipSpace() {
            while index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"): index += 1
                default: return
                }
            }
        }

        private func describe(_ index: Int) -> String {
            guard index < bytes.count else { return "the end of the body" }
            var end = index + 1
            while end < bytes.count, bytes[end] & 0xC0 == 0x80 { end += 1 }
            let character = String(decoding: bytes[index..<end], as: UTF8.self)
            return character == "'" ? "\"'\"" : "'\(character)'"
        }

        private func hex4(_ value: UInt32) -> String {
            let digits = String(value, radix: 16, uppercase: true)
            return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
        }

        private func malformed(_ reason: String, at offset: Int) -> HeraldError {
            .badRequest(
                "The JSON template body is malformed at \(NotificationTemplate.location(ofByte: offset, in: bytes)): \(reason)."
            )
        }
    }
}
