import Foundation

#if canImport(FoundationXML)
import FoundationXML
#endif

extension NotificationTemplate {
    /// The deepest nesting of elements an XML template may have.
    static let maxXMLDepth = 64

    /// Checks an XML body for well-formedness and compiles it, reading it as a stream of
    /// tags, attributes, text, comments, CDATA sections and processing instructions. Markup
    /// is copied as written; each text run, CDATA section or attribute value that holds
    /// expressions becomes segments. Element and attribute names never hold expressions.
    ///
    /// It is a non-validating check of the XML 1.0 rules a template can break: one root
    /// element, matching and properly nested tags, quoted and unique attributes, no `<` in
    /// attribute values, known entities only (`&amp; &lt; &gt; &quot; &apos;` and character
    /// references), characters XML allows, well-formed comments, and an XML declaration only
    /// at the start. Document type declarations are refused: payloads never need one, and
    /// they would let a template define entities.
    struct XMLCompiler {
        private let body: String
        private let bytes: [UInt8]
        private var index = 0
        private var rawStart = 0
        private var builder = ProgramBuilder()
        /// The names of the open elements, innermost last.
        private var open: [ArraySlice<UInt8>] = []
        private var sawRoot = false

        init(body: String) {
            self.body = body
            bytes = Array(body.utf8)
        }

        mutating func compile() throws(HeraldError) -> Program {
            try checkCharacters()
            while index < bytes.count, isSpace(bytes[index]) { index += 1 }
            // Leading whitespace is dropped from the output: before an XML declaration it
            // would make the document malformed.
            rawStart = index
            let documentStart = index
            while index < bytes.count {
                if bytes[index] == UInt8(ascii: "<") {
                    try parseMarkup(documentStart: documentStart)
                } else {
                    try parseText()
                }
            }
            if let innermost = open.last {
                throw malformed("the element <\(string(innermost))> is not closed", at: bytes.count)
            }
            guard sawRoot else { throw malformed("it has no root element", at: bytes.count) }
            try checkWithParser(from: documentStart)
            builder.raw(String(decoding: bytes[rawStart...], as: UTF8.self))
            return builder.finish()
        }

        /// A second opinion from Foundation's XML parser, for the rules the checks above do
        /// not cover (such as which non-ASCII characters a name may hold). Rendering only
        /// replaces values with escaped text, so a body it accepts renders well-formed.
        private func checkWithParser(from documentStart: Int) throws(HeraldError) {
            let parser = XMLParser(data: Data(bytes[documentStart...]))
            parser.shouldResolveExternalEntities = false
            guard !parser.parse() else { return }
            let skippedLines = bytes[..<documentStart].reduce(0) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) }
            let code = (parser.parserError as? NSError)?.code ?? 0
            throw HeraldError.badRequest(
                "The XML template body is malformed at line \(parser.lineNumber + skippedLines), column \(parser.columnNumber): the XML parser refuses it (parser error \(code))."
            )
        }

        // MARK: Markup

        private mutating func parseMarkup(documentStart: Int) throws(HeraldError) {
            let start = index
            if hasPrefix("<!--") {
                guard let close = find("--", from: start + 4, before: bytes.count) else {
                    throw malformed("the comment is not closed with '-->'", at: start)
                }
                guard close + 2 < bytes.count, bytes[close + 2] == UInt8(ascii: ">") else {
                    throw malformed("'--' is not allowed inside a comment", at: close)
                }
                index = close + 3
            } else if hasPrefix("<![CDATA[") {
                guard !open.isEmpty else {
                    throw malformed("a CDATA section must be inside the root element", at: start)
                }
                guard let close = find("]]>", from: start + 9, before: bytes.count) else {
                    throw malformed("the CDATA section is not closed with ']]>'", at: start)
                }
                index = close + 3
                let content = String(decoding: bytes[start + 9..<close], as: UTF8.self)
                try compileValue(content, from: start, to: index, escaping: .xmlText, place: "CDATA section")
            } else if hasPrefix("<!DOCTYPE") || hasPrefix("<!doctype") {
                throw malformed("document type declarations (<!DOCTYPE …>) are not allowed in templates", at: start)
            } else if hasPrefix("<!") {
                throw malformed("'<!' starts neither a comment nor a CDATA section", at: start)
            } else if hasPrefix("<?") {
                index = start + 2
                guard index < bytes.count, isNameStart(bytes[index]) else {
                    throw malformed("a processing instruction needs a target name after '<?'", at: start)
                }
                let target = readName()
                if target.count == 3, string(target).lowercased() == "xml", start != documentStart {
                    throw malformed("the XML declaration must come first in the body", at: start)
                }
                guard let close = find("?>", from: index, before: bytes.count) else {
                    throw malformed("the processing instruction is not closed with '?>'", at: start)
                }
                index = close + 2
            } else if hasPrefix("</") {
                try parseEndTag()
            } else {
                try parseStartTag()
            }
        }

        private mutating func parseStartTag() throws(HeraldError) {
            let start = index
            index += 1
            guard index < bytes.count, isNameStart(bytes[index]) else {
                throw malformed("expected an element name after '<', found \(describe(index))", at: index)
            }
            let name = readName()
            if open.isEmpty {
                if sawRoot {
                    throw malformed(
                        "a second root element <\(string(name))>; a template has exactly one root element",
                        at: start
                    )
                }
                sawRoot = true
            }
            var attributes: [ArraySlice<UInt8>] = []
            while true {
                let spaced = skipSpace()
                guard index < bytes.count else {
                    throw malformed("the start tag <\(string(name))> is not closed with '>'", at: start)
                }
                if bytes[index] == UInt8(ascii: ">") {
                    index += 1
                    guard open.count < NotificationTemplate.maxXMLDepth else {
                        throw malformed(
                            "elements are nested more than \(NotificationTemplate.maxXMLDepth) levels deep",
                            at: start
                        )
                    }
                    open.append(name)
                    return
                }
                if bytes[index] == UInt8(ascii: "/") {
                    guard index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: ">") else {
                        throw malformed("expected '>' after '/' in the tag <\(string(name))>", at: index)
                    }
                    index += 2
                    return
                }
                guard isNameStart(bytes[index]) else {
                    if "$%.#{".utf8.contains(bytes[index]) {
                        throw malformed(
                            "expressions are allowed only in attribute values and text, not in the tag <\(string(name))>",
                            at: index
                        )
                    }
                    throw malformed(
                        "expected an attribute name, '>' or '/>' in the tag <\(string(name))>, found \(describe(index))",
                        at: index
                    )
                }
                guard spaced else {
                    throw malformed("attributes of <\(string(name))> must be separated by whitespace", at: index)
                }
                let attributeStart = index
                let attribute = readName()
                if attributes.contains(where: { $0.elementsEqual(attribute) }) {
                    throw malformed(
                        "the attribute '\(string(attribute))' appears twice in the tag <\(string(name))>",
                        at: attributeStart
                    )
                }
                attributes.append(attribute)
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "=") else {
                    throw malformed("expected '=' after the attribute name '\(string(attribute))'", at: index)
                }
                index += 1
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") || bytes[index] == UInt8(ascii: "'")
                else {
                    throw malformed(
                        "the value of the attribute '\(string(attribute))' must be in quotes, found \(describe(index))",
                        at: index
                    )
                }
                try parseAttributeValue(attribute)
            }
        }

        private mutating func parseAttributeValue(_ attribute: ArraySlice<UInt8>) throws(HeraldError) {
            let quote = bytes[index]
            let valueStart = index + 1
            guard let close = bytes[valueStart...].firstIndex(of: quote) else {
                throw malformed("the value of the attribute '\(string(attribute))' is not closed", at: index)
            }
            if let lessThan = bytes[valueStart..<close].firstIndex(of: UInt8(ascii: "<")) {
                throw malformed(
                    "'<' is not allowed in an attribute value; write &lt; (attribute '\(string(attribute))')",
                    at: lessThan
                )
            }
            index = close + 1
            let value = try decode(valueStart..<close, inAttribute: true)
            try compileValue(value, from: valueStart, to: close, escaping: .xmlAttribute, place: "attribute value")
        }

        private mutating func parseEndTag() throws(HeraldError) {
            let start = index
            index += 2
            guard index < bytes.count, isNameStart(bytes[index]) else {
                throw malformed("expected an element name after '</', found \(describe(index))", at: index)
            }
            let name = readName()
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ">") else {
                throw malformed("the end tag </\(string(name))> is not closed with '>'", at: start)
            }
            index += 1
            guard let innermost = open.popLast() else {
                throw malformed("the end tag </\(string(name))> has no matching start tag", at: start)
            }
            guard innermost.elementsEqual(name) else {
                throw malformed(
                    "the end tag </\(string(name))> does not match the start tag <\(string(innermost))>",
                    at: start
                )
            }
        }

        // MARK: Text

        private mutating func parseText() throws(HeraldError) {
            let start = index
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "<")) ?? bytes.count
            index = end
            if open.isEmpty {
                if let stray = bytes[start..<end].firstIndex(where: { !isSpace($0) }) {
                    throw malformed("text is not allowed outside the root element", at: stray)
                }
                return
            }
            if let marker = find("]]>", from: start, before: end) {
                throw malformed("']]>' is not allowed in text; write ]]&gt;", at: marker)
            }
            let text = try decode(start..<end, inAttribute: false)
            try compileValue(text, from: start, to: end, escaping: .xmlText, place: "text")
        }

        /// Parses the expressions of a value whose markup spans `from..<to` and, when it
        /// has any, replaces that span in the output with the value's segments.
        private mutating func compileValue(
            _ value: String,
            from start: Int,
            to end: Int,
            escaping: Escaping,
            place: String
        ) throws(HeraldError) {
            let parsed: ParsedValue
            do {
                parsed = try NotificationTemplate.parseValue(value)
            } catch {
                throw HeraldError.badRequest(
                    error.message("in the XML \(place) at \(NotificationTemplate.location(ofByte: start, in: bytes))")
                )
            }
            guard parsed.hasExpressions else { return }
            builder.raw(String(decoding: bytes[rawStart..<start], as: UTF8.self))
            builder.value(parsed.parts, escaping: escaping)
            rawStart = end
        }

        /// The text of `range` with references replaced, line ends normalised to `\n` and,
        /// in attribute values, literal tab and newline normalised to a space, as an XML
        /// parser reports them.
        private func decode(_ range: Range<Int>, inAttribute: Bool) throws(HeraldError) -> String {
            var output: [UInt8] = []
            output.reserveCapacity(range.count)
            var position = range.lowerBound
            while position < range.upperBound {
                let byte = bytes[position]
                switch byte {
                case UInt8(ascii: "&"):
                    guard let semicolon = bytes[position..<range.upperBound].firstIndex(of: UInt8(ascii: ";")) else {
                        throw malformed("'&' must start a reference such as &amp; (write &amp; for '&')", at: position)
                    }
                    let name = bytes[position + 1..<semicolon]
                    output.append(contentsOf: try reference(name, at: position).utf8)
                    position = semicolon + 1
                    continue
                case UInt8(ascii: "\r"):
                    if position + 1 < range.upperBound, bytes[position + 1] == UInt8(ascii: "\n") { position += 1 }
                    output.append(inAttribute ? UInt8(ascii: " ") : UInt8(ascii: "\n"))
                case UInt8(ascii: "\n"), UInt8(ascii: "\t"):
                    output.append(inAttribute ? UInt8(ascii: " ") : byte)
                default:
                    output.append(byte)
                }
                position += 1
            }
            return String(decoding: output, as: UTF8.self)
        }

        /// The text a reference `&name;` stands for.
        private func reference(_ name: ArraySlice<UInt8>, at position: Int) throws(HeraldError) -> String {
            switch string(name) {
            case "amp": return "&"
            case "lt": return "<"
            case "gt": return ">"
            case "quot": return "\""
            case "apos": return "'"
            case let other:
                var digits = Substring(other)
                var radix = 10
                guard digits.first == "#" else {
                    throw malformed(
                        "the entity &\(other.prefix(32)); is not defined (only &amp; &lt; &gt; &quot; &apos; and character references such as &#233; are)",
                        at: position
                    )
                }
                digits = digits.dropFirst()
                if digits.first == "x" {
                    digits = digits.dropFirst()
                    radix = 16
                }
                guard !digits.isEmpty, digits.count <= 8,
                    digits.allSatisfy({ $0.isASCII && $0.isHexDigit && (radix == 16 || $0.isNumber) }),
                    let code = UInt32(digits, radix: radix),
                    let scalar = Unicode.Scalar(code), Self.isXMLCharacter(scalar)
                else {
                    throw malformed(
                        "&\(other.prefix(32)); is not a reference to a character XML allows",
                        at: position
                    )
                }
                return String(Character(scalar))
            }
        }

        // MARK: Helpers

        private func checkCharacters() throws(HeraldError) {
            var offset = 0
            for scalar in body.unicodeScalars {
                guard Self.isXMLCharacter(scalar) else {
                    let digits = String(scalar.value, radix: 16, uppercase: true)
                    throw malformed(
                        "the character U+\(String(repeating: "0", count: max(0, 4 - digits.count)) + digits) is not allowed in XML",
                        at: offset
                    )
                }
                offset += UTF8.width(scalar)
            }
        }

        static func isXMLCharacter(_ scalar: Unicode.Scalar) -> Bool {
            switch scalar.value {
            case 0x09, 0x0A, 0x0D, 0x20...0xD7FF, 0xE000...0xFFFD, 0x10000...0x10FFFF: true
            default: false
            }
        }

        private func isSpace(_ byte: UInt8) -> Bool {
            byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\n")
                || byte == UInt8(ascii: "\r")
        }

        /// Letters, `_`, `:` and any non-ASCII character may start a name.
        private func isNameStart(_ byte: UInt8) -> Bool {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "_"),
                UInt8(ascii: ":"), 0x80...:
                true
            default: false
            }
        }

        private func isNameByte(_ byte: UInt8) -> Bool {
            isNameStart(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-")
                || byte == UInt8(ascii: ".")
        }

        private mutating func readName() -> ArraySlice<UInt8> {
            let start = index
            while index < bytes.count, isNameByte(bytes[index]) { index += 1 }
            return bytes[start..<index]
        }

        @discardableResult
        private mutating func skipSpace() -> Bool {
            let start = index
            while index < bytes.count, isSpace(bytes[index]) { index += 1 }
            return index > start
        }

        private func hasPrefix(_ prefix: String) -> Bool {
            bytes.count - index >= prefix.utf8.count && bytes[index..<index + prefix.utf8.count].elementsEqual(prefix.utf8)
        }

        /// The offset of the first `needle` that starts at or after `start` and ends by `end`.
        private func find(_ needle: String, from start: Int, before end: Int) -> Int? {
            let needle = Array(needle.utf8)
            var position = start
            while position + needle.count <= end {
                if bytes[position] == needle[0], bytes[position..<position + needle.count].elementsEqual(needle) {
                    return position
                }
                position += 1
            }
            return nil
        }

        private func string(_ bytes: ArraySlice<UInt8>) -> String {
            String(decoding: bytes.prefix(64), as: UTF8.self)
        }

        private func describe(_ index: Int) -> String {
            guard index < bytes.count else { return "the end of the body" }
            var end = index + 1
            while end < bytes.count, bytes[end] & 0xC0 == 0x80 { end += 1 }
            let character = String(decoding: bytes[index..<end], as: UTF8.self)
            if isSpace(bytes[index]) { return "whitespace" }
            return character == "'" ? "\"'\"" : "'\(character)'"
        }

        private func malformed(_ reason: String, at offset: Int) -> HeraldError {
            .badRequest(
                "The XML template body is malformed at \(NotificationTemplate.location(ofByte: offset, in: bytes)): \(reason)."
            )
        }
    }
}
