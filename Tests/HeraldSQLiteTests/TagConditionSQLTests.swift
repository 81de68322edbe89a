import Foundation
import HeraldCore
import HeraldSQLite
import HeraldStore
import HeraldStoreConformance
import HeraldTestSupport
import Testing

/// How the SQLite store plans the resolution of a tag expression. That every expression
/// resolves to the right registrations is part of the conformance suite.
@Suite("Resolving tag expressions")
struct TagConditionSQLTests {
    /// The conformance suite's random expressions exercise every way of reading.
    @Test func randomExpressionsExerciseEveryPlan() throws {
        let (_, cases) = RandomTagExpressions.scenario(now: StoreTestClock().now)
        var plans: [String: Int] = [:]
        for testCase in cases {
            switch try TagQueryPlan(testCase.expression) {
            case .scan: plans["scan", default: 0] += 1
            case .tag: plans["tag", default: 0] += 1
            case .anyTag: plans["anyTag", default: 0] += 1
            }
        }
        #expect(plans["scan", default: 0] > 5)
        #expect(plans["tag", default: 0] > 5)
        #expect(plans["anyTag", default: 0] > 5)
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
        (TagExpression.tag("a"), TagQueryPlan.tag("a", rest: [])),
        (.and(.not(.tag("b")), .tag("a")), .tag("a", rest: [.not(.tag("b"))])),
        (.and(.and(.tag("a"), .tag("b")), .tag("c")), .tag("a", rest: [.tag("b"), .tag("c")])),
        (.or(.tag("a"), .or(.tag("b"), .tag("a"))), .anyTag(["a", "b"], rest: [])),
        (.and(.or(.tag("a"), .tag("b")), .not(.tag("c"))), .anyTag(["a", "b"], rest: [.not(.tag("c"))])),
        (.not(.tag("a")), .scan(condition: .not(.tag("a")))),
        (.or(.tag("a"), .not(.tag("b"))), .scan(condition: .or(.tag("a"), .not(.tag("b"))))),
    ])
    func planDrivesFromAMandatoryTag(expression: TagExpression, plan: TagQueryPlan) throws {
        #expect(try TagQueryPlan(expression) == plan)
    }

    @Test func tagsAreBoundNeverInterpolated() {
        let (sql, binds) = TagConditionSQL.condition(.or(.tag("x' OR 1=1 --"), .not(.tag("y"))))
        #expect(!sql.contains("x'"))
        #expect(binds == ["x' OR 1=1 --", "y"])
    }
}
