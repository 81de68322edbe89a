public import Foundation
import HeraldCore
public import HeraldStore
import HeraldTestSupport
import Testing

/// Secure messages and rich content.
public enum ContentChecks {
    /// A secure message to `recipient`, sealed bytes included, for tests of any store.
    public static func message(_ id: String = "m1", to recipient: String = "alice", now: Date, ttl: TimeInterval = 3600) -> SecureMessage {
        SecureMessage(
            id: id, recipient: recipient, sender: "bob", sealed: Data([0, 1, 2, 255, 0, 42]),
            createdAt: now, expiresAt: now.addingTimeInterval(ttl)
        )
    }

    /// Rich content of `owner`, for tests of any store.
    public static func content(_ id: String = "c1", owner: String = "alice", now: Date, ttl: TimeInterval = 3600) -> RichContent {
        RichContent(id: id, owner: owner, mediaType: "image/png", size: 1234, createdAt: now, expiresAt: now.addingTimeInterval(ttl))
    }

    /// Bytes of rich content of `size`.
    public static func bytes(_ size: Int = 1234) -> Data { Data((0..<size).map { UInt8($0 % 251) }) }

    static let all: [StoreCheck] = [
        check("aReadReturnsTheStateBeforeItAndMarksItRead") { store, clock in
            let saved = ContentChecks.message(now: clock.now)
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
        },

        check("onlyTheRecipientReadsAndOthersLeaveItUnread") { store, clock in
            try await store.saveSecureMessage(ContentChecks.message(now: clock.now))
            #expect(try await store.readSecureMessage(id: "m1", recipient: "bob", now: clock.now) == nil)
            #expect(try await store.readSecureMessage(id: "m1", recipient: "ALICE", now: clock.now) == nil)
            #expect(try await store.readSecureMessage(id: "nope", recipient: "alice", now: clock.now) == nil)
            #expect(try await store.readSecureMessage(id: "m1", recipient: "alice", now: clock.now)?.readCount == 0)
        },

        check("expiredMessagesAreInvisibleThenPurged") { store, clock in
            try await store.saveSecureMessage(ContentChecks.message("short", now: clock.now, ttl: 60))
            try await store.saveSecureMessage(ContentChecks.message("long", now: clock.now, ttl: 3600))
            clock.advance(by: .seconds(60))
            #expect(try await store.readSecureMessage(id: "short", recipient: "alice", now: clock.now) == nil)
            #expect(try await store.purgeExpiredSecureMessages(now: clock.now) == 1)
            #expect(try await store.purgeExpiredSecureMessages(now: clock.now) == 0)
            #expect(try await store.readSecureMessage(id: "long", recipient: "alice", now: clock.now) != nil)
            // A purged message is gone: its id is free again.
            try await store.saveSecureMessage(ContentChecks.message("short", now: clock.now, ttl: 60))
        },

        check("aTakenIdIsAConflict") { store, clock in
            try await store.saveSecureMessage(ContentChecks.message(now: clock.now))
            await expectHeraldError(.conflict) { try await store.saveSecureMessage(ContentChecks.message(to: "mallory", now: clock.now)) }
            #expect(try await store.readSecureMessage(id: "m1", recipient: "mallory", now: clock.now) == nil)
        },

        check("theOwnerAndRecipientsMayReadNobodyElse") { store, clock in
            let saved = ContentChecks.content(now: clock.now)
            try await store.saveRichContent(saved, bytes: ContentChecks.bytes())
            #expect(try await store.richContent(id: "c1", now: clock.now)?.owner == "alice")
            #expect(try await store.richContentBytes(id: "c1") == ContentChecks.bytes())
            #expect(try await store.richContentBytes(id: "other") == nil)
            #expect(try await store.readableRichContent(id: "c1", username: "alice", now: clock.now)?.mediaType == "image/png")
            #expect(try await !store.isRichContentReadable(id: "c1", by: "bob", now: clock.now))

            try await store.addRichRecipient(id: "c1", username: "bob")
            try await store.addRichRecipient(id: "c1", username: "bob")  // twice is fine
            #expect(try await store.isRichContentReadable(id: "c1", by: "bob", now: clock.now))
            #expect(try await !store.isRichContentReadable(id: "c1", by: "carol", now: clock.now))
            #expect(try await !store.isRichContentReadable(id: "other", by: "alice", now: clock.now))
            let read = try #require(try await store.readableRichContent(id: "c1", username: "bob", now: clock.now))
            #expect(read.size == 1234 && read.createdAt == saved.createdAt.storeRoundedForTests)
        },

        check("addingARecipientToUnknownContentIsNotFound") { store, _ in
            await expectHeraldError(.notFound) { try await store.addRichRecipient(id: "nope", username: "bob") }
        },

        check("expiredContentIsUnreadableAndPurgeReturnsItsIds") { store, clock in
            try await store.saveRichContent(ContentChecks.content("old", now: clock.now, ttl: 60), bytes: ContentChecks.bytes())
            try await store.saveRichContent(ContentChecks.content("new", now: clock.now, ttl: 3600), bytes: ContentChecks.bytes(10))
            try await store.addRichRecipient(id: "old", username: "bob")
            clock.advance(by: .seconds(61))
            #expect(try await store.richContent(id: "old", now: clock.now) == nil)
            #expect(try await !store.isRichContentReadable(id: "old", by: "alice", now: clock.now))
            #expect(try await store.purgeExpiredRichContent(now: clock.now) == ["old"])
            #expect(try await store.purgeExpiredRichContent(now: clock.now).isEmpty)
            #expect(try await store.richContentBytes(id: "old") == nil, "the bytes went with it")
            #expect(try await store.richContent(id: "new", now: clock.now) != nil)
            // The recipients went with it: content saved again under its id is its owner's only.
            try await store.saveRichContent(ContentChecks.content("old", now: clock.now), bytes: ContentChecks.bytes(3))
            #expect(try await !store.isRichContentReadable(id: "old", by: "bob", now: clock.now))
            #expect(try await store.richContentBytes(id: "old") == ContentChecks.bytes(3))
            await expectHeraldError(.conflict) {
                try await store.saveRichContent(ContentChecks.content("new", now: clock.now), bytes: ContentChecks.bytes(1))
            }
            #expect(try await store.richContentBytes(id: "new") == ContentChecks.bytes(10), "a refused save changes nothing")
        },
    ]

    private static func check(_ name: String, _ body: @escaping StoreCheck.Body) -> StoreCheck {
        StoreCheck(area: "secure and rich content", name: name, body: body)
    }
}
