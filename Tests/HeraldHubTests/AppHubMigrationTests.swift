import Foundation
import HeraldCore
import HeraldHub
import HeraldStore
import Logging
import Testing

/// A data directory made by the release before the catalog kept the app backend (its store
/// at the data directory's root) opens with everything in it: the fixture was made by that
/// release's `herald serve`, with two users, two devices, a notification, a secure message
/// and a rich upload, and a catalog hub `legacy`.
@Suite("The app backend's hub")
struct AppHubMigrationTests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/data-directory-0.x").path
    static let registrations = ["2523343261982931333-2082141199574985638-1", "4221882691517459278-5094909627611005211-1"]
    static let notifications = ["bf29e166-bd93-48e3-bbd7-c44e710b2c21", "9b2424de-4b56-43d6-8b54-abf98b1dd4d9"]
    static let secureMessage = "ul_5UTEc6jxBGHglMr-FLQ"
    static let richContent = "IpWH10O9R-mO8X9CoON4Ew"

    static var logger: Logger {
        var logger = Logger(label: "test.migration")
        logger.logLevel = .critical
        return logger
    }

    /// A copy of the fixture in a temporary directory.
    static func copyOfFixture() throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-upgrade-\(UUID().uuidString)").path
        try FileManager.default.copyItem(atPath: fixture, toPath: directory)
        return directory
    }

    @Test func anOldDataDirectoryKeepsEverythingInTheAppHub() async throws {
        let directory = try Self.copyOfFixture()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let catalog = HubCatalog(dataDirectory: directory)
        #expect(try await catalog.prepareAppHub(named: "app", logger: Self.logger) == .migrated)
        #expect(!FileManager.default.fileExists(atPath: directory + "/herald.sqlite"), "the old store moved")
        await #expect(try catalog.list().map(\.name) == ["app", "legacy"])

        let registry = HubRegistry(catalog: catalog, serverProviders: [], factory: PushProviderFactory(logger: Self.logger), logger: Self.logger)
        let app = try #require(try await registry.engine(named: "app"))
        for id in Self.registrations {
            let registration = try #require(try await app.registration(id: id))
            #expect(registration.owner == "alice")
        }
        #expect(try await app.registrationCount() == 2)
        #expect(try await app.store.account(username: "alice") != nil)
        #expect(try await app.store.account(username: "bob") != nil)
        for id in Self.notifications {
            #expect(try await app.notification(id: id)?.state == .noTargetFound)
        }
        // Content expires: read it as of the day the fixture was made.
        let now = try #require(ISO8601DateFormatter().date(from: "2026-11-23T12:12:00Z"))
        #expect(try await app.store.readSecureMessage(id: Self.secureMessage, recipient: "carol", now: now) != nil)
        #expect(try await app.store.richContent(id: Self.richContent, now: now) != nil)
        // The hub that was in the catalog already is untouched.
        #expect(try await registry.engine(named: "legacy") != nil)

        // A second start finds nothing left to move.
        await registry.close()
        #expect(try await catalog.prepareAppHub(named: "app", logger: Self.logger) == .existing)
    }

    @Test func aMoveCutShortIsFinishedOnTheNextStart() async throws {
        let directory = try Self.copyOfFixture()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let catalog = HubCatalog(dataDirectory: directory)
        // A start that created the hub and died before moving the store.
        try await catalog.create(name: "app")
        #expect(try await catalog.prepareAppHub(named: "app", logger: Self.logger) == .migrated)
        let registry = HubRegistry(catalog: catalog, serverProviders: [], factory: PushProviderFactory(logger: Self.logger), logger: Self.logger)
        let app = try #require(try await registry.engine(named: "app"))
        #expect(try await app.registrationCount() == 2)
        await registry.close()
    }

    @Test func aStoreOfTheHubsOwnIsNeverOverwritten() async throws {
        let directory = try Self.copyOfFixture()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let catalog = HubCatalog(dataDirectory: directory)
        try await catalog.create(name: "app")
        let registry = HubRegistry(catalog: catalog, serverProviders: [], factory: PushProviderFactory(logger: Self.logger), logger: Self.logger)
        let app = try #require(try await registry.engine(named: "app"))
        _ = try await app.createRegistration(Registration(id: "", platform: .fcm, handle: "new-device"))
        await registry.close()

        #expect(try await catalog.prepareAppHub(named: "app", logger: Self.logger) == .existing)
        #expect(FileManager.default.fileExists(atPath: directory + "/herald.sqlite"), "the old store is left where it is")
        let reopened = HubRegistry(catalog: catalog, serverProviders: [], factory: PushProviderFactory(logger: Self.logger), logger: Self.logger)
        #expect(try await reopened.engine(named: "app")?.registrationCount() == 1)
        await reopened.close()
    }

    @Test func aNewDataDirectoryGetsAnEmptyAppHub() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-new-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let catalog = HubCatalog(dataDirectory: directory)
        #expect(try await catalog.prepareAppHub(named: "app", logger: Self.logger) == .created)
        #expect(try await catalog.prepareAppHub(named: "app", logger: Self.logger) == .existing)
        let definition = try await #require(try catalog.hub(named: "app"))
        #expect(definition.rules.count == 2, "keys like any other hub")
    }
}
