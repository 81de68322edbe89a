import Foundation
import HeraldCore
import HeraldSQLite
import HeraldStore
import HeraldStoreConformance
import HeraldTestSupport
import Testing

@Suite("SQLiteStore files, migrations and restarts")
struct SQLiteStoreLifecycleTests {
    @Test func restartKeepsEverything() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let clock = StoreTestClock()
        let path = directory.databasePath

        let first = try await SQLiteStore.open(path: path, logger: testLogger, now: { clock.now })
        #expect(first.appliedMigrations == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18])
        let registration = try await first.upsertRegistration(.sample(id: "r1", platform: .webpush, tags: ["keep"], owner: "alice"), ifVersion: nil)
        try await first.reserveRegistrationID("reserved", owner: "alice", ttl: .seconds(600))
        try await first.createAccount(Account(username: "alice", passwordHash: "$2b$12$hash", createdAt: clock.now))
        try await first.createSession(Session(tokenHash: "h1", username: "alice", expiresAt: clock.now.addingTimeInterval(3600)))
        let notification = NotificationRecord(
            id: "n1", tagExpression: "keep",
            payloads: [PlatformPayload(platform: .webpush, body: Data("{\"hi\":1}".utf8), headers: [.init(name: "TTL", value: "60")])],
            enqueuedAt: clock.now
        )
        try await first.enqueueNotification(notification)
        try await first.close()

        let second = try await SQLiteStore.open(path: path, logger: testLogger, now: { clock.now })
        #expect(second.appliedMigrations.isEmpty)
        #expect(try await second.registration(id: "r1") == registration)
        #expect(try await second.registrations(matching: .tag("keep"), platforms: nil, after: nil, limit: 10) == [registration])
        #expect(try await second.isRegistrationIDValid("reserved"))
        #expect(try await second.account(username: "alice")?.passwordHash == "$2b$12$hash")
        #expect(try await second.session(tokenHash: "h1", now: clock.now)?.username == "alice")
        #expect(try await second.notification(id: "n1") == notification)
        try await second.close()
    }

    /// A write whose task is cancelled half-way is rolled back, and the writer takes the next
    /// write: a rollback refused for the cancelled task would leave the transaction open and
    /// every later write failing with "cannot start a transaction within a transaction".
    @Test func aCancelledWriteIsRolledBackAndTheNextOneIsTaken() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try await SQLiteStore.open(path: directory.databasePath, logger: testLogger)
        let (inside, insideContinuation) = AsyncStream<Void>.makeStream()
        let write = Task {
            try await store.executeForTesting("SELECT 1") {
                insideContinuation.yield()
                try await Task.sleep(for: .seconds(60))
            }
        }
        var iterator = inside.makeAsyncIterator()
        await iterator.next()
        write.cancel()
        await #expect(throws: CancellationError.self) { try await write.value }
        do {
            try await store.enqueueNotification(NotificationRecord(id: "n1", tagExpression: nil, payloads: []))
            #expect(try await store.notification(id: "n1")?.state == .enqueued)
        } catch {
            Issue.record(error, "the write after a cancelled one failed")
        }
        try await store.close()
    }

    /// Upserts that wait while another write holds the writer are applied together, in the
    /// task of whichever of them leads the batch. Cancelling their callers, the leader included,
    /// fails none of them: a batch, once begun, runs in a task of its own, and each caller gets
    /// the real result of its write.
    @Test func cancellingTheCallersOfAGroupedWriteFailsNoneOfIt() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try await SQLiteStore.open(path: directory.databasePath, logger: testLogger)
        let writes = try await Self.holdingTheWriter(of: store) {
            let writes = (1...3).map { index in
                Task { try await store.upsertRegistration(.sample(id: "r\(index)", tags: ["t"]), ifVersion: nil) }
            }
            while await store.queuedUpsertsForTesting() < writes.count { try await Task.sleep(for: .milliseconds(5)) }
            for write in writes { write.cancel() }
            return writes
        }
        for (index, write) in writes.enumerated() {
            do {
                let stored = try await write.value
                #expect(stored.id == "r\(index + 1)")
            } catch {
                Issue.record(error, "the grouped write r\(index + 1) failed")
            }
            #expect(try await store.registration(id: "r\(index + 1)") != nil)
        }
        try await store.close()
    }

    /// Sends that queue while the writer is busy are inserted in one batch, in order: of two
    /// under one key, the first is stored and the second answered with it (a replay), and a
    /// taken id fails only its own send.
    @Test func notificationsQueuedBehindAWriteAreEnqueuedTogetherEachWithItsOwnAnswer() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try await SQLiteStore.open(path: directory.databasePath, logger: testLogger)
        try await store.enqueueNotification(NotificationRecord(id: "taken", tagExpression: nil, payloads: []))
        let (first, repeated, plain, clash) = try await Self.holdingTheWriter(of: store) {
            let key = try IdempotencyKey("order-7", scope: IdempotencyKey.hubScope, digest: "same", retention: .seconds(3600))
            let first = Task { try await store.enqueueNotification(NotificationRecord(id: "first", tagExpression: nil, payloads: []), idempotencyKey: key) }
            while await store.queuedEnqueuesForTesting() < 1 { try await Task.sleep(for: .milliseconds(5)) }
            let repeated = Task { try await store.enqueueNotification(NotificationRecord(id: "repeat", tagExpression: nil, payloads: []), idempotencyKey: key) }
            while await store.queuedEnqueuesForTesting() < 2 { try await Task.sleep(for: .milliseconds(5)) }
            let plain = Task { try await store.enqueueNotification(NotificationRecord(id: "plain", tagExpression: nil, payloads: [])) }
            let clash = Task { try await store.enqueueNotification(NotificationRecord(id: "taken", tagExpression: nil, payloads: [])) }
            while await store.queuedEnqueuesForTesting() < 4 { try await Task.sleep(for: .milliseconds(5)) }
            return (first, repeated, plain, clash)
        }

        #expect(try await first.value == nil, "the first under the key is stored")
        #expect(try await repeated.value?.notificationID == "first", "the second is answered with the first")
        try await plain.value
        await #expect(throws: HeraldError.self) { try await clash.value }
        #expect(try await store.notification(id: "first") != nil)
        #expect(try await store.notification(id: "plain") != nil)
        #expect(try await store.notification(id: "repeat") == nil)
        #expect(await store.queuedEnqueuesForTesting() == 0)
        try await store.close()
    }

    /// A worker's claim reads the first entry of the index of claimable notifications for each
    /// state: it sorts nothing, so a backlog of waiting notifications costs each claim the same
    /// (before, a claim sorted every waiting notification, and a backlog of N cost N² to drain).
    @Test func aClaimReadsTheIndexInTheOrderNotificationsAreDueAndSortsNothing() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try await SQLiteStore.open(path: directory.databasePath, logger: testLogger)
        let start = Date()
        for index in 0..<300 {
            try await store.enqueueNotification(
                NotificationRecord(id: String(format: "n%03d", index), tagExpression: nil, payloads: [], enqueuedAt: start.addingTimeInterval(Double(index))))
        }
        try await store.executeForTesting("ANALYZE")
        let plan = try await store.claimPlanForTesting()
        #expect(plan.filter { $0.contains("INDEX notifications_due") }.count == 3, "\(plan)")
        #expect(!plan.contains { $0.hasPrefix("SCAN notifications") }, "\(plan)")
        #expect(plan.filter { $0.contains("TEMP B-TREE") }.count <= 1, "only the three first entries are sorted: \(plan)")
        // And the claims come in the order the notifications were accepted.
        let first = try await store.claimNotification(now: start.addingTimeInterval(600), lease: .seconds(30), owner: "w")
        let second = try await store.claimNotification(now: start.addingTimeInterval(600), lease: .seconds(30), owner: "w")
        #expect(first?.id == "n000" && second?.id == "n001")
        try await store.close()
    }

    /// Holds `store`'s writer in a transaction while `queue` starts writes, which wait for it,
    /// then lets it go and waits for its transaction to end; returns what `queue` returned.
    static func holdingTheWriter<T>(of store: SQLiteStore, while queue: () async throws -> T) async throws -> T {
        let (inside, insideContinuation) = AsyncStream<Void>.makeStream()
        let (release, releaseContinuation) = AsyncStream<Void>.makeStream()
        let holder = Task {
            try await store.executeForTesting("SELECT 1") {
                insideContinuation.yield()
                var waiting = release.makeAsyncIterator()
                await waiting.next()
            }
        }
        var iterator = inside.makeAsyncIterator()
        await iterator.next()
        let queued = try await queue()
        releaseContinuation.yield()
        try await holder.value
        return queued
    }

    @Test func aSecondStoreOnTheSameFileSeesCommittedWrites() async throws {
        // What a crash leaves behind is what another process opening the file sees: every
        // write that returned is committed to the file (the WAL), not held in memory.
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let writer = try await SQLiteStore.open(path: directory.databasePath, logger: testLogger)
        let saved = try await writer.upsertRegistration(.sample(id: "r1", tags: ["t"]), ifVersion: nil)
        try await writer.enqueueNotification(NotificationRecord(id: "n1", tagExpression: nil, payloads: []))

        let other = try await SQLiteStore.open(path: directory.databasePath, logger: testLogger)
        #expect(other.appliedMigrations.isEmpty)
        #expect(try await other.registration(id: "r1") == saved)
        #expect(try await other.notification(id: "n1")?.state == .enqueued)
        // Writes from both serialize on SQLite's lock.
        _ = try await other.upsertRegistration(.sample(id: "r1", tags: ["u"]), ifVersion: 1)
        #expect(try await writer.registration(id: "r1")?.version == 2)
        try await other.close()
        try await writer.close()
    }

    @Test func migrationsAreAppliedOnceAndANewerSchemaIsRefused() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.databasePath

        let first = try await SQLiteStore.open(path: path, logger: testLogger)
        #expect(first.appliedMigrations == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18])
        try await first.close()
        let second = try await SQLiteStore.open(path: path, logger: testLogger)
        #expect(second.appliedMigrations.isEmpty)
        #expect(try await second.integerForTesting("SELECT count(*) FROM schema_migrations") == 18)
        // As if a newer Herald had migrated the file.
        try await second.executeForTesting("INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, 'from the future', 0)")
        try await second.close()

        do {
            let store = try await SQLiteStore.open(path: path, logger: testLogger)
            try? await store.close()
            Issue.record("a database from a newer Herald was opened")
        } catch let error as StoreError {
            #expect(error.code == .schemaTooNew)
            #expect(error.message.contains("99"))
            #expect(error.message.contains("newer"))
        }
    }

    @Test func aFileThatIsNotADatabaseIsRefused() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.url.appendingPathComponent("not-a-db.sqlite").path
        try Data(repeating: 0x42, count: 8192).write(to: URL(fileURLWithPath: path))
        await #expect(throws: StoreError(code: .cannotOpen, message: "")) {
            let store = try await SQLiteStore.open(path: path, logger: testLogger)
            try? await store.close()
        }
    }

    @Test func callsAfterCloseFail() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try await SQLiteStore.open(path: directory.databasePath, logger: testLogger)
        try await store.close()
        try await store.close()  // closing twice is fine
        await expectCodedError(.databaseUnavailable, of: StoreError.self) { _ = try await store.registrationCount() }
        await expectCodedError(.databaseUnavailable, of: StoreError.self) { _ = try await store.upsertRegistration(.sample(), ifVersion: nil) }
        await expectCodedError(.databaseUnavailable, of: StoreError.self) { try await store.deleteSession(tokenHash: "x") }
    }

    @Test(arguments: [SQLiteStore.Configuration.Synchronous.normal, .full])
    func configurationIsApplied(synchronous: SQLiteStore.Configuration.Synchronous) async throws {
        let configuration = SQLiteStore.Configuration(readers: 3, synchronous: synchronous, busyTimeout: .milliseconds(1500))
        try await withStore(configuration: configuration) { store, _ in
            // Pragmas of the writer connection.
            let expected = synchronous == .full ? 2 : 1
            try await store.executeForTesting("SELECT 1")
            #expect(store.configuration.readers == 3)
            #expect(try await store.integerForTesting("PRAGMA busy_timeout") == 1500)
            #expect(try await store.integerForTesting("PRAGMA synchronous") == expected)
            #expect(try await store.integerForTesting("PRAGMA foreign_keys") == 1)
            _ = try await store.upsertRegistration(.sample(id: "r"), ifVersion: nil)
            #expect(try await store.registrationCount() == 1)
        }
    }

    /// Device tokens and password hashes are for the service's user only: the directory the
    /// store makes is 0700, the file and its journal files 0600, whatever the umask.
    @Test func aNewStoreIsPrivateToItsUser() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.databasePath
        let previous = umask(0o022)
        defer { umask(previous) }
        try await withStore(at: path) { store in
            _ = try await store.upsertRegistration(.sample(id: "r"), ifVersion: nil)
            #expect(try Self.mode(URL(fileURLWithPath: path).deletingLastPathComponent().path) == 0o700)
            for file in [path, path + "-wal", path + "-shm"] {
                #expect(try Self.mode(file) == 0o600, "\(file)")
            }
        }
    }

    /// A file an earlier release left readable by everyone is made private when it is opened.
    @Test func aFileReadableByOthersIsMadePrivate() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.databasePath
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o644]))
        #expect(try Self.mode(path) == 0o644)
        try await withStore(at: path) { _ throws in
            #expect(try Self.mode(path) == 0o600)
        }
    }

    static func mode(_ path: String) throws -> Int {
        try #require(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber).intValue
    }
}
