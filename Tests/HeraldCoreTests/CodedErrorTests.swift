import HeraldCore
import Testing

@Suite struct CodedErrorTests {
    @Test func equalityAndHashingCompareTheCodeOnly() {
        let first = HeraldError.badRequest("one message")
        let second = HeraldError.badRequest("another message")
        #expect(first == second)
        #expect(first.hashValue == second.hashValue)
        #expect(Set([first, second]).count == 1)
        #expect(first != HeraldError.notFound("one message"))
    }

    @Test func descriptionIsCodeAndMessage() {
        let error = HeraldError.conflict("the hub 'a' exists")
        #expect(error.description == "conflict: the hub 'a' exists")
        #expect("\(error)" == "conflict: the hub 'a' exists")
        #expect(error.metricLabel == "conflict")
    }

    @Test func tagExpressionSyntaxErrorsCompareByCode() throws {
        let first = try #require(throws: TagExpressionSyntaxError.self) { try TagExpression(parsing: "a &&") }
        let second = try #require(throws: TagExpressionSyntaxError.self) { try TagExpression(parsing: "(b || c) &&") }
        #expect(first.code == second.code)
        #expect(first.message != second.message)
        #expect(first == second)
        #expect(first.metricLabel == first.code.description)
    }
}
