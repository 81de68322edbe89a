extension NotificationTemplate {
    /// What an expression does with its property's value.
    enum Function: Sendable, Hashable {
        /// `$(p)`: the value.
        case value
        /// `$(p,n)`: the value clipped to `n` characters.
        case clip(Int)
        /// `.(p,n)`: the value clipped to `n` characters, the last three of them `...` when
        /// anything was cut (see ``NotificationTemplate/ellipsized(_:to:)``).
        case ellipsis(Int)
        /// `%(p)`: the value URI-encoded.
        case uriEncoded
        /// `#(p)`: a bare JSON number when it is a whole JSON string value and the value is a
        /// number; the value otherwise.
        case numeric
    }

    /// A piece of a parsed value: literal text, or an expression on a property.
    enum ValuePart: Sendable, Hashable {
        case text(String)
        /// `name` as written in the template (its case may differ from the properties').
        case expression(Function, name: String)
    }

    /// The outcome of parsing one value: its parts, and whether it holds any expression or
    /// concatenation block (when it does not, the value is copied as written).
    struct ParsedValue: Sendable, Hashable {
        var parts: [ValuePart]
        var hasExpressions: Bool
    }

    /// Why an expression is malformed: the expression as written, and what is wrong with it.
    struct ExpressionError: Error, Hashable, Sendable {
        /// The expression's text, shortened when long.
        var expression: String
        /// A sentence fragment such as `a property name is missing`.
        var reason: String
        /// Where the expression starts, in characters from the start of the value.
        var characterOffset: Int

        /// `the expression "$(a b)" …: reason`, completed by `place` (`in the JSON string
        /// value at line 1, column 9`).
        func message(_ place: String) -> String {
            "The template has an invalid expression \"\(expression)\" \(place): \(reason)."
        }
    }

    /// The longest property name, in characters (the cloud hub's limit).
    static let maxPropertyNameLength = 120
    /// The largest length an expression may clip to.
    static let maxClipLength = 999_999_999

    /// Parses the expressions in one value (a JSON string value, an XML text or attribute
    /// value, a header value), already unescaped from its document.
    ///
    /// The rules:
    /// - `$(`, `%(`, `.(` and `#(` always start an expression; one that is malformed is an
    ///   error, never literal text. A `$`, `%`, `.` or `#` not followed by `(` is text.
    /// - `{` starts a concatenation block only when a whole block parses from there:
    ///   `{` operand (`+` operand)* `}`, where an operand is an expression or a literal
    ///   (`'…'` or `"…"`, with the quote doubled inside to stand for itself) and whitespace may
    ///   surround operands and `+`. Otherwise the `{` is text (so embedded JSON such as
    ///   `{"a":1}` stays as written).
    /// - Quotes outside a block are text.
    /// - Inside a block `#(p)` gives the value as a string, like `$(p)`.
    static func parseValue(_ text: String) throws(ExpressionError) -> ParsedValue {
        // The fast path: without `(` and `{` there is neither an expression nor a block.
        guard text.utf8.contains(UInt8(ascii: "(")) || text.utf8.contains(UInt8(ascii: "{")) else {
            return ParsedValue(parts: [.text(text)], hasExpressions: false)
        }
        var parser = ValueParser(bytes: Array(text.utf8))
        return try parser.parse()
    }
}

/// Parses a value's bytes. All syntax is ASCII, and UTF-8 never uses ASCII bytes inside a
/// multi-byte character, so scanning bytes is safe.
private struct ValueParser {
    typealias Function = NotificationTemplate.Function
    typealias ValuePart = NotificationTemplate.ValuePart
    typealias ExpressionError = NotificationTemplate.ExpressionError

    let bytes: [UInt8]
    var parts: [ValuePart] = []
    var text: [UInt8] = []
    var hasExpressions = false

    init(bytes: [UInt8]) { self.bytes = bytes }

    mutating func parse() throws(ExpressionError) -> NotificationTemplate.ParsedValue {
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if Self.isSigil(byte), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "(") {
                let (expression, end) = try parseExpression(at: index)
                flushText()
                parts.append(expression)
                hasExpressions = true
                index = end
            } else if byte == UInt8(ascii: "{"), let (operands, end) = parseBlock(at: index) {
                for operand in operands {
                    if case .text(let literal) = operand {
                        text.append(contentsOf: literal.utf8)
                    } else {
                        flushText()
                        parts.append(operand)
                    }
                }
                hasExpressions = true
                index = end
            } else {
                text.append(byte)
                index += 1
            }
        }
        flushText()
        return .init(parts: parts, hasExpressions: hasExpressions)
    }

    /// Text collects in `text` until an expression (or the end) closes it, so adjacent
    /// text and literals make one part.
    private mutating func flushText() {
        guard !text.isEmpty else { return }
        parts.append(.text(String(decoding: text, as: UTF8.self)))
        text.removeAll(keepingCapacity: true)
    }

    static func isSigil(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "$") || byte == UInt8(ascii: "%") || byte == UInt8(ascii: ".")
            || byte == UInt8(ascii: "#")
    }

    static func isNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"):
            true
        default: false
        }
    }

    static func isSpace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\n")
            || byte == UInt8(ascii: "\r")
    }

    private func skipSpace(from index: Int) -> Int {
        var index = index
        while index < bytes.count, Self.isSpace(bytes[index]) { index += 1 }
        return index
    }

    /// Parses `S(name)` or `S(name, n)` at `start` (which holds the sigil `S`, followed by
    /// `(`); returns the part and the index after `)`.
    private func parseExpression(at start: Int) throws(ExpressionError) -> (ValuePart, Int) {
        let sigil = bytes[start]
        var index = skipSpace(from: start + 2)
        let nameStart = index
        while index < bytes.count, Self.isNameByte(bytes[index]) { index += 1 }
        let name = String(decoding: bytes[nameStart..<index], as: UTF8.self)
        index = skipSpace(from: index)

        func fail(_ reason: String) -> ExpressionError {
            error(at: start, reason)
        }

        guard index < bytes.count else {
            throw fail(name.isEmpty ? "a property name and ')' are missing" : "it is not closed with ')'")
        }
        if bytes[index] != UInt8(ascii: ")") && bytes[index] != UInt8(ascii: ",") {
            let found = Self.describe(at: index, in: bytes)
            throw fail(
                name.isEmpty
                    ? "a property name is missing (found \(found); names may contain only letters A–Z and a–z, digits and underscores)"
                    : "a property name may contain only letters A–Z and a–z, digits and underscores (found \(found))"
            )
        }
        if name.isEmpty { throw fail("a property name is missing") }
        if name.utf8.count > NotificationTemplate.maxPropertyNameLength {
            throw fail(
                "the property name is \(name.utf8.count) characters long; at most \(NotificationTemplate.maxPropertyNameLength) are allowed"
            )
        }

        var length: Int?
        if bytes[index] == UInt8(ascii: ",") {
            index = skipSpace(from: index + 1)
            let digitsStart = index
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
            let digits = bytes[digitsStart..<index]
            guard !digits.isEmpty else {
                throw fail("a length (a whole number such as 20) must follow ','")
            }
            guard digits.count <= 9, let value = Int(String(decoding: digits, as: UTF8.self)),
                value <= NotificationTemplate.maxClipLength
            else {
                throw fail("the length is larger than \(NotificationTemplate.maxClipLength)")
            }
            length = value
            index = skipSpace(from: index)
            guard index < bytes.count else { throw fail("it is not closed with ')'") }
            guard bytes[index] == UInt8(ascii: ")") else {
                throw fail(
                    "the length must be a whole number such as 20, followed by ')' (found \(Self.describe(at: index, in: bytes)))"
                )
            }
        }
        let end = index + 1

        let function: Function
        switch (sigil, length) {
        case (UInt8(ascii: "$"), nil): function = .value
        case (UInt8(ascii: "$"), let n?): function = .clip(n)
        case (UInt8(ascii: "."), let n?): function = .ellipsis(n)
        case (UInt8(ascii: "."), nil):
            throw error(at: start, "'.(' needs a length, as in .(\(name), 20)", end: end)
        case (UInt8(ascii: "%"), nil): function = .uriEncoded
        case (UInt8(ascii: "#"), nil): function = .numeric
        default:
            throw error(
                at: start,
                "'\(Character(Unicode.Scalar(sigil)))(' takes no length; use $(\(name), n) or .(\(name), n) to clip",
                end: end
            )
        }
        return (.expression(function, name: name), end)
    }

    /// Parses a concatenation block at `start` (which holds `{`); `nil` when no whole block
    /// parses from there.
    private func parseBlock(at start: Int) -> ([ValuePart], Int)? {
        var operands: [ValuePart] = []
        var index = skipSpace(from: start + 1)
        while true {
            guard index < bytes.count else { return nil }
            let byte = bytes[index]
            if Self.isSigil(byte), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "(") {
                guard let (operand, end) = try? parseExpression(at: index) else { return nil }
                // `#(p)` inside a block is concatenated as a string.
                if case .expression(.numeric, let name) = operand {
                    operands.append(.expression(.value, name: name))
                } else {
                    operands.append(operand)
                }
                index = end
            } else if byte == UInt8(ascii: "'") || byte == UInt8(ascii: "\"") {
                guard let (literal, end) = parseLiteral(at: index) else { return nil }
                operands.append(.text(literal))
                index = end
            } else {
                return nil
            }
            index = skipSpace(from: index)
            guard index < bytes.count else { return nil }
            if bytes[index] == UInt8(ascii: "}") { return (operands, index + 1) }
            guard bytes[index] == UInt8(ascii: "+") else { return nil }
            index = skipSpace(from: index + 1)
        }
    }

    /// Parses `'…'` or `"…"` at `start`, where a doubled quote stands for one; `nil` when
    /// it is not closed.
    private func parseLiteral(at start: Int) -> (String, Int)? {
        let quote = bytes[start]
        var literal: [UInt8] = []
        var index = start + 1
        while index < bytes.count {
            if bytes[index] == quote {
                if index + 1 < bytes.count, bytes[index + 1] == quote {
                    literal.append(quote)
                    index += 2
                    continue
                }
                return (String(decoding: literal, as: UTF8.self), index + 1)
            }
            literal.append(bytes[index])
            index += 1
        }
        return nil
    }

    /// An error for the expression starting at `start`; its text runs to `end`, or to the
    /// next `)` when `end` is not known.
    private func error(at start: Int, _ reason: String, end: Int? = nil) -> ExpressionError {
        var stop = end ?? bytes[start...].firstIndex(of: UInt8(ascii: ")")).map { $0 + 1 } ?? bytes.count
        let limit = 48
        var shortened = false
        if stop - start > limit {
            stop = start + limit
            // Do not cut a character in two.
            while stop > start, bytes[stop] & 0xC0 == 0x80 { stop -= 1 }
            shortened = true
        }
        let expression = String(decoding: bytes[start..<stop], as: UTF8.self) + (shortened ? "…" : "")
        let offset = bytes[..<start].reduce(0) { $0 + ($1 & 0xC0 == 0x80 ? 0 : 1) }
        return ExpressionError(expression: expression, reason: reason, characterOffset: offset)
    }

    /// `'x'`, or `the end` past the last byte.
    static func describe(at index: Int, in bytes: [UInt8]) -> String {
        guard index < bytes.count else { return "the end" }
        var end = index + 1
        while end < bytes.count, bytes[end] & 0xC0 == 0x80 { end += 1 }
        let character = String(decoding: bytes[index..<end], as: UTF8.self)
        return character == " " ? "a space" : "'\(character)'"
    }
}

// MARK: - Evaluation

extension NotificationTemplate {
    /// Applies `function` to a property's value (`""` when the property is missing).
    static func evaluate(_ function: Function, _ value: String) -> String {
        switch function {
        case .value, .numeric: value
        case .clip(let n): clipped(value, to: n)
        case .ellipsis(let n): ellipsized(value, to: n)
        case .uriEncoded: uriEncoded(value)
        }
    }

    /// The first `n` characters (grapheme clusters, so no character is cut in two).
    static func clipped(_ value: String, to n: Int) -> String {
        guard let end = value.index(value.startIndex, offsetBy: n, limitedBy: value.endIndex),
            end != value.endIndex
        else { return value }
        return String(value[..<end])
    }

    /// The value when it has at most `n` characters; otherwise its first `n − 3` characters
    /// followed by `...`, so the result has exactly `n` characters. When `n` is 3 or less
    /// there is no room for any of the value before `...`, and the value is clipped to `n`
    /// characters without it.
    static func ellipsized(_ value: String, to n: Int) -> String {
        guard let end = value.index(value.startIndex, offsetBy: n, limitedBy: value.endIndex),
            end != value.endIndex
        else { return value }
        guard n > 3 else { return String(value[..<end]) }
        return String(value.prefix(n - 3)) + "..."
    }

    /// Percent-encodes every UTF-8 byte except RFC 3986's unreserved characters
    /// (`A–Z a–z 0–9 - . _ ~`), with uppercase hex digits.
    static func uriEncoded(_ value: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var encoded: [UInt8] = []
        encoded.reserveCapacity(value.utf8.count)
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                UInt8(ascii: "_"), UInt8(ascii: "~"):
                encoded.append(byte)
            default:
                encoded.append(UInt8(ascii: "%"))
                encoded.append(hex[Int(byte >> 4)])
                encoded.append(hex[Int(byte & 0x0F)])
            }
        }
        return String(decoding: encoded, as: UTF8.self)
    }

    /// Whether `value` is a JSON number (RFC 8259: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`)
    /// that a parser can hold as a finite double.
    static func isJSONNumber(_ value: String) -> Bool {
        var bytes = value.utf8[...]
        func digits() -> Int {
            var count = 0
            while let byte = bytes.first, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) {
                bytes.removeFirst()
                count += 1
            }
            return count
        }
        if bytes.first == UInt8(ascii: "-") { bytes.removeFirst() }
        if bytes.first == UInt8(ascii: "0") {
            bytes.removeFirst()
        } else if digits() == 0 {
            return false
        }
        if bytes.first == UInt8(ascii: ".") {
            bytes.removeFirst()
            guard digits() > 0 else { return false }
        }
        if bytes.first == UInt8(ascii: "e") || bytes.first == UInt8(ascii: "E") {
            bytes.removeFirst()
            if bytes.first == UInt8(ascii: "+") || bytes.first == UInt8(ascii: "-") { bytes.removeFirst() }
            guard digits() > 0 else { return false }
        }
        return bytes.isEmpty && (Double(value)?.isFinite ?? false)
    }
}
