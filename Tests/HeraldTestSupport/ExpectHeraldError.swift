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
    await expectCodedError(code, of: HeraldError.self, containing: fragment, sourceLocation: sourceLocation, body)
}

/// Expects `body` to throw an error of type `E` with `code` (a store's `StoreError`, say), and
/// a message containing `fragment` when one is given.
public func expectCodedError<E: CodedError>(
    _ code: E.Code,
    of type: E.Type,
    containing fragment: String = "",
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> Void
) async {
    do {
        try await body()
        Issue.record("expected \(E.self) \(code), nothing was thrown", sourceLocation: sourceLocation)
    } catch let error as E {
        #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
        #expect(fragment.isEmpty || error.message.contains(fragment), "\(error.message)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected \(E.self) \(code), got \(error)", sourceLocation: sourceLocation)
    }
}
