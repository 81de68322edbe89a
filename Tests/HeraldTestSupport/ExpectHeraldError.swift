public import HeraldCore
public import Testing

/// Expects `body` to throw a ``HeraldError`` with `code`, and a message containing `fragment`
/// when one is given.
public func expectHeraldError(
    _ code: HeraldError.Code,
    containing fragment: String = "",
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> Void
) async {
    do {
        try await body()
        Issue.record("expected a HeraldError \(code), nothing was thrown", sourceLocation: sourceLocation)
    } catch let error as HeraldError {
        #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
        #expect(fragment.isEmpty || error.message.contains(fragment), "\(error.message)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected a HeraldError \(code), got \(error)", sourceLocation: sourceLocation)
    }
}
