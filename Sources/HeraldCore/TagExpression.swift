/// A boolean expression over tags: `sports && !(news || follows:bob)`.
///
/// Grammar (precedence `!` > `&&` > `||`, left-associative, parentheses group):
///
///     expression := or
///     or         := and ( "||" and )*
///     and        := unary ( "&&" unary )*
///     unary      := "!" unary | primary
///     primary    := tag | "(" expression ")"
///
/// A tag is written as it is, without quotes (see ``Tag`` for the characters it may hold).
/// Parse with ``init(parsing:)``, which also enforces ``maxLength``, ``maxTags`` and
/// ``maxDepth``; evaluate with ``matches(_:)``; ``description`` prints the canonical form.
public indirect enum TagExpression: Sendable, Hashable {
    case tag(String)
    case not(TagExpression)
    case and(TagExpression, TagExpression)
    case or(TagExpression, TagExpression)

    /// Whether a device with these tags is targeted.
    public func matches(_ tags: Set<String>) -> Bool {
        switch self {
        case .tag(let t): tags.contains(t)
        case .not(let e): !e.matches(tags)
        case .and(let a, let b): a.matches(tags) && b.matches(tags)
        case .or(let a, let b): a.matches(tags) || b.matches(tags)
        }
    }

    /// Every tag the expression mentions.
    public var tags: Set<String> {
        switch self {
        case .tag(let t): [t]
        case .not(let e): e.tags
        case .and(let a, let b), .or(let a, let b): a.tags.union(b.tags)
        }
    }
}
