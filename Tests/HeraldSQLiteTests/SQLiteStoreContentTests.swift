import Foundation
import HeraldCore
import HeraldSQLite
import HeraldStore
import HeraldStoreConformance
import Testing

/// What the SQLite file holds of secure and rich content, beyond the store contract (which
/// the conformance suite checks).
@Suite("SQLiteStore secure messages and rich content")
struct SQLiteStoreContentTests {
    @Test func purgedMessagesLeaveTheFile() async throws {
        try await withStore { store, clock in
            try await store.saveSecureMessage(ContentChecks.message("short", now: clock.now, ttl: 60))
            try await store.saveSecureMessage(ContentChecks.message("long", now: clock.now, ttl: 3600))
            clock.advance(by: .seconds(60))
            #expect(try await store.purgeExpiredSecureMessages(now: clock.now) == 1)
            #expect(try await store.integerForTesting("SELECT count(*) FROM secure_messages") == 1)
        }
    }

    @Test func purgedRichContentTakesItsRecipientsFromTheFile() async throws {
        try await withStore { store, clock in
            try await store.saveRichContent(ContentChecks.content("old", now: clock.now, ttl: 60), bytes: ContentChecks.bytes())
            try await store.saveRichContent(ContentChecks.content("new", now: clock.now, ttl: 3600), bytes: ContentChecks.bytes())
            try await store.addRichRecipient(id: "old", username: "bob")
            clock.advance(by: .seconds(61))
            #expect(try await store.purgeExpiredRichContent(now: clock.now) == ["old"])
            #expect(try await store.integerForTesting("SELECT count(*) FROM rich_recipients") == 0)
            #expect(try await store.integerForTesting("SELECT count(*) FROM rich_content_bytes") == 1)
        }
    }

    @Test func richContentFilesOfAnEarlierReleaseAreMovedIntoTheStore() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let files = directory.url.path + "/rich"
        try FileManager.default.createDirectory(atPath: files, withIntermediateDirectories: true)
        try await withStore { store, clock in
            // As an earlier release left it: the metadata in the store, the bytes in a file.
            try await store.saveRichContent(ContentChecks.content("c1", now: clock.now), bytes: Data())
            try await store.executeForTesting("DELETE FROM rich_content_bytes")
            try ContentChecks.bytes().write(to: URL(fileURLWithPath: files + "/c1"))
            try Data([1]).write(to: URL(fileURLWithPath: files + "/expired-and-purged"))
            try Data([2]).write(to: URL(fileURLWithPath: files + "/.upload-crashed"))

            #expect(try await store.importRichContentFiles(directory: files) == 1)
            #expect(try await store.richContentBytes(id: "c1") == ContentChecks.bytes())
            #expect(try await store.richContentBytes(id: "expired-and-purged") == nil)
            #expect(!FileManager.default.fileExists(atPath: files), "every file and the directory are gone")
            #expect(try await store.importRichContentFiles(directory: files) == 0)
        }
    }

    @Test func contentSurvivesARestart() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let clock = StoreTestClock()
        let first = try await SQLiteStore.open(path: directory.databasePath, logger: testLogger, now: { clock.now })
        try await first.saveSecureMessage(ContentChecks.message(now: clock.now))
        try await first.saveRichContent(ContentChecks.content(now: clock.now), bytes: ContentChecks.bytes())
        try await first.addRichRecipient(id: "c1", username: "bob")
        try await first.close()

        let second = try await SQLiteStore.open(path: directory.databasePath, logger: testLogger, now: { clock.now })
        #expect(try await second.readSecureMessage(id: "m1", recipient: "alice", now: clock.now)?.sealed == Data([0, 1, 2, 255, 0, 42]))
        #expect(try await second.isRichContentReadable(id: "c1", by: "bob", now: clock.now))
        try await second.close()
    }

    /// A file written before secure and rich push (schema 1) is upgraded in place.
    @Test func aVersion1FileIsMigrated() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.databasePath
        try await makeDatabase(
            at: path,
            statements: SchemaFixtures.version1 + SchemaFixtures.migrationsTable(versions: 1...1) + [
                """
                INSERT INTO registrations (id, platform, handle, version, created_at, updated_at, tags)
                VALUES ('r1', 'apns', 'abab', 1, 0, 0, '["t"]')
                """
            ]
        )
        try await withStore(at: path) { store throws in
            #expect(store.appliedMigrations == [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18])
            #expect(try await store.registration(id: "r1")?.tags == ["t"])
            try await store.saveSecureMessage(ContentChecks.message(now: Date()))
            #expect(try await store.readSecureMessage(id: "m1", recipient: "alice", now: Date()) != nil)
        }
    }
}
