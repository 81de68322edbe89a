extension StringProtocol {
    /// The text without the white space (spaces, tabs, line breaks and, as Foundation counts it,
    /// the zero-width space) at either end: what `trimmingCharacters(in: .whitespacesAndNewlines)`
    /// gives, without bridging to `NSString`.
    public func trimmingWhitespace() -> String {
        String(self).trimmed(newlines: true)
    }

    /// The text without the spaces and tabs at either end (and the zero-width space; line breaks
    /// stay): what `trimmingCharacters(in: .whitespaces)` gives, without bridging to `NSString`.
    public func trimmingSpaces() -> String {
        String(self).trimmed(newlines: false)
    }
}

extension String {
    fileprivate func trimmed(newlines: Bool) -> String {
        // Most texts start and end with a visible ASCII character: nothing to trim, nothing to decode.
        if let first = utf8.first, let last = utf8.last, first < 0x80, last < 0x80,
            !Self.isTrimmedASCII(first, newlines: newlines), !Self.isTrimmedASCII(last, newlines: newlines)
        {
            return self
        }
        let isTrimmed: (Unicode.Scalar) -> Bool =
            newlines
            ? { $0.properties.isWhitespace || $0 == "\u{200B}" }
            : { $0 == "\t" || $0 == "\u{200B}" || $0.properties.generalCategory == .spaceSeparator }
        guard let start = unicodeScalars.firstIndex(where: { !isTrimmed($0) }) else { return "" }
        let end = unicodeScalars.lastIndex(where: { !isTrimmed($0) })!
        return String(Substring(unicodeScalars[start...end]))
    }

    /// Whether an ASCII byte is trimmed: a space or a tab, and with `newlines` a line break
    /// (U+000A to U+000D).
    private static func isTrimmedASCII(_ byte: UInt8, newlines: Bool) -> Bool {
        byte == 0x20 || byte == 0x09 || (newlines && (0x0A...0x0D).contains(byte))
    }
}
