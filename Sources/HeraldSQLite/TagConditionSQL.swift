package import HeraldCore
import HeraldStore

/// The SQL of ``TagQueryPlan``'s conditions for SQLite: every tag is a bound parameter, and a
/// tag test is a lookup in the tag index.
package enum TagConditionSQL {
    /// An SQL condition over the registration aliased `r` that holds when `expression` matches
    /// its tags; appends the tags to `binds` in the order of their placeholders.
    static func condition(_ expression: TagExpression, binds: inout [SQLiteData]) -> String {
        switch expression {
        case .tag(let tag):
            binds.append(.text(tag))
            return "EXISTS (SELECT 1 FROM registration_tags WHERE tag = ? AND registration_id = r.id)"
        case .not(let inner):
            return "NOT " + condition(inner, binds: &binds)
        case .and:
            let parts = TagQueryPlan.flatten(expression, and: true).map { condition($0, binds: &binds) }
            return "(" + parts.joined(separator: " AND ") + ")"
        case .or:
            // Plain tags of the chain test one index lookup each in a single EXISTS.
            let (tags, others) = TagQueryPlan.disjuncts(expression)
            var parts: [String] = []
            if !tags.isEmpty {
                binds.append(contentsOf: tags.map { .text($0) })
                parts.append(
                    "EXISTS (SELECT 1 FROM registration_tags WHERE tag IN (\(placeholders(tags.count))) AND registration_id = r.id)"
                )
            }
            parts += others.map { condition($0, binds: &binds) }
            return "(" + parts.joined(separator: " OR ") + ")"
        }
    }

    /// ``condition(_:binds:)`` with the bound values as text, for tests.
    package static func condition(_ expression: TagExpression) -> (sql: String, binds: [String]) {
        var binds: [SQLiteData] = []
        let sql = condition(expression, binds: &binds)
        return (sql, binds.map { $0.string ?? "" })
    }

    static func placeholders(_ count: Int) -> String {
        Array(repeating: "?", count: count).joined(separator: ", ")
    }
}
