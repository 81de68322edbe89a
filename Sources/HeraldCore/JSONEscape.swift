/// The escapes of a JSON string (RFC 8259 §7), decoded in one place for every reader of JSON
/// text: `JSONValue(parsing:)` and the JSON template scanner.
enum JSONEscape {
    /// Why an escape is not one.
    enum Failure: Error {
        /// The text ends inside the escape.
        case unclosed
        /// `\u` without four hex digits after it.
        case notHex
        /// A `\u` escape of half a surrogate pair without the other half.
        case unpairedSurrogate(UInt32)
        /// A letter after the backslash that makes no escape.
        case unknown(UInt8)

        /// What is wrong, said for the caller of an API.
        var reason: String {
            switch self {
            case .unclosed: "the string is not closed with '\"'"
            case .notHex: "\\u must be followed by four hexadecimal digits"
            case .unpairedSurrogate(let code): "\\u\(Self.hex4(code)) is half of a surrogate pair without its other half"
            case .unknown(let letter):
                "'\\\(letter < 0x80 ? String(Character(Unicode.Scalar(letter))) : "…")' is not a JSON escape (use \\\" \\\\ \\/ \\b \\f \\n \\r \\t or \\uXXXX)"
            }
        }

        private static func hex4(_ value: UInt32) -> String {
            let digits = String(value, radix: 16, uppercase: true)
            return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
        }
    }

    /// Decodes the escape whose backslash is at `index` into `output` (as UTF-8) and moves `index`
    /// past it.
    static func decode<Bytes: RandomAccessCollection<UInt8>>(
        _ bytes: Bytes, at index: inout Int, into output: inout [UInt8]
    ) throws(Failure) where Bytes.Index == Int {
        guard index + 1 < bytes.endIndex else { throw .unclosed }
        let letter = bytes[index + 1]
        index += 2
        switch letter {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): output.append(letter)
        case UInt8(ascii: "b"): output.append(0x08)
        case UInt8(ascii: "f"): output.append(0x0C)
        case UInt8(ascii: "n"): output.append(0x0A)
        case UInt8(ascii: "r"): output.append(0x0D)
        case UInt8(ascii: "t"): output.append(0x09)
        case UInt8(ascii: "u"):
            var code = try hexQuad(bytes, at: &index)
            if (0xD800...0xDBFF).contains(code) {
                // A high surrogate must be followed by an escaped low surrogate.
                guard index + 1 < bytes.endIndex, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                    throw .unpairedSurrogate(code)
                }
                index += 2
                let low = try hexQuad(bytes, at: &index)
                guard (0xDC00...0xDFFF).contains(low) else { throw .unpairedSurrogate(code) }
                code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(code) {
                throw .unpairedSurrogate(code)
            }
            // Every code left is a scalar: the surrogates are paired or refused.
            output.append(contentsOf: UTF8.encode(Unicode.Scalar(code)!)!)
        default:
            throw .unknown(letter)
        }
    }

    /// Four hex digits at `index`.
    private static func hexQuad<Bytes: RandomAccessCollection<UInt8>>(_ bytes: Bytes, at index: inout Int) throws(Failure) -> UInt32
    where Bytes.Index == Int {
        guard index + 4 <= bytes.endIndex else { throw .notHex }
        var code: UInt32 = 0
        for byte in bytes[index..<index + 4] {
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw .notHex
            }
            code = code << 4 | UInt32(digit)
        }
        index += 4
        return code
    }
}
