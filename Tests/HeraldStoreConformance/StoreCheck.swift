public import Foundation
public import HeraldStore
public import Testing

/// One check of the store contract, written against the store protocols only, so that every
/// store implementation runs it.
///
/// A store's tests run every check of ``StoreConformance/checks`` on a fresh, empty store
/// whose clock is the check's ``StoreTestClock``:
///
/// ```swift
/// @Test(arguments: StoreConformance.checks)
/// func conforms(to check: StoreCheck) async throws {
///     try await check.run { now in try await MyStore.open(…, now: now) }
/// }
/// ```
public struct StoreCheck: Sendable, CustomTestStringConvertible {
    /// What a check does with the store it is given and the clock that store reads.
    public typealias Body = @Sendable (any HeraldStore, StoreTestClock) async throws -> Void

    /// The part of the contract it checks: registrations, installations, …
    public let area: String
    /// The check's name, unique within its area.
    public let name: String
    public let body: Body

    public init(area: String, name: String, body: @escaping Body) {
        self.area = area
        self.name = name
        self.body = body
    }

    public var testDescription: String { "\(area): \(name)" }

    /// Runs the check on the store that `makeStore` opens with the check's clock as its `now`
    /// (a new, empty store), and closes that store afterwards, also when the check throws.
    public func run(makeStore: (_ now: @escaping @Sendable () -> Date) async throws -> any HeraldStore) async throws {
        let clock = StoreTestClock()
        let store = try await makeStore { clock.now }
        do {
            try await body(store, clock)
        } catch {
            try? await store.close()
            throw error
        }
        try await store.close()
    }
}
