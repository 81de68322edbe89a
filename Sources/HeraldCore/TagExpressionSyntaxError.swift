/// Why a text is not a tag expression, and where.
///
/// ``position`` is a 0-based offset, in characters, into the text that was parsed. The
/// ``description`` is a message safe to return to the caller, such as
/// `expected a tag or '(' at position 5`. Equality compares the code only (``CodedError``).
public struct TagExpressionSyntaxError: CodedError {
    /// What kind of mistake it is; a short name safe as a metric label.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case emptyExpression, expectedOperand, expectedOperator, unexpectedClosingParenthesis
            case missingClosingParenthesis, singleOperatorCharacter, unexpectedCharacter, invalidTag
            case tooLong, tooManyTags, tooDeep
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The text has no tokens.
        public static let emptyExpression = Code(.emptyExpression)
        /// A tag, `!` or `(` was needed.
        public static let expectedOperand = Code(.expectedOperand)
        /// `&&`, `||`, `)` or the end was needed.
        public static let expectedOperator = Code(.expectedOperator)
        /// A `)` without a matching `(`.
        public static let unexpectedClosingParenthesis = Code(.unexpectedClosingParenthesis)
        /// A `(` that is never closed.
        public static let missingClosingParenthesis = Code(.missingClosingParenthesis)
        /// A single `&` or `|`.
        public static let singleOperatorCharacter = Code(.singleOperatorCharacter)
        /// A character that is neither part of a tag, an operator nor whitespace.
        public static let unexpectedCharacter = Code(.unexpectedCharacter)
        /// A tag that ``Tag/validate(_:)`` refuses.
        public static let invalidTag = Code(.invalidTag)
        /// More than ``TagExpression/maxLength`` characters.
        public static let tooLong = Code(.tooLong)
        /// More than ``TagExpression/maxTags`` tags.
        public static let tooManyTags = Code(.tooManyTags)
        /// Nested deeper than ``TagExpression/maxDepth``.
        public static let tooDeep = Code(.tooDeep)

        public var description: String { base.rawValue }
    }

    public let code: Code
    /// Where the problem is: a 0-based offset, in characters, into the parsed text.
    public let position: Int
    /// What is wrong, including the position where that helps the reader.
    public let message: String

    package init(code: Code, position: Int, message: String) {
        self.code = code
        self.position = position
        self.message = message
    }

    public var description: String { message }

    /// The error to report to a caller: `400`, "invalid tag expression: …".
    public var heraldError: HeraldError { .badRequest("invalid tag expression: \(message)") }
}
