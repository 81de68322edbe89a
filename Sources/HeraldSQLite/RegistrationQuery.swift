package import HeraldCore
import SQLiteNIO
import HeraldStore

/// How a page of registrations matching a tag expression is read.
///
/// The expression compiles to SQL over the tag index, every tag a bound parameter. A tag
/// that every match must carry (the expression itself, or a tag in its top-level `&&` chain)
/// drives the query: SQLite walks that tag's index rows in id order and checks the rest per
/// row, so a tag held by 100k of 1M registrations reads ~100k index rows, not 1M
/// registrations. A top-level `||` of plain tags drives a merge of those tags' index rows.
/// Anything else (`!a`, `(a && b) || c`) scans registrations in id order.
package struct RegistrationQuery {
    /// Expressions larger than this are refused rather than handed to SQLite.
    static let maxNodes = 500
    /// A `||` of at most this many tags drives the query by merging their index rows.
    static let maxDrivingTags = 64

    package enum Plan: Equatable, Sendable {
        /// Read every registration in id order; `condition` is `nil` for all.
        case scan(condition: TagExpression?)
        /// Walk the index rows of `tag`; check `rest` per row.
        case tag(String, rest: [TagExpression])
        /// Merge the index rows of `tags` (two or more); check `rest` per row.
        case anyTag([String], rest: [TagExpression])
    }

    package static func plan(_ expression: TagExpression?) -> Plan {
        guard let expression else { return .scan(condition: nil) }
        let conjuncts = flatten(expression, and: true)
        if let index = conjuncts.firstIndex(where: { if case .tag = $0 { true } else { false } }),
            case .tag(let tag) = conjuncts[index]
        {
            var rest = conjuncts
            rest.remove(at: index)
            rest.removeAll { $0 == .tag(tag) }
            return .tag(tag, rest: rest)
        }
        for (index, conjunct) in conjuncts.enumerated() {
            guard case .or = conjunct else { continue }
            var tags: [String] = []
            var allTags = true
            for disjunct in flatten(conjunct, and: false) {
                guard case .tag(let tag) = disjunct else {
                    allTags = false
                    break
                }
                if !tags.contains(tag) { tags.append(tag) }
            }
            guard allTags, tags.count <= maxDrivingTags else { continue }
            var rest = conjuncts
            rest.remove(at: index)
            return tags.count == 1 ? .tag(tags[0], rest: rest) : .anyTag(tags, rest: rest)
        }
        return .scan(condition: expression)
    }

    /// The operands of a chain of `&&` (or `||`), left to right, without recursion on the chain.
    static func flatten(_ expression: TagExpression, and: Bool) -> [TagExpression] {
        var result: [TagExpression] = []
        var stack = [expression]
        while let next = stack.popLast() {
            switch next {
            case .and(let a, let b) where and, .or(let a, let b) where !and:
                stack.append(b)
                stack.append(a)
            default:
                result.append(next)
            }
        }
        return result
    }

    /// Number of nodes, counted up to a bound.
    static func size(_ expression: TagExpression, limit: Int = maxNodes + 1) -> Int {
        var count = 0
        var stack = [expression]
        while let next = stack.popLast(), count < limit {
            count += 1
            switch next {
            case .tag: break
            case .not(let e): stack.append(e)
            case .and(let a, let b), .or(let a, let b):
                stack.append(b)
                stack.append(a)
            }
        }
        return count
    }

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
            let parts = flatten(expression, and: true).map { condition($0, binds: &binds) }
            return "(" + parts.joined(separator: " AND ") + ")"
        case .or:
            // Plain tags of the chain test one index lookup each in a single EXISTS.
            var tags: [String] = []
            var others: [TagExpression] = []
            for disjunct in flatten(expression, and: false) {
                if case .tag(let tag) = disjunct {
                    if !tags.contains(tag) { tags.append(tag) }
                } else {
                    others.append(disjunct)
                }
            }
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
