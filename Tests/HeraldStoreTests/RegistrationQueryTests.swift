import Foundation
import HeraldCore
import HeraldStore
import HeraldTestSupport
import Testing

@Suite("Resolving tag expressions")
struct RegistrationQueryTests {
    static let tagPool = ["a", "b", "c", "d", "e", "f", "g", "username:alice", "$UserId:{bob}", "rare"]

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

    /// Every page from the start, `pageSize` at a time.
    static func allPages(
        _ store: SQLiteStore, _ expression: TagExpression?, platforms: Set<Platform>?, pageSize: Int
    ) async throws -> [String] {
        var ids: [String] = []
        var cursor: String?
        while true {
            let page = try await store.registrations(matching: expression, platforms: platforms, after: cursor, limit: pageSize)
            #expect(page.count <= pageSize)
            ids += page.map(\.id)
            guard page.count == pageSize, let last = page.last else { break }
            cursor = last.id
        }
        return ids
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

    struct Case: Sendable {
        var expression: TagExpression?
        var platforms: Set<Platform>?
        var pageSize: Int
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

    @Test func randomExpressionsMatchTheReference() async throws {
        let clock = TestClock()
        var rng = SeededGenerator(seed: 0x4E52_4144)
        let registrations = Self.randomRegistrations(now: clock.now, using: &rng)
        let cases = Self.randomCases(using: &rng)
        let now = clock.now
        let live = registrations.filter { $0.expiresAt.map { $0 > now } ?? true }

        try await withStore(clock: clock) { store, _ in
            try await store.insertRegistrations(registrations)
            for testCase in cases {
                let expected = live
                    .filter { testCase.platforms?.contains($0.platform) ?? true }
                    .filter { testCase.expression?.matches(Set($0.tags)) ?? true }
                    .map(\.id)
                    .sorted()
                let found = try await Self.allPages(store, testCase.expression, platforms: testCase.platforms, pageSize: testCase.pageSize)
                #expect(found == expected, "\(String(describing: testCase.expression)) on \(String(describing: testCase.platforms)), pages of \(testCase.pageSize)")
            }
        }

        // Every way of reading was exercised.
        var plans: [String: Int] = [:]
        for testCase in cases {
            switch RegistrationQuery.plan(testCase.expression) {
            case .scan: plans["scan", default: 0] += 1
            case .tag: plans["tag", default: 0] += 1
            case .anyTag: plans["anyTag", default: 0] += 1
            }
        }
        #expect(plans["scan", default: 0] > 5)
        #expect(plans["tag", default: 0] > 5)
        #expect(plans["anyTag", default: 0] > 5)
    }

    @Test func parsedExpressionsResolve() async throws {
        try await withStore { store, _ in
            try await store.insertRegistrations([
                .sample(id: "1", tags: ["sports", "news"]),
                .sample(id: "2", tags: ["sports"]),
                .sample(id: "3", tags: ["follows:bob"]),
                .sample(id: "4", tags: ["news"]),
            ])
            let cases: [(String, [String])] = [
                ("sports", ["1", "2"]),
                ("sports && !news", ["2"]),
                ("!(sports || news)", ["3"]),
                ("news || follows:bob", ["1", "3", "4"]),
                ("(news || follows:bob) && !sports", ["3", "4"]),
            ]
            for (text, ids) in cases {
                let expression = try TagExpression(parsing: text)
                #expect(try await store.registrations(matching: expression, platforms: nil, after: nil, limit: 100).map(\.id) == ids, "\(text)")
            }
        }
    }

    @Test func platformFilterAndExpiry() async throws {
        try await withStore { store, clock in
            try await store.insertRegistrations([
                .sample(id: "apns", platform: .apns, tags: ["t"]),
                .sample(id: "fcm", platform: .fcm, tags: ["t"]),
                .sample(id: "wns", platform: .wns, tags: ["t"]),
                .sample(id: "web", platform: .webpush, tags: ["t"], expiresAt: clock.now.addingTimeInterval(60)),
            ])
            let all = try await store.registrations(matching: .tag("t"), platforms: nil, after: nil, limit: 10)
            #expect(all.map(\.id) == ["apns", "fcm", "web", "wns"])
            #expect(try await store.registrations(matching: .tag("t"), platforms: [.fcm, .wns], after: nil, limit: 10).map(\.id) == ["fcm", "wns"])
            #expect(try await store.registrations(matching: nil, platforms: [.apns], after: nil, limit: 10).map(\.id) == ["apns"])
            #expect(try await store.registrations(matching: nil, platforms: [], after: nil, limit: 10).isEmpty)

            // Once expired, the Web Push registration is no longer targeted, but still exists.
            clock.advance(by: .seconds(61))
            #expect(try await store.registrations(matching: .tag("t"), platforms: nil, after: nil, limit: 10).map(\.id) == ["apns", "fcm", "wns"])
            #expect(try await store.registrations(matching: nil, platforms: [.webpush], after: nil, limit: 10).isEmpty)
            #expect(try await store.registration(id: "web") != nil)
        }
    }

    @Test func tooLongExpressionIsABadRequest() async throws {
        try await withStore { store, _ in
            var expression = TagExpression.tag("t0")
            for i in 1...600 { expression = .or(expression, .and(.tag("t\(i)"), .not(.tag("u\(i)")))) }
            let big = expression
            await expectHeraldError(.badRequest) {
                _ = try await store.registrations(matching: big, platforms: nil, after: nil, limit: 10)
            }
        }
    }

    @Test(arguments: [
        (TagExpression.tag("a"), RegistrationQuery.Plan.tag("a", rest: [])),
        (.and(.not(.tag("b")), .tag("a")), .tag("a", rest: [.not(.tag("b"))])),
        (.and(.and(.tag("a"), .tag("b")), .tag("c")), .tag("a", rest: [.tag("b"), .tag("c")])),
        (.or(.tag("a"), .or(.tag("b"), .tag("a"))), .anyTag(["a", "b"], rest: [])),
        (.and(.or(.tag("a"), .tag("b")), .not(.tag("c"))), .anyTag(["a", "b"], rest: [.not(.tag("c"))])),
        (.not(.tag("a")), .scan(condition: .not(.tag("a")))),
        (.or(.tag("a"), .not(.tag("b"))), .scan(condition: .or(.tag("a"), .not(.tag("b"))))),
    ])
    func planDrivesFromAMandatoryTag(expression: TagExpression, plan: RegistrationQuery.Plan) {
        #expect(RegistrationQuery.plan(expression) == plan)
    }

    @Test func tagsAreBoundNeverInterpolated() {
        let (sql, binds) = RegistrationQuery.condition(.or(.tag("x' OR 1=1 --"), .not(.tag("y"))))
        #expect(!sql.contains("x'"))
        #expect(binds == ["x' OR 1=1 --", "y"])
    }
}
