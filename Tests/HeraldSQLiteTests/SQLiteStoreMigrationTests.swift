import Foundation
import HeraldCore
import HeraldSQLite
import HeraldStore
import HeraldStoreConformance
import HeraldTestSupport
import Testing

@Suite("SQLiteStore schema migrations")
struct SQLiteStoreMigrationTests {
    /// A file as schema version 2 left it, with a little of everything in it.
    static let version2File: [String] =
        SchemaFixtures.version1 + SchemaFixtures.version2 + SchemaFixtures.migrationsTable(versions: 1...2) + [
            """
            INSERT INTO registrations (id, platform, handle, p256dh, auth, owner, expires_at, version, created_at, updated_at, tags)
            VALUES ('r1', 'apns', 'abab', NULL, NULL, 'alice', NULL, 3, 1700000000000, 1700000001000, '["news","sports"]')
            """,
            """
            INSERT INTO registrations (id, platform, handle, p256dh, auth, owner, expires_at, version, created_at, updated_at, tags)
            VALUES ('r2', 'webpush', 'https://push.example/e/1', 'BPk', 'AuT', NULL, 1900000000000, 1, 1700000000000, 1700000000000, '["news"]')
            """,
            "INSERT INTO reservations (id, owner, expires_at) VALUES ('reserved', 'alice', 9000000000000)",
            """
            INSERT INTO notifications (id, tag_expression, payloads, state, counts, cursor, enqueued_at, started_at, ended_at, lease_until)
            VALUES ('n0', NULL, '[]', 'Completed', '{"apns":{"Success":2}}', NULL, 1699999990000, 1699999990000, 1699999991000, NULL)
            """,
            """
            INSERT INTO notifications (id, tag_expression, payloads, state, counts, cursor, enqueued_at, started_at, ended_at, lease_until)
            VALUES ('n1', 'news', '[{"body":"e30=","headers":[],"platform":"apns"}]', 'Enqueued', '{}', NULL, 1700000000000, NULL, NULL, NULL)
            """,
            """
            INSERT INTO secure_messages (id, recipient, sender, sealed, created_at, expires_at)
            VALUES ('m1', 'alice', 'bob', x'00010203', 1700000000000, 9000000000000)
            """,
        ]

    @Test func aVersion2FileIsMigratedToTheLatestVersion() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.databasePath
        try await makeDatabase(at: path, statements: Self.version2File)
        let clock = StoreTestClock()

        try await withStore(at: path, clock: clock) { store throws in
            #expect(store.appliedMigrations == [3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18])

            // Old registrations read back with the new fields at their defaults.
            let r1 = try #require(try await store.registration(id: "r1"))
            #expect(r1.tags == ["news", "sports"])
            #expect(r1.owner == "alice")
            #expect(r1.version == 3)
            #expect(r1.createdAt == Date(timeIntervalSince1970: 1_700_000_000))
            #expect(r1.template == nil)
            #expect(r1.pushVariables.isEmpty)
            #expect(r1.installationID == nil)
            #expect(r1.legacyGCM == false)
            let r2 = try #require(try await store.registration(id: "r2"))
            #expect(r2.webPushKeys == WebPushKeys(p256dh: "BPk", auth: "AuT"))
            #expect(r2.expiresAt == Date(timeIntervalSince1970: 1_900_000_000))

            // The tag index written under version 2 still drives resolution and listings.
            #expect(try await store.registrations(matching: .tag("news"), platforms: nil, after: nil, limit: 10).map(\.id) == ["r1", "r2"])
            #expect(try await store.listRegistrations(RegistrationFilter(tag: "sports"), after: nil, limit: 10) == [r1])
            #expect(try await store.listRegistrations(RegistrationFilter(), after: nil, limit: 10).map(\.id) == ["r1", "r2"])
            #expect(try await store.isRegistrationIDValid("reserved"))
            #expect(try await store.readSecureMessage(id: "m1", recipient: "alice", now: clock.now)?.sealed == Data([0, 1, 2, 3]))

            // Old notifications read back and the queue goes on.
            let n1 = try #require(try await store.notification(id: "n1"))
            #expect(n1.payloads == [PlatformPayload(platform: .apns, body: Data("{}".utf8))])
            #expect(n1.template == nil)
            #expect(n1.directTargets == nil)
            #expect(n1.scheduledAt == nil)
            // Version 8: a notification accepted before tracing has no trace context.
            #expect(n1.traceContext == nil)
            #expect(try await store.notification(id: "n0")?.counts.total(.success) == 2)
            #expect(try await store.nextScheduledTime() == nil)
            #expect(try await store.claimNotification(now: clock.now, lease: .seconds(30), owner: "test")?.id == "n1")
            // Version 4's lease owner: the claim's holder saves progress, nobody else.
            try await store.saveProgress(id: "n1", owner: "test", cursor: "r1", counts: OutcomeCounts(), leaseUntil: clock.now)
            await expectCodedError(.leaseLost, of: StoreError.self) {
                try await store.saveProgress(id: "n1", owner: "other", cursor: "r2", counts: OutcomeCounts(), leaseUntil: clock.now)
            }

            // What version 3 adds works on the migrated file.
            var templated = r1
            templated.template = RegistrationTemplate(name: "t", body: #"{"aps":{"alert":"$(m)"}}"#)
            templated.pushVariables = ["m": "hi"]
            let saved = try await store.upsertRegistration(templated, ifVersion: 3)
            #expect(saved.version == 4)
            #expect(try await store.registration(id: "r1") == saved)
            let installation = try await store.upsertInstallation(
                Installation(id: "i1", platform: .apns, pushChannel: "cdcd", userId: "alice", tags: ["news"]),
                ifVersion: nil
            )
            #expect(try await store.installation(id: "i1") == installation)
            // What version 8 adds: the accepting span's traceparent, kept with a new notification.
            var traced = NotificationRecord(id: "n-traced", tagExpression: nil, payloads: n1.payloads, enqueuedAt: clock.now)
            traced.traceContext = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
            try await store.enqueueNotification(traced)
            #expect(try await store.notification(id: "n-traced")?.traceContext == traced.traceContext)
            #expect(try await store.registrations(matching: .tag("news"), platforms: nil, after: nil, limit: 10).count == 3)
            #expect(try await store.listRegistrations(RegistrationFilter(tag: "news"), after: nil, limit: 10).map(\.id) == ["r1", "r2"])
            #expect(
                try await store.integerForTesting(
                    """
                    SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name IN
                    ('registrations_installation_id', 'installations_user_id', 'notifications_scheduled')
                    """
                ) == 3
            )
        }

        // Opened again: nothing left to apply, everything kept.
        try await withStore(at: path, clock: clock) { store throws in
            #expect(store.appliedMigrations.isEmpty)
            #expect(try await store.integerForTesting("SELECT max(version) FROM schema_migrations") == 18)
            #expect(try await store.registration(id: "r1")?.pushVariables == ["m": "hi"])
            #expect(try await store.installation(id: "i1")?.userId == "alice")
        }
    }

    /// Version 10 moves the outputs jobs wrote as one growing value, and the files uploaded
    /// whole, into chunks: they read as they did, and count in the hub's job storage.
    @Test func jobOutputsAndFilesOfVersion9AreMovedIntoChunks() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.databasePath
        try await makeDatabase(
            at: path,
            statements: SQLiteStore.schemaForTesting(through: 9) + SchemaFixtures.migrationsTable(versions: 1...9) + [
                """
                INSERT INTO jobs (id, kind, state, processed, succeeded, failed, created_at, updated_at, output, failures)
                VALUES ('j1', 'ExportRegistrations', 'Completed', 2, 2, 0, 1000, 2000, 'line é 1\nline 2\n', '')
                """,
                """
                INSERT INTO jobs (id, kind, state, processed, succeeded, failed, created_at, updated_at, output, failures)
                VALUES ('j2', 'ImportCreateRegistrations', 'Completed', 1, 0, 1, 1000, 2000, '', 'line 1: bad\n')
                """,
                "INSERT INTO job_files (name, bytes, created_at) VALUES ('in.txt', X'00FF41', 1000)",
            ]
        )
        try await withStore(at: path) { store throws in
            #expect(store.appliedMigrations == [10, 11, 12, 13, 14, 15, 16, 17, 18])
            #expect(try await store.job(id: "j1")?.succeeded == 2)
            #expect(try await store.jobOutput(id: "j1", failures: false) == Data("line é 1\nline 2\n".utf8))
            #expect(try await store.jobOutput(id: "j1", failures: true) == Data())
            #expect(try await store.jobOutput(id: "j2", failures: true) == Data("line 1: bad\n".utf8))
            #expect(try await store.jobFile(name: "in.txt") == Data([0, 255, 65]))
            #expect(try await store.jobUsage() == JobUsage(jobs: 2, activeJobs: 0, bytes: 17 + 12 + 3))
            // And the next page of a job goes after what was moved.
            try await store.saveJobFile(name: "in.txt", bytes: Data("new".utf8), now: Date())
            #expect(try await store.jobFile(name: "in.txt") == Data("new".utf8))
            #expect(try await store.integerForTesting("SELECT count(*) FROM job_file_chunks") == 1)
        }
    }

    /// Version 18 gives the app backend's Live Activity registrations of an earlier release
    /// (its user's, with the one tag `liveactivity:<user>:<activity>`) their kind, and leaves
    /// every other registration a device's.
    @Test func theAppBackendsEarlierLiveActivityRegistrationsBecomeActivityTokens() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.databasePath
        func row(_ id: String, owner: String?, tags: String, installation: String? = nil, platform: String = "apns") -> String {
            """
            INSERT INTO registrations (id, platform, handle, owner, version, created_at, updated_at, tags, installation_id)
            VALUES ('\(id)', '\(platform)', '\(id)-handle', \(owner.map { "'\($0)'" } ?? "NULL"), 1, 1000, 1000, '\(tags)',
                \(installation.map { "'\($0)'" } ?? "NULL"))
            """
        }
        try await makeDatabase(
            at: path,
            statements: SQLiteStore.schemaForTesting(through: 17) + SchemaFixtures.migrationsTable(versions: 1...17) + [
                row("activity", owner: "alice", tags: #"["liveactivity:alice:match-7"]"#),
                row("phone", owner: "alice", tags: #"["sports","username:alice"]"#),
                row("hub-api", owner: nil, tags: #"["liveactivity:alice:match-7"]"#),
                row("someone-elses", owner: "bob", tags: #"["liveactivity:alice:match-7"]"#),
                row("two-tags", owner: "alice", tags: #"["liveactivity:alice:match-7","news"]"#),
                row("installation", owner: "alice", tags: #"["liveactivity:alice:match-7"]"#, installation: "i1"),
                row("android", owner: "alice", tags: #"["liveactivity:alice:match-7"]"#, platform: "fcm"),
            ]
        )
        try await withStore(at: path) { store throws in
            #expect(store.appliedMigrations == [18])
            #expect(try await store.registration(id: "activity")?.handleKind == .liveActivity)
            for id in ["phone", "hub-api", "someone-elses", "two-tags", "installation", "android"] {
                #expect(try await store.registration(id: id)?.handleKind == .device, "\(id)")
            }
        }
    }

    /// A migration is one transaction: one that fails half-way leaves the file as it was, and
    /// applies in full once the obstacle is gone.
    @Test func aFailedMigrationChangesNothing() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.databasePath
        // An `installations` table that is not Herald's: migration 3 fails at its CREATE TABLE,
        // after it has altered `registrations`.
        try await makeDatabase(at: path, statements: Self.version2File + ["CREATE TABLE installations (x)"])

        await #expect(throws: StoreError(code: .cannotOpen, message: "")) {
            try await withStore(at: path) { _ in Issue.record("a migration that failed opened the store") }
        }

        try await SQLiteStore.executeForTesting(path: path, statements: ["DROP TABLE installations"], logger: testLogger)
        try await withStore(at: path) { store throws in
            // Had the ALTER TABLEs of the failed attempt stayed, this would fail on a duplicate column.
            #expect(store.appliedMigrations == [3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18])
            #expect(try await store.registration(id: "r1")?.version == 3)
        }
    }
}
