import Foundation
import HeraldCore
import HeraldStore
import HeraldTestSupport
import Testing

/// Resolving tag expressions: the registrations a send targets.
enum TagExpressionChecks {
    /// Every page from the start, `pageSize` at a time.
    static func allPages(
        _ store: any HeraldStore, _ expression: TagExpression?, platforms: Set<Platform>?, pageSize: Int
    ) async throws -> [String] {
        try await allPagedIDs(pageSize: pageSize) {
            try await store.registrations(matching: expression, platforms: platforms, after: $0, limit: pageSize)
        }
    }

    static let all: [StoreCheck] = [
        check("randomExpressionsMatchTheReference") { store, clock in
            let now = clock.now
            let (registrations, cases) = RandomTagExpressions.scenario(now: now)
            let live = registrations.filter { $0.expiresAt.map { $0 > now } ?? true }

            try await store.insertRegistrations(registrations)
            for testCase in cases {
                let expected =
                    live
                    .filter { testCase.platforms?.contains($0.platform) ?? true }
                    .filter { testCase.expression?.matches(Set($0.tags)) ?? true }
                    .map(\.id)
                    .sorted()
                let found = try await TagExpressionChecks.allPages(store, testCase.expression, platforms: testCase.platforms, pageSize: testCase.pageSize)
                #expect(
                    found == expected, "\(String(describing: testCase.expression)) on \(String(describing: testCase.platforms)), pages of \(testCase.pageSize)")
            }
        },

        check("parsedExpressionsResolve") { store, _ in
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
        },

        check("platformFilterAndExpiry") { store, clock in
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
        },

        check("partitionRangesEndAtTheirUpperBound") { store, _ in
            // 40 registrations, every third tagged a, every fourth b, every fifth on FCM.
            let registrations = (0..<40).map { i in
                Registration.sample(
                    id: "r" + String(format: "%02d", i), platform: i % 5 == 0 ? .fcm : .apns,
                    tags: (i % 3 == 0 ? ["a"] : []) + (i % 4 == 0 ? ["b"] : []) + ["all"]
                )
            }
            try await store.insertRegistrations(registrations)
            // Upper bounds that are ids and that fall between ids; the last range has none.
            let bounds: [String?] = ["r07", "r12a", "r13", "r30", nil]
            let expressions: [TagExpression?] = [
                nil, .tag("a"), .or(.tag("a"), .tag("b")), .and(.tag("all"), .not(.tag("b"))), .not(.tag("a")),
            ]
            for expression in expressions {
                for platforms in [nil, [Platform.apns]] as [Set<Platform>?] {
                    let whole = try await TagExpressionChecks.allPages(store, expression, platforms: platforms, pageSize: 100)
                    for pageSize in [1, 3, 50] {
                        var lower: String?
                        var pieced: [String] = []
                        for bound in bounds {
                            let range = try await allPagedIDs(pageSize: pageSize) { after in
                                try await store.registrations(
                                    matching: expression, platforms: platforms, kind: nil, after: after ?? lower, through: bound, limit: pageSize
                                )
                            }
                            let label =
                                "\(String(describing: expression)) on \(String(describing: platforms)) after \(lower ?? "-") through \(bound ?? "-"), pages of \(pageSize)"
                            #expect(range.allSatisfy { id in lower.map { id > $0 } ?? true && bound.map { id <= $0 } ?? true }, "\(label)")
                            #expect(range == whole.filter { id in lower.map { id > $0 } ?? true && bound.map { id <= $0 } ?? true }, "\(label)")
                            pieced += range
                            lower = bound
                        }
                        #expect(pieced == whole)
                    }
                }
            }
        },
    ]

    private static func check(_ name: String, _ body: @escaping StoreCheck.Body) -> StoreCheck {
        StoreCheck(area: "resolving tag expressions", name: name, body: body)
    }
}
