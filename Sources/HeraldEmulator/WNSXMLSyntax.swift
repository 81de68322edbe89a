import NIOCore

/// A small XML 1.0 well-formedness check that builds nothing: the WNS emulator runs it on every
/// toast, tile and badge.
///
/// It accepts what notification payloads use — an optional byte order mark and XML declaration,
/// comments and processing instructions, one root element with attributes, nested elements,
/// text with the five predefined entities and character references, CDATA sections — and
/// checks that tags nest and close, that attribute values are quoted and free of `<`, and that
/// the text is UTF-8. Document type declarations are refused (WNS does not take DTDs).
enum WNSXMLSyntax {
    /// The root element's name if `buffer` is a well-formed document, else `nil`.
    static func rootElement(of buffer: ByteBuffer) -> String? {
        buffer.withUnsafeReadableBytes { bytes in
            var scanner = Scanner(bytes: bytes)
            return scanner.document()
        }
    }

    /// The root element's name if `bytes` is a well-formed document, else `nil`.
    static func rootElement(of bytes: [UInt8]) -> String? {
        bytes.withUnsafeBytes { bytes in
            var scanner = Scanner(bytes: bytes)
            return scanner.document()
        }
    }

    private static let maxDepth = 256

    private struct Scanner {
        let bytes: UnsafeRawBufferPointer
        var index = 0

        init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

        var isAtEnd: Bool { index >= bytes.count }
        /// The current byte, or 0 at the end (0 is never valid in XML).
        var peek: UInt8 { index < bytes.count ? bytes[index] : 0 }

        func peek(at offset: Int) -> UInt8 {
            index + offset < bytes.count ? bytes[index + offset] : 0
        }

        func starts(with literal: StaticString) -> Bool {
            let count = literal.utf8CodeUnitCount
            guard index + count <= bytes.count else { return false }
            let pointer = literal.utf8Start
            for offset in 0..<count where bytes[index + offset] != pointer[offset] {
                return false
            }
            return true
        }

        mutating func skipWhitespace() {
            while index < bytes.count, isWhitespace(bytes[index]) { index += 1 }
        }

        // document ::= BOM? XMLDecl? Misc* element Misc*
        mutating func document() -> String? {
            if peek == 0xEF, peek(at: 1) == 0xBB, peek(at: 2) == 0xBF { index += 3 }
            if starts(with: "<?xml"), isWhitespace(peek(at: 5)) || peek(at: 5) == UInt8(ascii: "?") {
                guard processingInstruction() else { return nil }
            }
            guard misc() else { return nil }
            guard peek == UInt8(ascii: "<"), let name = element(depth: 0) else { return nil }
            guard misc(), isAtEnd else { return nil }
            return name
        }

        /// Comments, processing instructions and whitespace outside the root element.
        mutating func misc() -> Bool {
            while true {
                skipWhitespace()
                if starts(with: "<!--") {
                    guard comment() else { return false }
                } else if starts(with: "<?") {
                    guard processingInstruction() else { return false }
                } else {
                    return true
                }
            }
        }

        /// `<name attr="value" …>content</name>` or `<name … />`; returns the name.
        mutating func element(depth: Int) -> String? {
            guard depth < WNSXMLSyntax.maxDepth else { return nil }
            index += 1  // <
            let nameStart = index
            guard name() else { return nil }
            let nameEnd = index
            while true {
                let hadSpace = isWhitespace(peek)
                skipWhitespace()
                switch peek {
                case UInt8(ascii: "/"):
                    guard peek(at: 1) == UInt8(ascii: ">") else { return nil }
                    index += 2
                    return string(nameStart..<nameEnd)
                case UInt8(ascii: ">"):
                    index += 1
                    guard content(depth: depth) else { return nil }
                    // </name>
                    guard starts(with: "</") else { return nil }
                    index += 2
                    let closeStart = index
                    guard name(), equal(nameStart..<nameEnd, closeStart..<index) else { return nil }
                    skipWhitespace()
                    guard peek == UInt8(ascii: ">") else { return nil }
                    index += 1
                    return string(nameStart..<nameEnd)
                default:
                    guard hadSpace, attribute() else { return nil }
                }
            }
        }

        /// Everything between a start tag and its end tag; stops before `</`.
        mutating func content(depth: Int) -> Bool {
            while !isAtEnd {
                switch peek {
                case UInt8(ascii: "<"):
                    if starts(with: "</") { return true }
                    if starts(with: "<!--") {
                        guard comment() else { return false }
                    } else if starts(with: "<![CDATA[") {
                        guard cdata() else { return false }
                    } else if starts(with: "<?") {
                        guard processingInstruction() else { return false }
                    } else if peek(at: 1) == UInt8(ascii: "!") {
                        return false
                    } else {
                        guard element(depth: depth + 1) != nil else { return false }
                    }
                case UInt8(ascii: "&"):
                    guard reference() else { return false }
                case UInt8(ascii: "]"):
                    // "]]>" may not appear in text.
                    guard !starts(with: "]]>") else { return false }
                    index += 1
                default:
                    guard character() else { return false }
                }
            }
            return false
        }

        /// ` name="value"` (or single quotes).
        mutating func attribute() -> Bool {
            guard name() else { return false }
            skipWhitespace()
            guard peek == UInt8(ascii: "=") else { return false }
            index += 1
            skipWhitespace()
            let quote = peek
            guard quote == UInt8(ascii: "\"") || quote == UInt8(ascii: "'") else { return false }
            index += 1
            while !isAtEnd {
                switch peek {
                case quote:
                    index += 1
                    return true
                case UInt8(ascii: "<"):
                    return false
                case UInt8(ascii: "&"):
                    guard reference() else { return false }
                default:
                    guard character() else { return false }
                }
            }
            return false
        }

        /// `&lt;`, `&gt;`, `&amp;`, `&quot;`, `&apos;`, `&#123;` or `&#x1F;`.
        mutating func reference() -> Bool {
            index += 1  // &
            if peek == UInt8(ascii: "#") {
                index += 1
                var value: UInt32 = 0
                var digits = 0
                let hex = peek == UInt8(ascii: "x")
                if hex { index += 1 }
                while !isAtEnd, peek != UInt8(ascii: ";") {
                    let byte = peek
                    let digit: UInt32
                    switch byte {
                    case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
                    case UInt8(ascii: "a")...UInt8(ascii: "f") where hex: digit = UInt32(byte - UInt8(ascii: "a") + 10)
                    case UInt8(ascii: "A")...UInt8(ascii: "F") where hex: digit = UInt32(byte - UInt8(ascii: "A") + 10)
                    default: return false
                    }
                    value = value * (hex ? 16 : 10) + digit
                    digits += 1
                    guard digits <= 8 else { return false }
                    index += 1
                }
                guard digits > 0, peek == UInt8(ascii: ";"), isXMLCharacter(value) else { return false }
                index += 1
                return true
            }
            for entity: StaticString in ["lt;", "gt;", "amp;", "quot;", "apos;"] where starts(with: entity) {
                index += entity.utf8CodeUnitCount
                return true
            }
            return false
        }

        /// `<!-- … -->`, without `--` inside.
        mutating func comment() -> Bool {
            index += 4
            while !isAtEnd {
                if starts(with: "--") {
                    guard peek(at: 2) == UInt8(ascii: ">") else { return false }
                    index += 3
                    return true
                }
                guard character() else { return false }
            }
            return false
        }

        /// `<![CDATA[ … ]]>`.
        mutating func cdata() -> Bool {
            index += 9
            while !isAtEnd {
                if starts(with: "]]>") {
                    index += 3
                    return true
                }
                guard character() else { return false }
            }
            return false
        }

        /// `<?target … ?>`; the target `xml` is allowed only as the declaration, at the start.
        mutating func processingInstruction() -> Bool {
            let isDeclaration = index == 0 || (index == 3 && bytes[0] == 0xEF)
            index += 2
            let targetStart = index
            guard name() else { return false }
            let target = string(targetStart..<index)
            if target.lowercased() == "xml", !isDeclaration { return false }
            guard isWhitespace(peek) || starts(with: "?>") else { return false }
            while !isAtEnd {
                if starts(with: "?>") {
                    index += 2
                    return true
                }
                guard character() else { return false }
            }
            return false
        }

        /// An XML name: a letter, `_`, `:` or any non-ASCII character first, then also digits,
        /// `-` and `.`.
        mutating func name() -> Bool {
            let start = index
            while !isAtEnd {
                let byte = peek
                let isStart =
                    (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                    || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                    || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ":")
                let isLater =
                    (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "-")
                    || byte == UInt8(ascii: ".")
                if byte >= 0x80 {
                    guard character() else { return false }
                } else if isStart || (isLater && index > start) {
                    index += 1
                } else {
                    break
                }
            }
            return index > start
        }

        /// One character of text: tab, newline, carriage return, printable ASCII or a valid
        /// UTF-8 sequence of an XML character. Steps over it.
        mutating func character() -> Bool {
            let lead = peek
            if lead < 0x80 {
                guard lead >= 0x20 || lead == 0x09 || lead == 0x0A || lead == 0x0D, !isAtEnd else { return false }
                index += 1
                return true
            }
            let length: Int
            let minimum: UInt32
            var scalar: UInt32
            switch lead {
            case 0xC2...0xDF:
                length = 2
                minimum = 0x80
                scalar = UInt32(lead & 0x1F)
            case 0xE0...0xEF:
                length = 3
                minimum = 0x800
                scalar = UInt32(lead & 0x0F)
            case 0xF0...0xF4:
                length = 4
                minimum = 0x10000
                scalar = UInt32(lead & 0x07)
            default:
                return false
            }
            guard index + length <= bytes.count else { return false }
            for offset in 1..<length {
                let continuation = bytes[index + offset]
                guard continuation & 0xC0 == 0x80 else { return false }
                scalar = scalar << 6 | UInt32(continuation & 0x3F)
            }
            guard scalar >= minimum, isXMLCharacter(scalar) else { return false }
            index += length
            return true
        }

        func isXMLCharacter(_ scalar: UInt32) -> Bool {
            switch scalar {
            case 0x09, 0x0A, 0x0D, 0x20...0xD7FF, 0xE000...0xFFFD, 0x10000...0x10FFFF: true
            default: false
            }
        }

        func isWhitespace(_ byte: UInt8) -> Bool {
            byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
        }

        func equal(_ a: Range<Int>, _ b: Range<Int>) -> Bool {
            guard a.count == b.count else { return false }
            for offset in 0..<a.count where bytes[a.lowerBound + offset] != bytes[b.lowerBound + offset] {
                return false
            }
            return true
        }

        func string(_ range: Range<Int>) -> String {
            String(decoding: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self)
        }
    }
}
