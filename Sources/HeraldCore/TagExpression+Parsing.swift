extension TagExpression {
    /// The longest expression text, in characters.
    public static let maxLength = 4096
    /// The most tags an expression may mention (each occurrence counts).
    public static let maxTags = 100
    /// The deepest nesting of `(` and `!` an expression may have.
    ///
    /// These limits are Herald's own: far above what anyone writes by hand, and low enough
    /// that hostile input cannot exhaust the stack of the parser or of ``matches(_:)``.
    public static let maxDepth = 32

    /// Parses a tag expression such as `sports && !(news || follows:bob)`.
    ///
    /// Operators are `!`, `&&` and `||` (precedence in that order, binary ones
    /// left-associative); parentheses group; whitespace may separate tokens. A tag is a
    /// maximal run of tag characters (see ``Tag``), so the system tags
    /// `$InstallationId:{…}` and `$UserId:{…}` can be written as they are; every tag is
    /// checked with the rules of ``Tag/validate(_:)``.
    ///
    /// - Throws: a ``TagExpressionSyntaxError`` for the first problem in the text, with its
    ///   position in characters.
    public init(parsing text: String) throws(TagExpressionSyntaxError) {
        var parser = try TagExpressionParser(text: text)
        self = try parser.parse()
    }
}

/// A recursive-descent parser over characters; the lexer runs one token ahead, so every
/// error is reported at the first place the text goes wrong.
struct TagExpressionParser {
    enum Token: Equatable {
        case tag(String)
        case and, or, not, open, close, end
    }

    private let characters: [Character]
    /// Where the lexer continues.
    private var index = 0
    /// The token the parser looks at, and where it starts.
    private var token: Token = .end
    private var tokenPosition = 0
    private var tagCount = 0
    private var depth = 0

    init(text: String) throws(TagExpressionSyntaxError) {
        var count = 0
        for _ in text {
            count += 1
            if count > TagExpression.maxLength {
                throw TagExpressionSyntaxError(
                    code: .tooLong,
                    position: TagExpression.maxLength,
                    message: "expression is longer than \(TagExpression.maxLength) characters"
                )
            }
        }
        characters = Array(text)
        try advance()
    }

    mutating func parse() throws(TagExpressionSyntaxError) -> TagExpression {
        if token == .end {
            throw TagExpressionSyntaxError(code: .emptyExpression, position: 0, message: "empty expression")
        }
        let expression = try parseOr()
        switch token {
        case .end:
            return expression
        case .close:
            throw error(.unexpectedClosingParenthesis, "unexpected ')' at position \(tokenPosition)")
        default:
            throw error(.expectedOperator, "expected '&&' or '||' at position \(tokenPosition)")
        }
    }

    // MARK: Grammar

    private mutating func parseOr() throws(TagExpressionSyntaxError) -> TagExpression {
        var left = try parseAnd()
        while token == .or {
            try advance()
            left = .or(left, try parseAnd())
        }
        return left
    }

    private mutating func parseAnd() throws(TagExpressionSyntaxError) -> TagExpression {
        var left = try parseUnary()
        while token == .and {
            try advance()
            left = .and(left, try parseUnary())
        }
        return left
    }

    private mutating func parseUnary() throws(TagExpressionSyntaxError) -> TagExpression {
        // A loop rather than recursion, so a run of `!` costs no stack.
        var negations = 0
        while token == .not {
            try enter()
            negations += 1
            try advance()
        }
        var expression = try parsePrimary()
        for _ in 0..<negations { expression = .not(expression) }
        depth -= negations
        return expression
    }

    private mutating func parsePrimary() throws(TagExpressionSyntaxError) -> TagExpression {
        switch token {
        case .tag(let tag):
            if let problem = Tag.problem(in: tag) {
                throw TagExpressionSyntaxError(
                    code: .invalidTag,
                    position: tokenPosition + problem.offset,
                    message: problem.message(for: tag, positionBase: tokenPosition)
                )
            }
            tagCount += 1
            if tagCount > TagExpression.maxTags {
                throw error(
                    .tooManyTags,
                    "expression has more than \(TagExpression.maxTags) tags; tag \(tagCount) is at position \(tokenPosition)"
                )
            }
            try advance()
            return .tag(tag)
        case .open:
            let openPosition = tokenPosition
            try enter()
            try advance()
            let expression = try parseOr()
            switch token {
            case .close:
                depth -= 1
                try advance()
                return expression
            case .end:
                throw TagExpressionSyntaxError(
                    code: .missingClosingParenthesis,
                    position: openPosition,
                    message: "missing ')' for '(' at position \(openPosition)"
                )
            default:
                throw error(.expectedOperator, "expected '&&', '||' or ')' at position \(tokenPosition)")
            }
        default:
            throw error(.expectedOperand, "expected a tag or '(' at position \(tokenPosition)")
        }
    }

    /// One level deeper, for a `(` or a `!` at the current token.
    private mutating func enter() throws(TagExpressionSyntaxError) {
        depth += 1
        if depth > TagExpression.maxDepth {
            throw error(
                .tooDeep,
                "expression is nested more than \(TagExpression.maxDepth) levels deep at position \(tokenPosition)"
            )
        }
    }

    private func error(_ code: TagExpressionSyntaxError.Code, _ message: String) -> TagExpressionSyntaxError {
        TagExpressionSyntaxError(code: code, position: tokenPosition, message: message)
    }

    // MARK: Lexer

    /// Reads the next token into `token` and `tokenPosition`.
    private mutating func advance() throws(TagExpressionSyntaxError) {
        while index < characters.count, Self.isWhitespace(characters[index]) { index += 1 }
        tokenPosition = index
        guard index < characters.count else {
            token = .end
            return
        }
        let character = characters[index]
        switch character {
        case "(":
            token = .open
            index += 1
        case ")":
            token = .close
            index += 1
        case "!":
            token = .not
            index += 1
        case "&", "|":
            guard index + 1 < characters.count, characters[index + 1] == character else {
                throw error(
                    .singleOperatorCharacter,
                    "'\(character)' must be doubled ('\(character)\(character)') at position \(index)"
                )
            }
            token = character == "&" ? .and : .or
            index += 2
        default:
            guard Self.isTagTokenCharacter(character) else {
                throw error(
                    .unexpectedCharacter,
                    "unexpected character \(Tag.describe(character)) at position \(index)"
                )
            }
            let start = index
            while index < characters.count, Self.isTagTokenCharacter(characters[index]) { index += 1 }
            token = .tag(String(characters[start..<index]))
        }
    }

    private static func isWhitespace(_ character: Character) -> Bool {
        switch character {
        case " ", "\t", "\n", "\r", "\r\n": true
        default: false
        }
    }

    /// Tag characters, plus those of the system tags `$UserId:{a=b}`.
    private static func isTagTokenCharacter(_ character: Character) -> Bool {
        switch character {
        case "$", "{", "}", "=": true
        default: Tag.isTagCharacter(character)
        }
    }
}
