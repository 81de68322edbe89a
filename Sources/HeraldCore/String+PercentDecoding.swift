extension StringProtocol {
    /// The text with its `%XX` escapes decoded (either case of hex digit), or `nil` when a `%`
    /// is not followed by two hex digits or the decoded bytes are not UTF-8: what Foundation's
    /// `removingPercentEncoding` gives, without bridging to `NSString`. With `plusIsSpace`
    /// (a query as HTML forms encode it), a `+` is a space; otherwise it stays a `+`.
    public func percentDecoded(plusIsSpace: Bool = false) -> String? {
        String(self).decodingPercentEscapes(plusIsSpace: plusIsSpace)
    }
}

extension String {
    fileprivate func decodingPercentEscapes(plusIsSpace: Bool) -> String? {
        // Most ids, paths and query values have nothing to decode.
        if !utf8.contains(where: { $0 == UInt8(ascii: "%") || (plusIsSpace && $0 == UInt8(ascii: "+")) }) { return self }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count)
        var iterator = utf8.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "%"):
                guard let high = iterator.next().flatMap(Self.hexValue), let low = iterator.next().flatMap(Self.hexValue) else {
                    return nil
                }
                bytes.append(high << 4 | low)
            case UInt8(ascii: "+") where plusIsSpace:
                bytes.append(UInt8(ascii: " "))
            default:
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
