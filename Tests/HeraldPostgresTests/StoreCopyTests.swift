import Foundation
import HeraldCore
import HeraldHub
import HeraldPostgres
import HeraldSQLite
import HeraldStore
import HeraldStoreConformance
import HeraldTestSupport
import Testing

/// `herald store copy --from <data dir> --to <database>`, run as a user runs it: everything a
/// single node kept is in the database afterwards, as it was, and a second run changes nothing.
@Suite("herald store copy", .enabled(if: PostgresTestDatabase.isConfigured, PostgresTestDatabase.skipReason))
struct StoreCopyTests {
    static let herald = ClusterTests.herald

    /// A data directory with two hubs holding one of everything a store keeps.
    static func makeDataDirectory() async throws -> (directory: URL, hubs: [HubDefinition]) {
        let directory = try PythonInterop.temporaryDirectory("herald-copy")
        let storage = DirectoryHubStorage(dataDirectory: directory.path)
        let catalog = HubCatalog(storage: storage)
        let hubs = [try await catalog.create(name: "app"), try await catalog.create(name: "Second")]
        for hub in hubs {
            let store = try await storage.openStore(forHub: hub.name, logger: testLogger)
            let now = Date()
            try await store.insertRegistrations(
                (0..<2_345).map { n in
                    Registration.sample(id: String(format: "reg-%05d", n), handle: String(format: "%064x", n), tags: n % 2 == 0 ? ["even", "all"] : ["all"])
                })
            _ = try await store.upsertRegistration(.sample(id: "reg-00001", handle: String(format: "%064x", 1), tags: ["changed"]), ifVersion: nil)
            try await store.reserveRegistrationID("reserved-1", owner: "alice", ttl: .seconds(3600))
            _ = try await store.upsertInstallation(
                .sample(templates: ["greeting": InstallationTemplate(body: #"{"aps":{"alert":"$(message)"}}"#, tags: ["t"])]),
                ifVersion: nil
            )
            try await store.createAccount(Account(username: "alice", passwordHash: "$2b$04$abcdefghijklmnopqrstuv", createdAt: now))
            try await store.createSession(Session(tokenHash: "hash-1", username: "alice", expiresAt: now.addingTimeInterval(3600)))
            // A finished notification, a scheduled one, and one being delivered in partitions.
            try await store.enqueueNotification(NotificationQueueChecks.record("done", at: now.addingTimeInterval(-60)))
            _ = try await store.claimNotification(now: now, lease: .seconds(60), owner: "old-node")
            var counts = OutcomeCounts()
            counts.add(.success, platform: .apns, count: 7)
            try await store.finishNotification(id: "done", owner: "old-node", state: .completed, counts: counts, endedAt: now)
            try await store.enqueueNotification(NotificationQueueChecks.scheduled("later", enqueuedAt: now, dueAt: now.addingTimeInterval(3600)))
            try await store.enqueueNotification(NotificationQueueChecks.record("split", at: now))
            _ = try await store.claimNotification(now: now, lease: .seconds(60), owner: "old-node")
            try await store.splitNotification(id: "split", owner: "old-node", at: ["reg-01000", "reg-02000"])
            try await store.saveSecureMessage(ContentChecks.message(now: now))
            try await store.saveRichContent(ContentChecks.content(now: now), bytes: ContentChecks.bytes(200_000))
            try await store.addRichRecipient(id: "c1", username: "bob")
            try await store.close()
        }
        return (directory, hubs)
    }

    @Test(.timeLimit(.minutes(5)))
    func everythingADataDirectoryHoldsIsCopiedAndACopyAgainChangesNothing() async throws {
        let (directory, hubs) = try await Self.makeDataDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await PostgresTestDatabase.withScratchDatabase { url, urlString in
            let first = try await PythonInterop.run(program: Self.herald, arguments: ["store", "copy", "--from", directory.path, "--to", urlString])
            #expect(first.status == 0, "\(first.transcript)")
            // 2,345 registrations and the two of the installation.
            #expect(first.stdout.contains("registrations: 2,347 rows, 2,347 copied, 0 already there; 2,347 in the database"))
            #expect(!first.stdout.contains(try #require(url.password)), "the password is not shown")

            let storage = DirectoryHubStorage(dataDirectory: directory.path)
            try await PostgresTestDatabase.with(url: url) { database in
                let catalog = HubCatalog(storage: database)
                for hub in hubs {
                    #expect(try await catalog.hub(named: hub.name) == hub, "the definition with its keys")
                    let source = try await storage.openStore(forHub: hub.name, logger: testLogger)
                    let copy = database.store(hub: hub.name)
                    try await Self.expectSameContents(source, copy)
                    try await source.close()
                }
            }

            let again = try await PythonInterop.run(program: Self.herald, arguments: ["store", "copy", "--from", directory.path, "--to", urlString])
            #expect(again.status == 0, "\(again.transcript)")
            #expect(again.stdout.contains(": 0 rows copied"), "\(again.stdout)")
            #expect(again.stdout.contains("definition: the database has a hub of this name already, kept as it is"))
        }
    }

    /// What every read of the store contract returns is the same in both stores.
    static func expectSameContents(_ source: SQLiteStore, _ copy: PostgresStore) async throws {
        var cursor: String?
        var registrations = 0
        while true {
            let page = try await source.registrations(matching: nil, platforms: nil, after: cursor, limit: 500)
            guard let last = page.last else { break }
            #expect(try await copy.registrations(matching: nil, platforms: nil, after: cursor, limit: 500) == page)
            registrations += page.count
            cursor = last.id
        }
        #expect(registrations > 2_345)
        let even = try await source.registrations(matching: try TagExpression(parsing: "even && !changed"), platforms: nil, after: nil, limit: 5_000)
        #expect(try await copy.registrations(matching: try TagExpression(parsing: "even && !changed"), platforms: nil, after: nil, limit: 5_000) == even)
        #expect(try await copy.registration(id: "reg-00001")?.version == 2)
        #expect(try await copy.isRegistrationIDValid("reserved-1"))
        #expect(try await copy.installation(id: "inst-1") == source.installation(id: "inst-1"))
        #expect(try await copy.listInstallations(userId: "alice", tag: "sports", after: nil, limit: 10).map(\.id) == ["inst-1"])
        #expect(try await copy.account(username: "alice") == source.account(username: "alice"))
        #expect(try await copy.session(tokenHash: "hash-1", now: Date()) == source.session(tokenHash: "hash-1", now: Date()))
        for id in ["done", "later", "split"] {
            #expect(try await copy.notification(id: id) == source.notification(id: id))
        }
        #expect(try await copy.nextScheduledTime() == source.nextScheduledTime())
        #expect(try await copy.richContentBytes(id: "c1") == ContentChecks.bytes(200_000))
        #expect(
            try await copy.readableRichContent(id: "c1", username: "bob", now: Date()) == source.readableRichContent(id: "c1", username: "bob", now: Date()))
        let message = try #require(try await copy.readSecureMessage(id: "m1", recipient: "alice", now: Date()))
        #expect(message.sealed == ContentChecks.message(now: Date()).sealed && message.readCount == 0 && message.sender == "bob")
    }

    @Test func aDirectoryThatIsNotADataDirectoryIsRefused() async throws {
        let directory = try PythonInterop.temporaryDirectory("herald-copy-empty")
        defer { try? FileManager.default.removeItem(at: directory) }
        let output = try await PythonInterop.run(
            program: Self.herald, arguments: ["store", "copy", "--from", directory.path, "--to", try #require(PostgresTestDatabase.urlString)]
        )
        #expect(output.status != 0)
        #expect(output.stderr.contains("is not a Herald data directory"), "\(output.transcript)")
    }
}
