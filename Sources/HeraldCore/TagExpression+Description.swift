extension TagExpression: CustomStringConvertible {
    /// The expression in canonical form, with the fewest parentheses that keep its
    /// structure: `a && (b || !c)`, `a || b && c`, `!(a || b)`.
    ///
    /// For every expression whose tags are valid (see ``Tag``),
    /// `TagExpression(parsing: e.description) == e`: the binary operators are
    /// left-associative, so a right operand of the same operator keeps its parentheses
    /// (`a && (b && c)`).
    public var description: String {
        switch self {
        case .tag(let tag):
            return tag
        case .not(let operand):
            return "!" + operand.parenthesized(unless: operand.precedence >= Self.notPrecedence)
        case .and(let left, let right):
            return left.parenthesized(unless: left.precedence >= Self.andPrecedence) + " && "
                + right.parenthesized(unless: right.precedence > Self.andPrecedence)
        case .or(let left, let right):
            return left.parenthesized(unless: left.precedence >= Self.orPrecedence) + " || "
                + right.parenthesized(unless: right.precedence > Self.orPrecedence)
        }
    }

    private static let orPrecedence = 1
    private static let andPrecedence = 2
    private static let notPrecedence = 3

    /// How tightly the expression's top operator binds; tags bind tightest.
    private var precedence: Int {
        switch self {
        case .or: Self.orPrecedence
        case .and: Self.andPrecedence
        case .not: Self.notPrecedence
        case .tag: 4
        }
    }

    private func parenthesized(unless bare: Bool) -> String {
        bare ? description : "(\(description))"
    }
}
