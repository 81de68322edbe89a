import Foundation
import HeraldCore
import HeraldHub
import HeraldPush
import HeraldStore
import Logging
import Synchronization
import Testing

/// The registry keeps one engine per hub, opened on first use, and opens it anew when the
/// catalog says the hub changed underneath a running server.
@Suite("HubRegistry")
struct HubRegistryTests {
    /// A registry over a fresh catalog; counts how often it asks for providers. Closes the
    /// stores it opened and removes the directory afterwards.
    /// How often the registry asked for a hub's providers.
    final class Count: Sendable {
        private let value = Mutex(0)
        func add() { value.withLock { $0 += 1 } }
        var current: Int { value.withLock { $0 } }
    }

    private func withRegistry(_ body: (HubCatalog, HubRegistry, Count) async throws -> Void) async throws {
        let dataDirectory = FileManager.default.temporaryDirectory
            .appendingPathComponent("herald-registry-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dataDirectory) }
        let catalog = HubCatalog(dataDirectory: dataDirectory)
        let made = Count()
        let registry = HubRegistry(catalog: catalog, logger: Logger(label: "test")) { _ in
            made.add()
            return []
        }
        try await body(catalog, registry, made)
    }

    private static func storeID(_ hub: HubEngine) -> ObjectIdentifier { ObjectIdentifier(hub.store as AnyObject) }

    private static func close(_ hubs: HubEngine...) async {
        var closed = Set<ObjectIdentifier>()
        for hub in hubs where closed.insert(storeID(hub)).inserted {
            try? await hub.store.close()
        }
    }

    @Test func aHubOpensOnceAndIsFoundByAnySpellingOfItsName() async throws {
        try await withRegistry { catalog, registry, made in
            try catalog.create(name: "MyHub")
            let first = try #require(try await registry.hub(named: "MyHub"))
            let again = try #require(try await registry.hub(named: "myhub"))
            #expect(ObjectIdentifier(first) == ObjectIdentifier(again))
            #expect(made.current == 1)
            #expect(try await registry.hub(named: "other") == nil)
            await Self.close(first)
        }
    }

    @Test func newCredentialsGetNewProvidersOnTheSameStore() async throws {
        try await withRegistry { catalog, registry, made in
            try catalog.create(name: "hub")
            let before = try #require(try await registry.hub(named: "hub"))
            try catalog.setCredentials(name: "hub") {
                $0.wns = .init(packageSID: "ms-app://s-1-15-2-1", clientSecret: "wns-client-secret-value")
            }
            let after = try #require(try await registry.hub(named: "hub"))
            #expect(ObjectIdentifier(after) == ObjectIdentifier(before), "one engine per hub, given the new providers")
            #expect(Self.storeID(after) == Self.storeID(before), "the registrations stay where they are")
            #expect(made.current == 2)
            #expect(!after.isStopped)
            let current = try #require(try await registry.hub(named: "hub"))
            #expect(ObjectIdentifier(current) == ObjectIdentifier(after))
            #expect(made.current == 2, "unchanged credentials make no providers")
            await registry.close()
            #expect(after.isStopped)
        }
    }

    @Test func aHubCreatedAgainUnderTheSameNameIsAnotherHub() async throws {
        try await withRegistry { catalog, registry, _ in
            try catalog.create(name: "hub")
            let old = try #require(try await registry.hub(named: "hub"))
            _ = try await old.store.upsertRegistration(
                Registration(id: "old-1", platform: .apns, handle: String(repeating: "ab", count: 32)),
                ifVersion: nil
            )
            try catalog.delete(name: "hub")
            #expect(try await registry.hub(named: "hub") == nil)
            // A definition made a second later, as a person running `herald hub create` again would.
            try await Task.sleep(for: .milliseconds(1100))
            try catalog.create(name: "hub")
            let new = try #require(try await registry.hub(named: "hub"))
            #expect(Self.storeID(new) != Self.storeID(old))
            #expect(try await new.store.registration(id: "old-1") == nil, "the new hub starts empty")
            #expect(old.isStopped, "the old hub's worker stops")
            #expect(!new.isStopped)
            await Self.close(old, new)
        }
    }
}
