extension Sequence<UInt8> {
    /// The bytes as lowercase hexadecimal, two digits each: how digests are written.
    public var lowercaseHex: String {
        let digits: StaticString = "0123456789abcdef"
        let bytes = Array(self)
        return String(unsafeUninitializedCapacity: bytes.count * 2) { text in
            digits.withUTF8Buffer { digits in
                for (index, byte) in bytes.enumerated() {
                    text[2 * index] = digits[Int(byte >> 4)]
                    text[2 * index + 1] = digits[Int(byte & 0x0f)]
                }
            }
            return bytes.count * 2
        }
    }
}
