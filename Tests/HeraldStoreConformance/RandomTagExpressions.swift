public import Foundation
public import HeraldCore

/// Random tag expressions over random registrations, from a fixed seed so that a failure can be
/// replayed: the cases of the conformance check `randomExpressionsMatchTheReference`, which a
/// store's own tests may also inspect (to see that they exercise each way the store reads).
public enum RandomTagExpressions {
    public struct Case: Sendable {
        public var expression: TagExpression?
        public var platforms: Set<Platform>?
        public var pageSize: Int
    }

    static let tagPool = ["a", "b", "c", "d", "e", "f", "g", "username:alice", "$UserId:{bob}", "rare"]

    /// A few hundred registrations (some of them expired at `now`) and 150 cases to resolve
    /// against them, the first one with no expression.
    public static func scenario(now: Date) -> (registrations: [Registration], cases: [Case]) {
        var rng = SeededGenerator(seed: 0x4E52_4144)
        let registrations = randomRegistrations(now: now, using: &rng)
        return (registrations, randomCases(using: &rng))
    }

    static func randomExpression(depth: Int, using rng: inout SeededGenerator) -> TagExpression {
        let leaf = depth == 0 || Int.random(in: 0..<10, using: &rng) < 3
        if leaf {
            // Now and then a tag nobody has.
            if Int.random(in: 0..<25, using: &rng) == 0 { return .tag("nobody") }
            return .tag(tagPool.randomElement(using: &rng)!)
        }
        switch Int.random(in: 0..<5, using: &rng) {
        case 0: return .not(randomExpression(depth: depth - 1, using: &rng))
        case 1, 2: return .and(randomExpression(depth: depth - 1, using: &rng), randomExpression(depth: depth - 1, using: &rng))
        default: return .or(randomExpression(depth: depth - 1, using: &rng), randomExpression(depth: depth - 1, using: &rng))
        }
    }

    /// A few hundred registrations with random tags, platforms and expiry.
    static func randomRegistrations(now: Date, using rng: inout SeededGenerator) -> [Registration] {
        var registrations: [Registration] = []
        for i in 0..<400 {
            var tags: [String] = []
            for tag in tagPool where tag != "rare" && Int.random(in: 0..<3, using: &rng) == 0 { tags.append(tag) }
            if Int.random(in: 0..<40, using: &rng) == 0 { tags.append("rare") }
            let expiresAt: Date?
            if Int.random(in: 0..<10, using: &rng) == 0 {
                expiresAt = now.addingTimeInterval(-1)
            } else if i % 3 == 0 {
                expiresAt = now.addingTimeInterval(3600)
            } else {
                expiresAt = nil
            }
            let id = String(format: "%04x-%d", Int.random(in: 0..<65536, using: &rng), i)
            let platform = Platform.allCases[Int.random(in: 0..<Platform.allCases.count, using: &rng)]
            registrations.append(.sample(id: id, platform: platform, tags: tags, expiresAt: expiresAt))
        }
        return registrations
    }

    static func randomCases(using rng: inout SeededGenerator) -> [Case] {
        let platformChoices: [Set<Platform>?] = [nil, [.apns], [.fcm, .webpush], Set(Platform.allCases)]
        var cases: [Case] = []
        for round in 0..<150 {
            let expression = round == 0 ? nil : randomExpression(depth: 4, using: &rng)
            cases.append(Case(expression: expression, platforms: platformChoices[round % 4], pageSize: Int.random(in: 1...7, using: &rng)))
        }
        return cases
    }
}
