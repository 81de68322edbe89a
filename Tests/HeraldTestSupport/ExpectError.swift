public import HeraldCore
public import Testing

/// Expects `body` to throw an error of `expected`'s type with its code and exactly its
/// message. Errors compare by code only (``CodedError``); this holds the wording too, where
/// the wording is what a test is about.
public func expectError<E: CodedError, R>(
    _ expected: E,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> R
) {
    do {
        _ = try body()
        Issue.record("expected \(E.self) \(expected), nothing was thrown", sourceLocation: sourceLocation)
    } catch let error as E {
        #expect(error.code == expected.code, "\(error)", sourceLocation: sourceLocation)
        #expect(error.message == expected.message, sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected \(E.self) \(expected), got \(error)", sourceLocation: sourceLocation)
    }
}
