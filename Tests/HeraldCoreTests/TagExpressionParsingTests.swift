import HeraldCore
import Testing

private func t(_ name: String) -> TagExpression { .tag(name) }

@Suite("Tag expression parsing")
struct TagExpressionParsingTests {
    static let parsed: [(String, TagExpression)] = [
        ("a", t("a")),
        ("  a  ", t("a")),
        ("a || b && c", .or(t("a"), .and(t("b"), t("c")))),
        ("a && b || c", .or(.and(t("a"), t("b")), t("c"))),
        ("!a && b", .and(.not(t("a")), t("b"))),
        ("!a || b", .or(.not(t("a")), t("b"))),
        ("!(a && b)", .not(.and(t("a"), t("b")))),
        ("a && b && c", .and(.and(t("a"), t("b")), t("c"))),
        ("a || b || c", .or(.or(t("a"), t("b")), t("c"))),
        ("a && (b || c)", .and(t("a"), .or(t("b"), t("c")))),
        ("a && (b && c)", .and(t("a"), .and(t("b"), t("c")))),
        ("!!a", .not(.not(t("a")))),
        ("! ! a", .not(.not(t("a")))),
        ("((a))", t("a")),
        ("a&&b||!c", .or(.and(t("a"), t("b")), .not(t("c")))),
        ("a\n&&\r\nb\t||\tc", .or(.and(t("a"), t("b")), t("c"))),
        ("a || b && !c || d", .or(.or(t("a"), .and(t("b"), .not(t("c")))), t("d"))),
        (
            "sports && !(news || follows:bob)",
            .and(t("sports"), .not(.or(t("news"), t("follows:bob"))))
        ),
        (
            "$UserId:{alice} || $InstallationId:{x=1}",
            .or(t("$UserId:{alice}"), t("$InstallationId:{x=1}"))
        ),
        ("username:alice&&from:bob", .and(t("username:alice"), t("from:bob"))),
        ("A_b@c#d.e:f-g", t("A_b@c#d.e:f-g")),
    ]

    @Test(arguments: parsed)
    func parses(_ text: String, expected: TagExpression) throws {
        #expect(try TagExpression(parsing: text) == expected)
    }

    @Test func precedenceDecidesWhoMatches() throws {
        // `a || b && c` is `a || (b && c)`: a device with only `a` matches.
        let expression = try TagExpression(parsing: "a || b && c")
        #expect(expression.matches(["a"]))
        #expect(!expression.matches(["b"]))
        #expect(expression.matches(["b", "c"]))
        // `!a && b` is `(!a) && b`: a device with neither does not match.
        let negated = try TagExpression(parsing: "!a && b")
        #expect(!negated.matches([]))
        #expect(negated.matches(["b"]))
        #expect(!negated.matches(["a", "b"]))
    }

    static let errors: [(text: String, code: TagExpressionSyntaxError.Code, position: Int, message: String)] = [
        ("", .emptyExpression, 0, "empty expression"),
        (" \t\n ", .emptyExpression, 0, "empty expression"),
        ("a &&", .expectedOperand, 4, "expected a tag or '(' at position 4"),
        ("a && )", .expectedOperand, 5, "expected a tag or '(' at position 5"),
        ("a && || b", .expectedOperand, 5, "expected a tag or '(' at position 5"),
        ("|| a", .expectedOperand, 0, "expected a tag or '(' at position 0"),
        ("()", .expectedOperand, 1, "expected a tag or '(' at position 1"),
        ("!", .expectedOperand, 1, "expected a tag or '(' at position 1"),
        (")", .expectedOperand, 0, "expected a tag or '(' at position 0"),
        ("(a || b) && c)", .unexpectedClosingParenthesis, 13, "unexpected ')' at position 13"),
        ("a\n&&\tb )", .unexpectedClosingParenthesis, 7, "unexpected ')' at position 7"),
        ("a & b", .singleOperatorCharacter, 2, "'&' must be doubled ('&&') at position 2"),
        ("a &&& b", .singleOperatorCharacter, 4, "'&' must be doubled ('&&') at position 4"),
        ("a | b", .singleOperatorCharacter, 2, "'|' must be doubled ('||') at position 2"),
        ("a ||| b", .singleOperatorCharacter, 4, "'|' must be doubled ('||') at position 4"),
        ("a &", .singleOperatorCharacter, 2, "'&' must be doubled ('&&') at position 2"),
        ("(a && b", .missingClosingParenthesis, 0, "missing ')' for '(' at position 0"),
        ("x && (a || (b)", .missingClosingParenthesis, 5, "missing ')' for '(' at position 5"),
        ("a b", .expectedOperator, 2, "expected '&&' or '||' at position 2"),
        ("a ! b", .expectedOperator, 2, "expected '&&' or '||' at position 2"),
        ("a (b)", .expectedOperator, 2, "expected '&&' or '||' at position 2"),
        ("(a b)", .expectedOperator, 3, "expected '&&', '||' or ')' at position 3"),
        ("a && b%", .unexpectedCharacter, 6, "unexpected character '%' at position 6"),
        ("a && ñ", .unexpectedCharacter, 5, "unexpected character 'ñ' at position 5"),
        ("\"a\"", .unexpectedCharacter, 0, "unexpected character '\"' at position 0"),
        ("a\u{0}", .unexpectedCharacter, 1, "unexpected character U+0000 at position 1"),
        ("a\u{00A0}&& b", .unexpectedCharacter, 1, "unexpected character U+00A0 at position 1"),
        // "\r\n" is one character: positions count characters, not bytes or scalars.
        ("a\r\n&& )", .expectedOperand, 5, "expected a tag or '(' at position 5"),
        ("(a) && 👍🏽", .unexpectedCharacter, 7, "unexpected character '👍🏽' at position 7"),
        (
            "a && $Foo:{x}", .invalidTag, 5,
            "tag '$Foo:{x}' is invalid: '$' at position 5 may only begin the system tags $InstallationId:{…} and $UserId:{…}"
        ),
        (
            "sports || news=x", .invalidTag, 14,
            "tag 'news=x' is invalid: character '=' at position 14 is not allowed; tags use ASCII letters, digits and _ @ # . : -"
        ),
        (
            "a || $UserId:{}", .invalidTag, 14,
            "tag '$UserId:{}' is invalid: the value between '{' and '}' must not be empty (position 14)"
        ),
        (
            "!$UserId:{a}}", .invalidTag, 12,
            "tag '$UserId:{a}}' is invalid: unexpected character '}' at position 12 after the closing '}'"
        ),
        (
            "a || " + String(repeating: "b", count: 121), .invalidTag, 5,
            "tag '\(String(repeating: "b", count: 40))…' is invalid: it is 121 characters long; a tag has at most 120"
        ),
        // The first problem by position wins.
        ("a b=", .expectedOperator, 2, "expected '&&' or '||' at position 2"),
        ("(a %", .unexpectedCharacter, 3, "unexpected character '%' at position 3"),
    ]

    @Test(arguments: errors)
    func reportsError(
        _ text: String,
        code: TagExpressionSyntaxError.Code,
        position: Int,
        message: String
    ) throws {
        let error = try #require(throws: TagExpressionSyntaxError.self) {
            try TagExpression(parsing: text)
        }
        #expect(error.code == code)
        #expect(error.position == position)
        #expect(error.message == message)
        #expect(error.description == message)
    }

    @Test func invalidTagMessageIsTagValidationsMessage() throws {
        // The parser reuses Tag's rules and wording; only positions move into the text.
        let fromTag = try #require(throws: HeraldError.self) { try Tag.validate("$UserId:{}") }
        let fromParser = try #require(throws: TagExpressionSyntaxError.self) {
            try TagExpression(parsing: "$UserId:{}")
        }
        #expect(fromTag.message == fromParser.message)
    }

    @Test func heraldErrorIsABadRequest() throws {
        let error = try #require(throws: TagExpressionSyntaxError.self) { try TagExpression(parsing: "a &&") }
        #expect(error.heraldError.code == .badRequest)
        #expect(error.heraldError.message == "invalid tag expression: expected a tag or '(' at position 4")
        #expect(error.heraldError.code.httpStatus == 400)
    }

    // MARK: Limits

    @Test func lengthLimit() throws {
        #expect(TagExpression.maxLength == 4096)
        let atLimit = "a" + String(repeating: " ", count: 4095)
        #expect(try TagExpression(parsing: atLimit) == t("a"))
        let error = try #require(throws: TagExpressionSyntaxError.self) {
            try TagExpression(parsing: atLimit + " ")
        }
        #expect(error.code == .tooLong)
        #expect(error.position == 4096)
        #expect(error.message == "expression is longer than 4096 characters")
    }

    @Test func hugeInputIsRefusedByLength() throws {
        let huge = String(repeating: "(", count: 1_000_000)
        let error = try #require(throws: TagExpressionSyntaxError.self) { try TagExpression(parsing: huge) }
        #expect(error.code == .tooLong)
    }

    @Test func tagCountLimit() throws {
        #expect(TagExpression.maxTags == 100)
        let hundred = (1...100).map { "t\($0)" }.joined(separator: " || ")
        let parsed = try TagExpression(parsing: hundred)
        #expect(parsed.tags.count == 100)
        // Occurrences count, not distinct tags.
        let repeated = Array(repeating: "a", count: 101).joined(separator: "||")
        let error = try #require(throws: TagExpressionSyntaxError.self) {
            try TagExpression(parsing: repeated)
        }
        #expect(error.code == .tooManyTags)
        #expect(error.position == 300)
        #expect(error.message == "expression has more than 100 tags; tag 101 is at position 300")
    }

    @Test func parenthesisDepthLimit() throws {
        #expect(TagExpression.maxDepth == 32)
        let ok = String(repeating: "(", count: 32) + "a" + String(repeating: ")", count: 32)
        #expect(try TagExpression(parsing: ok) == t("a"))
        let deep = String(repeating: "(", count: 33) + "a" + String(repeating: ")", count: 33)
        let error = try #require(throws: TagExpressionSyntaxError.self) { try TagExpression(parsing: deep) }
        #expect(error.code == .tooDeep)
        #expect(error.position == 32)
        #expect(error.message == "expression is nested more than 32 levels deep at position 32")
    }

    @Test func negationCountsAsNesting() throws {
        let ok = String(repeating: "!", count: 32) + "a"
        var expected = t("a")
        for _ in 0..<32 { expected = .not(expected) }
        #expect(try TagExpression(parsing: ok) == expected)

        let error = try #require(throws: TagExpressionSyntaxError.self) {
            try TagExpression(parsing: String(repeating: "!", count: 33) + "a")
        }
        #expect(error.code == .tooDeep)
        #expect(error.position == 32)

        let mixed = String(repeating: "!(", count: 16) + "a" + String(repeating: ")", count: 16)
        _ = try TagExpression(parsing: mixed)
        let tooMixed = "(" + mixed + ")"
        let mixedError = try #require(throws: TagExpressionSyntaxError.self) {
            try TagExpression(parsing: tooMixed)
        }
        #expect(mixedError.code == .tooDeep)
        #expect(mixedError.position == 32)
    }

    @Test func siblingsDoNotAddDepth() throws {
        // Depth is nesting, not the number of groups: 50 groups side by side are fine.
        let groups = (1...50).map { "(t\($0) || !u\($0))" }.joined(separator: " && ")
        let parsed = try TagExpression(parsing: groups)
        #expect(parsed.tags.count == 100)
    }

    @Test func hostileInputWithinLengthFailsCleanly() {
        for text in [
            String(repeating: "(", count: 4096), String(repeating: "!", count: 4096),
            String(repeating: "(a&&", count: 1024), String(repeating: "a||", count: 1365),
        ] {
            #expect(throws: TagExpressionSyntaxError.self) { try TagExpression(parsing: text) }
        }
    }

    // MARK: Canonical form

    static let canonical: [(TagExpression, String)] = [
        (t("a"), "a"),
        (.not(t("a")), "!a"),
        (.not(.not(t("a"))), "!!a"),
        (.and(t("a"), .or(t("b"), .not(t("c")))), "a && (b || !c)"),
        (.or(t("a"), .and(t("b"), t("c"))), "a || b && c"),
        (.and(.or(t("a"), t("b")), t("c")), "(a || b) && c"),
        (.and(t("a"), .and(t("b"), t("c"))), "a && (b && c)"),
        (.and(.and(t("a"), t("b")), t("c")), "a && b && c"),
        (.or(.or(t("a"), t("b")), t("c")), "a || b || c"),
        (.or(t("a"), .or(t("b"), t("c"))), "a || (b || c)"),
        (.not(.and(t("a"), t("b"))), "!(a && b)"),
        (.not(.or(t("a"), t("b"))), "!(a || b)"),
        (.or(.and(t("a"), t("b")), .and(t("c"), t("d"))), "a && b || c && d"),
        (.and(.not(t("$UserId:{x}")), t("b")), "!$UserId:{x} && b"),
    ]

    @Test(arguments: canonical)
    func canonicalForm(_ expression: TagExpression, text: String) throws {
        #expect(expression.description == text)
        #expect(try TagExpression(parsing: text) == expression)
    }
}
