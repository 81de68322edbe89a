import Foundation

/// base64url (RFC 4648 §5) without padding, as JWTs use it.
enum Base64URL {
    private static let decodeTable: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        for (value, character) in alphabet.enumerated() { table[Int(character)] = UInt8(value) }
        // Accept the standard alphabet too: some encoders use it.
        table[Int(UInt8(ascii: "+"))] = 62
        table[Int(UInt8(ascii: "/"))] = 63
        return table
    }()

    /// The decoded bytes, or `nil` if `text` is not base64url. Trailing `=` padding is accepted.
    static func decode(_ text: Substring) -> [UInt8]? {
        var utf8 = text.utf8[...]
        while utf8.last == UInt8(ascii: "=") { utf8 = utf8.dropLast() }
        guard utf8.count % 4 != 1 else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(utf8.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for character in utf8 {
            let value = decodeTable[Int(character)]
            guard value != 0xFF else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        return output
    }

    static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var base64 = Data(bytes).base64EncodedString()
        base64 = base64.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while base64.hasSuffix("=") { base64.removeLast() }
        return base64
    }
}
