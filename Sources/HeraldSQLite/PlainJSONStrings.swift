/// Writes and reads the JSON arrays of strings the store keeps for tags, without
/// `JSONEncoder`/`JSONDecoder`.
///
/// Every upsert writes one array and every registration of a resolution page reads one; for
/// strings that need no escape (tags never do) handling the bytes directly is several times
/// cheaper. Anything else is left to the Foundation coders.
package enum PlainJSONStrings {
    /// `["…","…"]` if no string holds a character JSON must escape (`"`, `\`, a control
    /// character); `nil` otherwise.
    package static func encode(_ strings: [String]) -> String? {
        var length = 2
        for string in strings {
            for byte in string.utf8 where byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 {
                return nil
            }
            length += string.utf8.count + 3
        }
        var text = "["
        text.reserveCapacity(length)
        for (index, string) in strings.enumerated() {
            text += index == 0 ? "\"" : ",\""
            text += string
            text += "\""
        }
        text += "]"
        return text
    }

    /// The strings of `text` if it is exactly `[]` or `["…","…"]` with no escape, control
    /// character or whitespace; `nil` for anything else, valid JSON or not.
    package static func parse(_ text: String) -> [String]? {
        var text = text
        return text.withUTF8 { bytes -> [String]? in
            let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\")
            guard bytes.count >= 2, bytes[0] == UInt8(ascii: "["), bytes[bytes.count - 1] == UInt8(ascii: "]") else { return nil }
            let end = bytes.count - 1
            var strings: [String] = []
            var i = 1
            if i == end { return strings }
            while true {
                guard i < end, bytes[i] == quote else { return nil }
                let start = i + 1
                var j = start
                while j < end, bytes[j] != quote {
                    guard bytes[j] != backslash, bytes[j] >= 0x20 else { return nil }
                    j += 1
                }
                guard j < end else { return nil }
                strings.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<j]), as: UTF8.self))
                i = j + 1
                if i == end { return strings }
                guard bytes[i] == UInt8(ascii: ",") else { return nil }
                i += 1
            }
        }
    }
}
