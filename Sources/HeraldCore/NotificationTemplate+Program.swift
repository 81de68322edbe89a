import Foundation

extension NotificationTemplate {
    /// How a rendered value is escaped for the place it lands in.
    enum Escaping: Sendable, Hashable {
        /// Inside a JSON string (between its quotes).
        case jsonString
        /// XML character data.
        case xmlText
        /// An XML attribute value (between its quotes).
        case xmlAttribute
        /// Plain text such as a header value: no escaping, but control characters that
        /// come from a property's value become spaces, so a value cannot add header lines.
        case plainText
    }

    /// A compiled template: the body cut into text that is copied as it is and expressions
    /// that are evaluated per render. Built once; rendering is a single pass that appends.
    struct Program: Sendable {
        enum Segment: Sendable {
            /// Output as it is (already valid in its context).
            case raw(String)
            /// An expression on property number `property`, escaped for its context.
            case value(Function, property: Int, Escaping)
            /// A JSON string value that is exactly `#(p)`: a bare number when the value is a
            /// JSON number, a JSON string (quotes included) otherwise.
            case jsonNumber(property: Int)
        }

        var segments: [Segment]
        /// Lowercased property names; an expression refers to one by its index.
        var propertyNames: [String]
        /// The bytes of raw text, to size the output.
        var rawLength: Int

        /// The bytes of raw text and some room for values: a capacity to reserve.
        var sizeHint: Int { rawLength + 16 * segments.count }

        func render(_ properties: [String: String]) -> String {
            let values = resolve(properties)
            var output: [UInt8] = []
            render(into: &output) { values[$0] }
            return String(decoding: output, as: UTF8.self)
        }

        /// Appends the rendering to `output`; `value` gives the value of property number `index`
        /// (of ``propertyNames``), `nil` when it is missing.
        func render(into output: inout [UInt8], value: (_ index: Int) -> String?) {
            output.reserveCapacity(output.count + sizeHint)
            for segment in segments {
                switch segment {
                case .raw(let text):
                    output.append(contentsOf: text.utf8)
                case .value(let function, let property, let escaping):
                    let value = NotificationTemplate.evaluate(function, value(property) ?? "")
                    NotificationTemplate.append(value, escaping: escaping, to: &output)
                case .jsonNumber(let property):
                    let value = value(property) ?? ""
                    if NotificationTemplate.isJSONNumber(value) {
                        output.append(contentsOf: value.utf8)
                    } else {
                        output.append(UInt8(ascii: "\""))
                        NotificationTemplate.append(value, escaping: .jsonString, to: &output)
                        output.append(UInt8(ascii: "\""))
                    }
                }
            }
        }

        /// The value of each property the template uses, matching names case-insensitively.
        /// When several keys differ only in case, the first in code-point order wins, so the
        /// result does not depend on the dictionary's order.
        private func resolve(_ properties: [String: String]) -> [String?] {
            var values = [String?](repeating: nil, count: propertyNames.count)
            guard !propertyNames.isEmpty else { return values }
            var chosenKeys = [String?](repeating: nil, count: propertyNames.count)
            for (key, value) in properties {
                let lowercased =
                    key.utf8.contains(where: { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) })
                    ? NotificationTemplate.asciiLowercased(key) : key
                guard let index = propertyIndex(lowercased) else { continue }
                if let chosen = chosenKeys[index], chosen.utf8.lexicographicallyPrecedes(key.utf8) { continue }
                chosenKeys[index] = key
                values[index] = value
            }
            return values
        }

        private func propertyIndex(_ lowercasedName: String) -> Int? {
            // Templates use a handful of properties: a linear scan beats hashing here.
            propertyNames.firstIndex(of: lowercasedName)
        }
    }

    /// Collects segments, merging adjacent raw text and numbering properties.
    struct ProgramBuilder {
        private var segments: [Program.Segment] = []
        private var pending = ""
        private var rawLength = 0
        private var propertyNames: [String] = []

        init() {}

        /// Text output as it is.
        mutating func raw(_ text: some StringProtocol) {
            pending += text
        }

        /// A parsed value whose literal text and expression results are escaped for `escaping`.
        mutating func value(_ parts: [ValuePart], escaping: Escaping) {
            for part in parts {
                switch part {
                case .text(let literal):
                    if escaping == .plainText {
                        pending += literal
                    } else {
                        NotificationTemplate.append(literal, escaping: escaping, to: &pending)
                    }
                case .expression(let function, let name):
                    flush()
                    segments.append(.value(function, property: property(name), escaping))
                }
            }
        }

        /// A JSON string value that is exactly `#(name)`.
        mutating func jsonNumber(_ name: String) {
            flush()
            segments.append(.jsonNumber(property: property(name)))
        }

        private mutating func property(_ name: String) -> Int {
            let lowercased = NotificationTemplate.asciiLowercased(name)
            if let index = propertyNames.firstIndex(of: lowercased) { return index }
            propertyNames.append(lowercased)
            return propertyNames.count - 1
        }

        private mutating func flush() {
            guard !pending.isEmpty else { return }
            rawLength += pending.utf8.count
            segments.append(.raw(pending))
            pending = ""
        }

        mutating func finish() -> Program {
            flush()
            return Program(segments: segments, propertyNames: propertyNames, rawLength: rawLength)
        }
    }

    /// `text` with `A–Z` lowercased (property names are ASCII).
    static func asciiLowercased(_ text: String) -> String {
        String(
            decoding: text.utf8.map { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) ? $0 + 32 : $0 },
            as: UTF8.self
        )
    }

    // MARK: - Escaping

    /// Appends `value` escaped for `escaping`.
    static func append(_ value: String, escaping: Escaping, to output: inout String) {
        var bytes: [UInt8] = []
        append(value, escaping: escaping, to: &bytes)
        output += String(decoding: bytes, as: UTF8.self)
    }

    /// Appends the UTF-8 of `value` escaped for `escaping`.
    static func append(_ value: String, escaping: Escaping, to output: inout [UInt8]) {
        switch escaping {
        case .jsonString: appendJSONString(value, to: &output)
        case .xmlText: appendXML(value, inAttribute: false, to: &output)
        case .xmlAttribute: appendXML(value, inAttribute: true, to: &output)
        case .plainText: appendPlainText(value, to: &output)
        }
    }

    /// The contents of a JSON string (without its quotes). Values that need no escaping are
    /// copied; the others go through `JSONEncoder`, so the escaping is the encoder's.
    private static func appendJSONString(_ value: String, to output: inout [UInt8]) {
        let needsEscaping = value.utf8.contains { byte in
            byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
        }
        guard needsEscaping else {
            output.append(contentsOf: value.utf8)
            return
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        // Encoding a String cannot fail; an empty string keeps the document valid regardless.
        guard let data = try? encoder.encode(value), data.count >= 2 else { return }
        output.append(contentsOf: data.dropFirst().dropLast())
    }

    /// XML character data or an attribute value: `& < > " '` as entities; in attributes tab,
    /// newline and carriage return as character references (a parser would normalise them
    /// away), and carriage return in text too. Characters XML 1.0 cannot carry at all
    /// become U+FFFD, so the document stays well-formed whatever the value holds.
    private static func appendXML(_ value: String, inAttribute: Bool, to output: inout [UInt8]) {
        let needsEscaping = value.unicodeScalars.contains { scalar in
            switch scalar {
            case "&", "<", ">", "\"", "'", "\r": true
            case "\t", "\n": inAttribute
            default: scalar.value < 0x20 || scalar.value == 0xFFFE || scalar.value == 0xFFFF
            }
        }
        guard needsEscaping else {
            output.append(contentsOf: value.utf8)
            return
        }
        var escaped = ""
        XMLWriter.escape(value, inAttribute: inAttribute, replacingInvalidWith: "\u{FFFD}", into: &escaped)
        output.append(contentsOf: escaped.utf8)
    }

    /// A value for plain text: control characters (other than tab) become spaces.
    private static func appendPlainText(_ value: String, to output: inout [UInt8]) {
        for byte in value.utf8 {
            let isControl = (byte < 0x20 && byte != UInt8(ascii: "\t")) || byte == 0x7F
            output.append(isControl ? UInt8(ascii: " ") : byte)
        }
    }
}
