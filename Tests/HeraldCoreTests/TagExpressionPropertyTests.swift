import HeraldCore
import Testing

/// Random expressions from a seeded generator, checked against properties and against an
/// evaluator written independently of the parser.
@Suite("Tag expression properties")
struct TagExpressionPropertyTests {
    static let seeds: [UInt64] = [1, 2, 3, 42, 2024, 0xC0FFEE, 0xDEAD_BEEF]

    @Test func splitMix64MatchesReferenceOutput() {
        // First outputs for seed 0 of the reference implementation (Vigna, splitmix64.c).
        var generator = SplitMix64(seed: 0)
        #expect(generator.next() == 0xE220_A839_7B1D_CDAF)
        #expect(generator.next() == 0x6E78_9E6A_A1B9_65F4)
    }

    // MARK: description → parse round trip

    @Test(arguments: seeds)
    func descriptionRoundTrips(seed: UInt64) throws {
        var generator = ExpressionGenerator(seed: seed)
        for _ in 0..<500 {
            let expression = generator.expression(depth: 6)
            let text = expression.description
            let parsed = try TagExpression(parsing: text)
            #expect(parsed == expression, "seed \(seed): \(text)")
            #expect(parsed.description == text, "seed \(seed): \(text)")
        }
    }

    // MARK: parser + matches against an independent evaluator

    @Test(arguments: seeds)
    func parsedTextEvaluatesLikeReferenceEvaluator(seed: UInt64) throws {
        var generator = ExpressionGenerator(seed: seed)
        let pool = ExpressionGenerator.evaluationPool
        for _ in 0..<300 {
            let text = generator.text(depth: 0)
            let expression = try TagExpression(parsing: text)
            let tokens = ReferenceEvaluator.tokens(text)
            // Truth table over every subset of the pool, plus an unrelated tag.
            for mask in 0..<(1 << pool.count) {
                var deviceTags: Set<String> = ["unrelated"]
                for (bit, tag) in pool.enumerated() where mask & (1 << bit) != 0 { deviceTags.insert(tag) }
                let expected = try ReferenceEvaluator.evaluate(tokens, tags: deviceTags)
                #expect(
                    expression.matches(deviceTags) == expected,
                    "seed \(seed): \(text) with \(deviceTags.sorted())"
                )
            }
        }
    }

    @Test(arguments: seeds)
    func canonicalFormEvaluatesLikeReferenceEvaluator(seed: UInt64) throws {
        var generator = ExpressionGenerator(seed: seed)
        for _ in 0..<300 {
            let expression = generator.expression(depth: 5, tags: ExpressionGenerator.evaluationPool)
            let tokens = ReferenceEvaluator.tokens(expression.description)
            for _ in 0..<16 {
                let deviceTags = generator.deviceTags()
                #expect(
                    expression.matches(deviceTags) == (try ReferenceEvaluator.evaluate(tokens, tags: deviceTags)),
                    "seed \(seed): \(expression) with \(deviceTags.sorted())"
                )
            }
        }
    }

    // MARK: De Morgan

    @Test(arguments: seeds)
    func negationNormalFormAgrees(seed: UInt64) {
        var generator = ExpressionGenerator(seed: seed)
        for _ in 0..<300 {
            let expression = generator.expression(depth: 6, tags: ExpressionGenerator.evaluationPool)
            let normal = Self.negationNormalForm(expression, negated: false)
            let doubleNegated = TagExpression.not(Self.negationNormalForm(expression, negated: true))
            for _ in 0..<16 {
                let deviceTags = generator.deviceTags()
                let value = expression.matches(deviceTags)
                #expect(normal.matches(deviceTags) == value, "seed \(seed): \(expression) vs \(normal)")
                #expect(doubleNegated.matches(deviceTags) == value, "seed \(seed): \(expression)")
            }
        }
    }

    @Test(arguments: seeds)
    func tagsAreTheTagsOfTheText(seed: UInt64) throws {
        var generator = ExpressionGenerator(seed: seed)
        for _ in 0..<200 {
            let text = generator.text(depth: 0)
            let mentioned = Set(
                ReferenceEvaluator.tokens(text).compactMap { token -> String? in
                    if case .tag(let tag) = token { return tag }
                    return nil
                })
            #expect(try TagExpression(parsing: text).tags == mentioned, "seed \(seed): \(text)")
        }
    }

    /// Pushes every negation down to the tags with De Morgan's laws.
    static func negationNormalForm(_ expression: TagExpression, negated: Bool) -> TagExpression {
        switch expression {
        case .tag: negated ? .not(expression) : expression
        case .not(let operand): negationNormalForm(operand, negated: !negated)
        case .and(let a, let b):
            negated
                ? .or(negationNormalForm(a, negated: true), negationNormalForm(b, negated: true))
                : .and(negationNormalForm(a, negated: false), negationNormalForm(b, negated: false))
        case .or(let a, let b):
            negated
                ? .and(negationNormalForm(a, negated: true), negationNormalForm(b, negated: true))
                : .or(negationNormalForm(a, negated: false), negationNormalForm(b, negated: false))
        }
    }
}

/// Random tags, expressions and expression texts.
struct ExpressionGenerator {
    /// Few tags, so that a truth table over all of them is small.
    static let evaluationPool = ["a", "b", "sports", "username:alice", "$UserId:{x=1}"]

    private static let tagCharacters = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@#.:-")
    private static let whitespace = ["", "", " ", " ", "  ", "\t", "\n", "\r\n"]

    var random: SplitMix64

    init(seed: UInt64) { random = SplitMix64(seed: seed) }

    /// Any valid tag: ordinary ones of every length and system tags.
    mutating func tag() -> String {
        if random.oneIn(8) {
            let name = random.pick(["$UserId:", "$InstallationId:"])
            let value = String(
                (0..<(1 + random.int(below: 10))).map { _ in
                    random.oneIn(6) ? "=" : random.pick(Self.tagCharacters)
                })
            return name + "{" + value + "}"
        }
        let length = random.oneIn(20) ? Tag.maxLength : 1 + random.int(below: 12)
        return String((0..<length).map { _ in random.pick(Self.tagCharacters) })
    }

    /// A random tree with at most `depth` levels below the root.
    mutating func expression(depth: Int, tags: [String]? = nil) -> TagExpression {
        if depth == 0 || random.oneIn(4) {
            return .tag(tags.map { random.pick($0) } ?? tag())
        }
        switch random.int(below: 3) {
        case 0: return .not(expression(depth: depth - 1, tags: tags))
        case 1: return .and(expression(depth: depth - 1, tags: tags), expression(depth: depth - 1, tags: tags))
        default: return .or(expression(depth: depth - 1, tags: tags), expression(depth: depth - 1, tags: tags))
        }
    }

    /// A valid expression text over ``evaluationPool``, built without regard to precedence:
    /// `!` before any sub-text, redundant parentheses, and random whitespace.
    mutating func text(depth: Int) -> String {
        let choice = depth >= 6 ? 0 : random.int(below: 7)
        switch choice {
        case 1: return "!" + space() + text(depth: depth + 1)
        case 2: return "(" + space() + text(depth: depth + 1) + space() + ")"
        case 3, 4:
            return text(depth: depth + 1) + space() + "&&" + space() + text(depth: depth + 1)
        case 5, 6:
            return text(depth: depth + 1) + space() + "||" + space() + text(depth: depth + 1)
        default: return random.pick(Self.evaluationPool)
        }
    }

    mutating func deviceTags() -> Set<String> {
        Set(Self.evaluationPool.filter { _ in random.oneIn(2) })
    }

    private mutating func space() -> String { random.pick(Self.whitespace) }
}

/// An operator-precedence (shunting-yard) evaluator over the text, sharing no code with
/// the parser: `!` binds tightest, then `&&`, then `||`; binary operators are
/// left-associative.
enum ReferenceEvaluator {
    enum Token: Equatable {
        case tag(String)
        case not, and, or, open, close
    }

    struct Malformed: Error {}

    static func tokens(_ text: String) -> [Token] {
        var tokens: [Token] = []
        var characters = Array(text)[...]
        while let character = characters.first {
            switch character {
            case " ", "\t", "\n", "\r", "\r\n": characters.removeFirst()
            case "(":
                tokens.append(.open)
                characters.removeFirst()
            case ")":
                tokens.append(.close)
                characters.removeFirst()
            case "!":
                tokens.append(.not)
                characters.removeFirst()
            case "&":
                tokens.append(.and)
                characters.removeFirst(2)
            case "|":
                tokens.append(.or)
                characters.removeFirst(2)
            default:
                let tag = characters.prefix { !" \t\n\r\r\n()!&|".contains($0) }
                tokens.append(.tag(String(tag)))
                characters.removeFirst(tag.count)
            }
        }
        return tokens
    }

    static func evaluate(_ tokens: [Token], tags: Set<String>) throws -> Bool {
        var values: [Bool] = []
        var operators: [Token] = []

        func precedence(_ token: Token) -> Int {
            switch token {
            case .not: 3
            case .and: 2
            case .or: 1
            default: 0
            }
        }
        func apply(_ token: Token) throws {
            switch token {
            case .not:
                guard let value = values.popLast() else { throw Malformed() }
                values.append(!value)
            case .and, .or:
                guard let right = values.popLast(), let left = values.popLast() else { throw Malformed() }
                values.append(token == .and ? left && right : left || right)
            default: throw Malformed()
            }
        }

        for token in tokens {
            switch token {
            case .tag(let tag): values.append(tags.contains(tag))
            case .not, .open: operators.append(token)  // prefix: nothing to reduce yet
            case .close:
                while let top = operators.last, top != .open { try apply(operators.removeLast()) }
                guard operators.popLast() == .open else { throw Malformed() }
            case .and, .or:
                while let top = operators.last, top != .open, precedence(top) >= precedence(token) {
                    try apply(operators.removeLast())
                }
                operators.append(token)
            }
        }
        while let top = operators.popLast() { try apply(top) }
        guard values.count == 1 else { throw Malformed() }
        return values[0]
    }
}
