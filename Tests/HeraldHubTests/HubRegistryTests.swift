import Foundation
import HeraldCore
import HeraldHub
import HeraldPush
import HeraldStore
import Logging
import Testing

/// The registry keeps one engine per hub, opened on first use, and opens it anew when the
/// catalog says the hub changed underneath a running server.
@Suite("HubRegistry")
struct HubRegistryTests {
    /// A registry over a fresh catalog, whose server has an APNs provider of its own (one that
    /// sends nowhere); removes the directory afterwards.
    private func withRegistry(_ body: (HubCatalog, HubRegistry, RecordingProvider) async throws -> Void) async throws {
        let dataDirectory = FileManager.default.temporaryDirectory
            .appendingPathComponent("herald-registry-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dataDirectory) }
        let catalog = HubCatalog(dataDirectory: dataDirectory)
        let serverAPNs = RecordingProvider(.apns)
        let registry = HubRegistry(
            catalog: catalog, serverProviders: [serverAPNs], factory: PushProviderFactory(logger: Logger(label: "test")),
            logger: Logger(label: "test")
        )
        try await body(catalog, registry, serverAPNs)
    }

    private static func providerID(_ engine: HubEngine, _ platform: Platform) -> ObjectIdentifier? {
        engine.provider(for: platform).map { ObjectIdentifier($0 as AnyObject) }
    }

    private static func storeID(_ engine: HubEngine) -> ObjectIdentifier { ObjectIdentifier(engine.store as AnyObject) }

    private static func close(_ engines: HubEngine...) async {
        var closed = Set<ObjectIdentifier>()
        for engine in engines where closed.insert(storeID(engine)).inserted {
            try? await engine.store.close()
        }
    }

    @Test func aHubOpensOnceAndIsFoundByAnySpellingOfItsName() async throws {
        try await withRegistry { catalog, registry, serverAPNs in
            try await catalog.create(name: "MyHub")
            let first = try #require(try await registry.engine(named: "MyHub"))
            let again = try #require(try await registry.engine(named: "myhub"))
            #expect(ObjectIdentifier(first) == ObjectIdentifier(again))
            #expect(first.configuredPlatforms == [.apns], "a hub without credentials delivers through the server's providers")
            #expect(Self.providerID(first, .apns) == ObjectIdentifier(serverAPNs))
            #expect(try await registry.engine(named: "other") == nil)
            await Self.close(first)
        }
    }

    @Test func newCredentialsGetNewProvidersOnTheSameStore() async throws {
        try await withRegistry { catalog, registry, serverAPNs in
            try await catalog.create(name: "hub")
            let before = try #require(try await registry.engine(named: "hub"))
            #expect(before.configuredPlatforms == [.apns])
            try await catalog.setCredentials(name: "hub") {
                $0.wns = .init(packageSID: "ms-app://s-1-15-2-1", clientSecret: "wns-client-secret-value")
            }
            let after = try #require(try await registry.engine(named: "hub"))
            #expect(ObjectIdentifier(after) == ObjectIdentifier(before), "one engine per hub, given the new providers")
            #expect(Self.storeID(after) == Self.storeID(before), "the registrations stay where they are")
            #expect(after.configuredPlatforms == [.apns, .wns], "the hub's own WNS credentials, the server's APNs")
            #expect(Self.providerID(after, .apns) == ObjectIdentifier(serverAPNs))
            let wns = try #require(Self.providerID(after, .wns))
            #expect(!after.isStopped)
            let current = try #require(try await registry.engine(named: "hub"))
            #expect(ObjectIdentifier(current) == ObjectIdentifier(after))
            #expect(Self.providerID(current, .wns) == wns, "unchanged credentials make no providers")
            await registry.close()
            #expect(after.isStopped)
        }
    }

    /// Within the age asked for, a lookup answers with the engine found before, without reading
    /// the catalog (so a hub deleted meanwhile is still served); past it, the catalog is read.
    @Test func anEngineFoundRecentlyIsUsedWithinTheAgeAskedFor() async throws {
        try await withRegistry { catalog, registry, _ in
            try await catalog.create(name: "hub")
            let first = try #require(try await registry.engine(named: "hub", readWithin: .seconds(60)))
            try await catalog.delete(name: "hub")
            let recent = try #require(try await registry.engine(named: "hub", readWithin: .seconds(60)), "found less than a minute ago")
            #expect(ObjectIdentifier(recent) == ObjectIdentifier(first))
            #expect(try await registry.engine(named: "hub", readWithin: .zero) == nil, "the catalog read again: the hub is gone")
            #expect(try await registry.engine(named: "hub", readWithin: .seconds(60)) == nil, "and a hub found gone is not served from before")
            await Self.close(first)
            try await catalog.create(name: "other")
            _ = try #require(try await registry.engine(named: "other", readWithin: .seconds(60)))
            await registry.close()
            await #expect(throws: HeraldError.self, "a registry that closed serves nothing from before") {
                try await registry.engine(named: "other", readWithin: .seconds(60))
            }
        }
    }

    @Test func aHubCreatedAgainUnderTheSameNameIsAnotherHub() async throws {
        try await withRegistry { catalog, registry, _ in
            try await catalog.create(name: "hub")
            let old = try #require(try await registry.engine(named: "hub"))
            _ = try await old.store.upsertRegistration(
                Registration(id: "old-1", platform: .apns, handle: String(repeating: "ab", count: 32)),
                ifVersion: nil
            )
            try await catalog.delete(name: "hub")
            #expect(try await registry.engine(named: "hub") == nil)
            // A definition made a second later, as a person running `herald hub create` again would.
            try await Task.sleep(for: .milliseconds(1100))
            try await catalog.create(name: "hub")
            let new = try #require(try await registry.engine(named: "hub"))
            #expect(Self.storeID(new) != Self.storeID(old))
            #expect(try await new.store.registration(id: "old-1") == nil, "the new hub starts empty")
            #expect(old.isStopped, "the old hub's worker stops")
            #expect(!new.isStopped)
            await Self.close(old, new)
        }
    }

    @Test func aServerWithoutAnyProviderIsNotReady() async throws {
        let dataDirectory = FileManager.default.temporaryDirectory
            .appendingPathComponent("herald-registry-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dataDirectory) }
        let catalog = HubCatalog(dataDirectory: dataDirectory)
        try await catalog.create(name: "hub")
        let registry = HubRegistry(
            catalog: catalog, serverProviders: [], factory: PushProviderFactory(logger: Logger(label: "test")),
            logger: Logger(label: "test")
        )
        #expect(
            await registry.readiness().problems == [
                "no hub is open", "no push provider is configured: set a platform's credentials, or leave HERALD_EMULATORS=auto",
            ])
        _ = try #require(try await registry.engine(named: "hub"))
        let readiness = await registry.readiness()
        #expect(!readiness.isReady)
        #expect(readiness.hubs == ["hub": "ok"], "the store answers; what is missing is a provider")
        #expect(readiness.problems.count == 1)
        #expect(readiness.problems.first?.hasPrefix("no push provider is configured") == true)
        await registry.close()
    }
}
