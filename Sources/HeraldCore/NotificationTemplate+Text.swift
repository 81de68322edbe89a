extension NotificationTemplate {
    /// A header value or an APNs expiry that may hold expressions, parsed once and rendered
    /// per device as plain text (see ``NotificationTemplate/renderText(_:properties:)``).
    public struct Text: Sendable {
        /// The text as it is, when it holds no expression: every rendering is this.
        public let constant: String?
        private let program: Program?

        /// Parses `text`.
        ///
        /// - Throws: `badRequest` naming the malformed expression and where it is.
        public init(_ text: String) throws(HeraldError) {
            let parsed: ParsedValue
            do {
                parsed = try parseValue(text)
            } catch {
                throw HeraldError.badRequest(error.message("at character \(error.characterOffset + 1) of \"\(shortened(text))\""))
            }
            guard parsed.hasExpressions else {
                constant = text
                program = nil
                return
            }
            var builder = ProgramBuilder()
            builder.value(parsed.parts, escaping: .plainText)
            constant = nil
            program = builder.finish()
        }

        /// The property names the text uses (lowercased), numbered as
        /// ``render(value:)`` asks for them.
        public var orderedPropertyNames: [String] {
            program?.propertyNames ?? []
        }

        /// Renders with `properties` (case-insensitive names).
        public func render(_ properties: [String: String]) -> String {
            guard let program else { return constant ?? "" }
            return program.render(properties)
        }

        /// Renders with the value of each property given by `value` (`nil` when it is
        /// missing), called with the property's index in ``orderedPropertyNames``.
        public func render(value: (_ property: Int) -> String?) -> String {
            guard let program else { return constant ?? "" }
            var output: [UInt8] = []
            program.render(into: &output, value: value)
            return String(decoding: output, as: UTF8.self)
        }
    }
}
