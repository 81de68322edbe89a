import Foundation
import HeraldCore
import HeraldStore
import HeraldTestSupport
import Testing

@Suite("SQLiteStore secure messages and rich content")
struct SQLiteStoreContentTests {
    private func message(_ id: String = "m1", to recipient: String = "alice", now: Date, ttl: TimeInterval = 3600) -> SecureMessage {
        SecureMessage(
            id: id, recipient: recipient, sender: "bob", sealed: Data([0, 1, 2, 255, 0, 42]),
            createdAt: now, expiresAt: now.addingTimeInterval(ttl)
        )
    }

    // MARK: Secure messages

    @Test func aReadReturnsTheStateBeforeItAndMarksItRead() async throws {
        try await withStore { store, clock in
            let saved = message(now: clock.now)
            try await store.saveSecureMessage(saved)

            clock.advance(by: .seconds(5))
            let firstReadAt = clock.now
            let first = try #require(try await store.readSecureMessage(id: "m1", recipient: "alice", now: firstReadAt))
            #expect(first.readCount == 0)
            #expect(first.firstReadAt == nil)
            #expect(first.sealed == saved.sealed)
            #expect(first.sender == "bob")
            #expect(first.expiresAt == saved.expiresAt.storeRoundedForTests)

            clock.advance(by: .seconds(5))
            let second = try #require(try await store.readSecureMessage(id: "m1", recipient: "alice", now: clock.now))
            #expect(second.readCount == 1)
            #expect(second.firstReadAt == firstReadAt.storeRoundedForTests)
            let third = try #require(try await store.readSecureMessage(id: "m1", recipient: "alice", now: clock.now))
            #expect(third.readCount == 2)
        }
    }

    @Test func onlyTheRecipientReadsAndOthersLeaveItUnread() async throws {
        try await withStore { store, clock in
            try await store.saveSecureMessage(message(now: clock.now))
            #expect(try await store.readSecureMessage(id: "m1", recipient: "bob", now: clock.now) == nil)
            #expect(try await store.readSecureMessage(id: "m1", recipient: "ALICE", now: clock.now) == nil)
            #expect(try await store.readSecureMessage(id: "nope", recipient: "alice", now: clock.now) == nil)
            #expect(try await store.readSecureMessage(id: "m1", recipient: "alice", now: clock.now)?.readCount == 0)
        }
    }

    @Test func expiredMessagesAreInvisibleThenPurged() async throws {
        try await withStore { store, clock in
            try await store.saveSecureMessage(message("short", now: clock.now, ttl: 60))
            try await store.saveSecureMessage(message("long", now: clock.now, ttl: 3600))
            clock.advance(by: .seconds(60))
            #expect(try await store.readSecureMessage(id: "short", recipient: "alice", now: clock.now) == nil)
            #expect(try await store.purgeExpiredSecureMessages(now: clock.now) == 1)
            #expect(try await store.purgeExpiredSecureMessages(now: clock.now) == 0)
            #expect(try await store.readSecureMessage(id: "long", recipient: "alice", now: clock.now) != nil)
            #expect(try await store.integerForTesting("SELECT count(*) FROM secure_messages") == 1)
        }
    }

    @Test func aTakenIdIsAConflict() async throws {
        try await withStore { store, clock in
            try await store.saveSecureMessage(message(now: clock.now))
            await expectHeraldError(.conflict) { try await store.saveSecureMessage(message(to: "mallory", now: clock.now)) }
            #expect(try await store.readSecureMessage(id: "m1", recipient: "mallory", now: clock.now) == nil)
        }
    }

    // MARK: Rich content

    private func content(_ id: String = "c1", owner: String = "alice", now: Date, ttl: TimeInterval = 3600) -> RichContent {
        RichContent(id: id, owner: owner, mediaType: "image/png", size: 1234, createdAt: now, expiresAt: now.addingTimeInterval(ttl))
    }

    @Test func theOwnerAndRecipientsMayReadNobodyElse() async throws {
        try await withStore { store, clock in
            let saved = content(now: clock.now)
            try await store.saveRichContent(saved)
            #expect(try await store.richContent(id: "c1", now: clock.now)?.owner == "alice")
            #expect(try await store.readableRichContent(id: "c1", username: "alice", now: clock.now)?.mediaType == "image/png")
            #expect(try await !store.isRichContentReadable(id: "c1", by: "bob", now: clock.now))

            try await store.addRichRecipient(id: "c1", username: "bob")
            try await store.addRichRecipient(id: "c1", username: "bob")  // twice is fine
            #expect(try await store.isRichContentReadable(id: "c1", by: "bob", now: clock.now))
            #expect(try await !store.isRichContentReadable(id: "c1", by: "carol", now: clock.now))
            #expect(try await !store.isRichContentReadable(id: "other", by: "alice", now: clock.now))
            let read = try #require(try await store.readableRichContent(id: "c1", username: "bob", now: clock.now))
            #expect(read.size == 1234 && read.createdAt == saved.createdAt.storeRoundedForTests)
        }
    }

    @Test func addingARecipientToUnknownContentIsNotFound() async throws {
        try await withStore { store, _ in
            await expectHeraldError(.notFound) { try await store.addRichRecipient(id: "nope", username: "bob") }
        }
    }

    @Test func expiredContentIsUnreadableAndPurgeReturnsItsIds() async throws {
        try await withStore { store, clock in
            try await store.saveRichContent(content("old", now: clock.now, ttl: 60))
            try await store.saveRichContent(content("new", now: clock.now, ttl: 3600))
            try await store.addRichRecipient(id: "old", username: "bob")
            clock.advance(by: .seconds(61))
            #expect(try await store.richContent(id: "old", now: clock.now) == nil)
            #expect(try await !store.isRichContentReadable(id: "old", by: "alice", now: clock.now))
            #expect(try await store.purgeExpiredRichContent(now: clock.now) == ["old"])
            #expect(try await store.purgeExpiredRichContent(now: clock.now).isEmpty)
            #expect(try await store.richContent(id: "new", now: clock.now) != nil)
            // The recipients went with it.
            #expect(try await store.integerForTesting("SELECT count(*) FROM rich_recipients") == 0)
            await expectHeraldError(.conflict) { try await store.saveRichContent(content("new", now: clock.now)) }
        }
    }

    @Test func contentSurvivesARestart() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let clock = TestClock()
        let first = try await SQLiteStore.open(path: directory.databasePath, logger: testLogger, now: { clock.now })
        try await first.saveSecureMessage(message(now: clock.now))
        try await first.saveRichContent(content(now: clock.now))
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
            #expect(store.appliedMigrations == [2, 3])
            #expect(try await store.registration(id: "r1")?.tags == ["t"])
            try await store.saveSecureMessage(message(now: Date()))
            #expect(try await store.readSecureMessage(id: "m1", recipient: "alice", now: Date()) != nil)
        }
    }
}

extension Date {
    /// As the store keeps dates: to the millisecond.
    var storeRoundedForTests: Date {
        Date(timeIntervalSince1970: (timeIntervalSince1970 * 1000).rounded() / 1000)
    }
}
