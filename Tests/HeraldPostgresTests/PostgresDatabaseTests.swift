import Foundation
import HeraldCore
import HeraldStore
import HeraldTLS
import HeraldTestSupport
import Logging
import Testing

@testable import HeraldPostgres

/// How many connections a pool keeps open for good, whatever its maximum; no server needed.
@Suite("PostgreSQL kept connections")
struct PostgresKeptConnectionsTests {
    @Test(arguments: [(0, 0), (1, 0), (2, 1), (4, 3), (5, 4), (20, 4), (100, 4)])
    func aPoolKeepsFourAtMostAndNeverAllOfIt(maximum: Int, kept: Int) {
        #expect(PostgresDatabase.keptConnections(maximum: maximum) == kept)
    }
}

@Suite("PostgreSQL database", .enabled(if: PostgresTestDatabase.isConfigured, PostgresTestDatabase.skipReason))
struct PostgresDatabaseTests {
    @Test(.timeLimit(.minutes(1)))
    func statementsRunOnANewPoolAfterTheOldOneIsReplaced() async throws {
        try await PostgresTestDatabase.with { database in
            try await database.ping()
            database.replacePool()
            try await database.ping()
            database.replacePool()
            database.replacePool()
            try await database.ping()
        }
    }

    /// Version 20 gives the app backend's Live Activity registrations of an earlier release
    /// (its user's, with the one tag `liveactivity:<user>:<activity>`) their kind, and leaves
    /// every other registration a device's.
    @Test func theAppBackendsEarlierLiveActivityRegistrationsBecomeActivityTokens() async throws {
        try await PostgresTestDatabase.withScratchDatabase { url, _ in
            try await PostgresTestDatabase.with(url: url, maximumConnections: 2, migrate: false) { database in
                _ = try await database.migrate(through: 19)
                func row(_ id: String, owner: String?, tags: String, installation: String? = nil, platform: String = "apns") -> String {
                    """
                    INSERT INTO herald.registrations (hub, id, platform, handle, owner, version, created_at, updated_at, tags, installation_id)
                    VALUES ('h', '\(id)', '\(platform)', '\(id)-handle', \(owner.map { "'\($0)'" } ?? "NULL"), 1, 1000, 1000, '\(tags)',
                        \(installation.map { "'\($0)'" } ?? "NULL"))
                    """
                }
                for statement in [
                    row("activity", owner: "alice", tags: "{liveactivity:alice:match-7}"),
                    row("phone", owner: "alice", tags: "{sports,username:alice}"),
                    row("hub-api", owner: nil, tags: "{liveactivity:alice:match-7}"),
                    row("someone-elses", owner: "bob", tags: "{liveactivity:alice:match-7}"),
                    row("two-tags", owner: "alice", tags: "{liveactivity:alice:match-7,news}"),
                    row("installation", owner: "alice", tags: "{liveactivity:alice:match-7}", installation: "i1"),
                    row("android", owner: "alice", tags: "{liveactivity:alice:match-7}", platform: "fcm"),
                ] {
                    try await database.execute(unsafeSQL: statement)
                }
                #expect(try await database.migrate(through: 20) == [20])
                let store = database.store(hub: "h")
                #expect(try await store.registration(id: "activity")?.handleKind == .liveActivity)
                for id in ["phone", "hub-api", "someone-elses", "two-tags", "installation", "android"] {
                    #expect(try await store.registration(id: id)?.handleKind == .device, "\(id)")
                }
            }
        }
    }

    @Test func nodesStartingAtOnceApplyEachMigrationExactlyOnce() async throws {
        try await PostgresTestDatabase.withScratchDatabase { url, _ in
            let applied = try await withThrowingTaskGroup(of: [Int].self) { group in
                for _ in 0..<6 {
                    group.addTask {
                        try await PostgresTestDatabase.with(url: url, maximumConnections: 2, migrate: false) { database in
                            try await database.migrate()
                        }
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            #expect(applied.sorted() == Array(1...PostgresDatabase.latestSchemaVersion))
            try await PostgresTestDatabase.with(url: url) { database in
                let again = try await database.migrate()
                let versions = try await database.schemaVersions()
                #expect(again == [])
                #expect(versions == Array(1...PostgresDatabase.latestSchemaVersion))
            }
        }
    }

    @Test func aDatabaseFromANewerHeraldIsRefusedUntouched() async throws {
        try await PostgresTestDatabase.withScratchDatabase { url, _ in
            try await PostgresTestDatabase.with(url: url) { database in
                try await database.execute(unsafeSQL: "INSERT INTO herald.schema_migrations (version, name) VALUES (999, 'from the future')")
            }
            try await PostgresTestDatabase.with(url: url, migrate: false) { database in
                await #expect(throws: StoreError(code: .schemaTooNew, message: "")) { try await database.migrate() }
                let versions = try await database.schemaVersions()
                #expect(versions.last == 999)
            }
        }
    }

    @Test func workEnqueuedOnOneNodeIsAnnouncedOnAnotherAtOnce() async throws {
        let hub = PostgresTestDatabase.uniqueHubName()
        try await PostgresTestDatabase.with { first in
            try await PostgresTestDatabase.with { second in
                let announcements = try #require(second.store(hub: hub).workAnnouncements())
                let otherHub = try #require(second.store(hub: hub + "-other").workAnnouncements())
                // The listening connection is opened by the database's run(): give it a moment.
                try await Task.sleep(for: .milliseconds(500))
                let started = ContinuousClock.now
                try await first.store(hub: hub).enqueueNotification(
                    NotificationRecord(id: "n1", tagExpression: nil, payloads: [], enqueuedAt: Date())
                )
                let heard = try await withThrowingTaskGroup(of: Bool.self) { group in
                    group.addTask {
                        for await _ in announcements { return true }
                        return false
                    }
                    group.addTask {
                        try await Task.sleep(for: .seconds(5))
                        return false
                    }
                    defer { group.cancelAll() }
                    return try await group.next() ?? false
                }
                #expect(heard)
                #expect(ContinuousClock.now - started < .seconds(2))
                // Another hub's listeners hear nothing of it.
                let quiet = await withTaskGroup(of: Bool.self) { group in
                    group.addTask {
                        for await _ in otherHub { return false }
                        return true
                    }
                    group.addTask {
                        try? await Task.sleep(for: .milliseconds(300))
                        return true
                    }
                    defer { group.cancelAll() }
                    return await group.next() ?? true
                }
                #expect(quiet)
            }
        }
    }

    /// A statement or a transaction waiting for a connection when the database turns
    /// unreachable fails then, with `unavailable`, instead of at its deadline (20 s): here the
    /// server accepts the connections and never answers, then goes away.
    @Test(.timeLimit(.minutes(1)))
    func aStatementWaitingWhenTheDatabaseGoesAwayFailsThen() async throws {
        let silent = try ListeningSocket()
        var url = try PostgresTestDatabase.url()
        url.host = "127.0.0.1"
        url.port = silent.port
        url.connectTimeout = .seconds(60)
        try await PostgresTestDatabase.with(url: url, migrate: false) { database in
            let ping = Task { try await database.ping() }
            // Deleting a registration is a transaction of several statements.
            let store = database.store(hub: "h")
            let transaction = Task { try await store.deleteRegistration(id: "r1", ifVersion: nil, owner: nil) }
            try await Task.sleep(for: .milliseconds(300))
            let gone = ContinuousClock.now
            silent.close()
            await #expect(throws: StoreError.databaseUnavailable("the database is unreachable; try again")) { try await ping.value }
            await #expect(throws: StoreError.databaseUnavailable("the database is unreachable; try again")) { _ = try await transaction.value }
            #expect(ContinuousClock.now - gone < .seconds(10))
        }
    }

    @Test func aWrongPasswordIsRefusedWithoutShowingIt() async throws {
        var url = try PostgresTestDatabase.url()
        url.password = "wrong-password-4f1c9a"
        let record = LogRecorder()
        url.connectTimeout = .seconds(5)
        await #expect(throws: (any Error).self) {
            try await PostgresTestDatabase.with(url: url, logger: record.logger()) { _ in }
        }
        do {
            try await PostgresTestDatabase.with(url: url, logger: record.logger()) { _ in }
        } catch {
            #expect(!"\(error)".contains("wrong-password-4f1c9a"))
            #expect(!String(reflecting: error).contains("wrong-password-4f1c9a"))
            #expect((error as? StoreError)?.code == .cannotConnect, "\(error)")
        }
        #expect(!record.text.contains("wrong-password-4f1c9a"))
    }

    /// A server with a certificate of a private CA: `verify-full` with that CA as `sslrootcert`
    /// connects; without it (the system's roots), or with another CA, the connection is refused
    /// before the password is sent.
    @Test(.enabled(if: PostgresTestDatabase.certificateAuthority != nil, "the test server has no TLS certificate (HERALD_TEST_DATABASE_CA)"))
    func verifyFullWithAPrivateCAConnectsAndAnyOtherCAIsRefused() async throws {
        let ca = try #require(PostgresTestDatabase.certificateAuthority)
        var url = try PostgresTestDatabase.url()
        url.tlsMode = .verifyFull
        url.rootCertificateFile = ca
        url.connectTimeout = .seconds(5)
        #expect(url.description.contains("sslmode=verify-full&sslrootcert=\(ca)"))
        try await PostgresTestDatabase.with(url: url) { database in try await database.ping() }

        var systemRoots = url
        systemRoots.rootCertificateFile = nil
        await #expect(throws: (any Error).self) {
            try await PostgresTestDatabase.with(url: systemRoots) { database in try await database.ping() }
        }
        let other = FileManager.default.temporaryDirectory.appendingPathComponent("other-ca-\(UUID().uuidString).pem").path
        defer { try? FileManager.default.removeItem(atPath: other) }
        try CertificateAuthority.makeEphemeral().certificatePEM.write(toFile: other, atomically: true, encoding: .utf8)
        var otherCA = url
        otherCA.rootCertificateFile = other
        await #expect(throws: (any Error).self) {
            try await PostgresTestDatabase.with(url: otherCA) { database in try await database.ping() }
        }
    }

    @Test func anUnreachableServerIsAnErrorNotAHang() async throws {
        var url = try PostgresTestDatabase.url()
        url.host = "127.0.0.1"
        url.port = 1  // tcpmux: nothing listens there, so the connection is refused at once
        url.connectTimeout = .seconds(2)
        let started = ContinuousClock.now
        do {
            try await PostgresTestDatabase.with(url: url) { _ in }
            Issue.record("connected to a port that refuses connections")
        } catch {
            #expect(ContinuousClock.now - started < .seconds(30))
        }
    }
}

@Suite("Settings every node shares", .enabled(if: PostgresTestDatabase.isConfigured, PostgresTestDatabase.skipReason))
struct PostgresSharedSettingTests {
    @Test func nodesAskingAtOnceAllGetTheFirstValueStored() async throws {
        let name = "test.setting." + UUID().uuidString
        let values = try await withThrowingTaskGroup(of: String.self) { group in
            for node in 0..<6 {
                group.addTask {
                    try await PostgresTestDatabase.with(maximumConnections: 2) { database in
                        try await database.replaceSharedValue(named: name, expected: nil, with: "value of node \(node)")
                    }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(values).count == 1)
        let later = try await PostgresTestDatabase.with { database in
            try await database.replaceSharedValue(named: name, expected: nil, with: "too late")
        }
        #expect(later == values[0])
    }

    @Test func aValueIsReplacedOnlyWhileItIsTheOneExpected() async throws {
        let name = "test.setting." + UUID().uuidString
        try await PostgresTestDatabase.with { (database) async throws -> Void in
            #expect(try await database.sharedValue(named: name) == nil)
            #expect(try await database.replaceSharedValue(named: name, expected: nil, with: "one") == "one")
            #expect(try await database.replaceSharedValue(named: name, expected: "stale", with: "two") == "one")
            #expect(try await database.replaceSharedValue(named: name, expected: "one", with: "two") == "two")
            #expect(try await database.sharedValue(named: name) == "two")
        }
    }
}
