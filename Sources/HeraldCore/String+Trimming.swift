extension StringProtocol {
    /// The text without the white space (spaces, tabs, line breaks and, as Foundation counts it,
    /// the zero-width space) at either end: what
    /// `trimmingCharacters(in: .whitespacesAndNewlines)` gives, without bridging to `NSString`.
    public func trimmingWhitespace() -> String {
        trimming { $0.properties.isWhitespace || $0 == "\u{200B}" }
    }

    /// The text without the spaces and tabs at either end (and the zero-width space; line breaks
    /// stay): what
    /// `trimmingCharacters(in: .whitespaces)` gives, without bridging to `NSString`.
    public func trimmingSpaces() -> String {
        trimming { $0 == "\t" || $0 == "\u{200B}" || $0.properties.generalCategory == .spaceSeparator }
    }

    private func trimming(_ isTrimmed: (Unicode.Scalar) -> Bool) -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !isTrimmed($0) }) else { return "" }
        let last = scalars.lastIndex(where: { !isTrimmed($0) })!
        return String(String.UnicodeScalarView(scalars[first...last]))
    }
}
