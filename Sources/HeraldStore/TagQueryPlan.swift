package import HeraldCore

/// How a store reads a page of the registrations that a tag expression targets; each store
/// turns the plan into its own SQL.
///
/// A tag that every match must carry (the expression itself, or a tag in its top-level `&&`
/// chain) drives the read: the store walks that tag's index rows in id order and checks the
/// rest per row, so a tag held by 100k of 1M registrations reads ~100k index rows, not 1M
/// registrations. A top-level `||` of plain tags drives a merge of those tags' index rows.
/// Anything else (`!a`, `(a && b) || c`) scans registrations in id order.
package enum TagQueryPlan: Equatable, Sendable {
    /// Read every registration in id order; `condition` is `nil` for all.
    case scan(condition: TagExpression?)
    /// Walk the index rows of `tag`; check `rest` per row.
    case tag(String, rest: [TagExpression])
    /// Merge the index rows of `tags` (two or more); check `rest` per row.
    case anyTag([String], rest: [TagExpression])

    /// Expressions larger than this are refused rather than handed to the database.
    package static let maxNodes = 500
    /// A `||` of at most this many tags drives the query by merging their index rows.
    package static let maxDrivingTags = 64

    /// The plan for `expression` (`nil` targets every registration).
    ///
    /// - Throws: ``HeraldError/badRequest(_:)`` if the expression has more than ``maxNodes``
    ///   tags and operators.
    package init(_ expression: TagExpression?) throws(HeraldError) {
        guard let expression else {
            self = .scan(condition: nil)
            return
        }
        if Self.size(expression) > Self.maxNodes {
            throw .badRequest("the tag expression is too long; use at most \(Self.maxNodes) tags and operators")
        }
        let conjuncts = Self.flatten(expression, and: true)
        if let index = conjuncts.firstIndex(where: { if case .tag = $0 { true } else { false } }),
            case .tag(let tag) = conjuncts[index]
        {
            var rest = conjuncts
            rest.remove(at: index)
            rest.removeAll { $0 == .tag(tag) }
            self = .tag(tag, rest: rest)
            return
        }
        for (index, conjunct) in conjuncts.enumerated() {
            guard case .or = conjunct else { continue }
            var tags: [String] = []
            var allTags = true
            for disjunct in Self.flatten(conjunct, and: false) {
                guard case .tag(let tag) = disjunct else {
                    allTags = false
                    break
                }
                if !tags.contains(tag) { tags.append(tag) }
            }
            guard allTags, tags.count <= Self.maxDrivingTags else { continue }
            var rest = conjuncts
            rest.remove(at: index)
            self = tags.count == 1 ? .tag(tags[0], rest: rest) : .anyTag(tags, rest: rest)
            return
        }
        self = .scan(condition: expression)
    }

    /// The operands of a chain of `&&` (or `||`), left to right, without recursion on the chain.
    package static func flatten(_ expression: TagExpression, and: Bool) -> [TagExpression] {
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

    /// The distinct plain tags of an `||` chain, in order, and its other operands.
    package static func disjuncts(_ expression: TagExpression) -> (tags: [String], others: [TagExpression]) {
        var tags: [String] = []
        var others: [TagExpression] = []
        for disjunct in flatten(expression, and: false) {
            if case .tag(let tag) = disjunct {
                if !tags.contains(tag) { tags.append(tag) }
            } else {
                others.append(disjunct)
            }
        }
        return (tags, others)
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
}
