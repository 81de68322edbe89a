/// A wait that ran out: what was awaited, and for how long.
public struct StillNotTrue: Error, CustomStringConvertible {
    public let description: String
}

/// Waits until `condition` holds, checking every `interval`; throws ``StillNotTrue`` after
/// `limit`. The limit bounds a wait, so that a test whose precondition never comes fails
/// instead of hanging; it is not an assertion about how long anything takes.
public func eventually(
    _ what: String, within limit: Duration = .seconds(30), every interval: Duration = .milliseconds(5),
    _ condition: () -> Bool
) async throws {
    let deadline = ContinuousClock.now + limit
    while !condition() {
        guard ContinuousClock.now < deadline else { throw StillNotTrue(description: "\(what): still not true after \(limit)") }
        try await Task.sleep(for: interval)
    }
}
