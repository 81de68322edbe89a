import Foundation
import HeraldSQLite
import HeraldStore
import HeraldStoreConformance
import Testing

/// What the SQLite file holds of accounts and sessions, beyond the store contract (which the
/// conformance suite checks).
@Suite("SQLiteStore accounts and sessions")
struct SQLiteStoreAccountTests {
    @Test func expiredSessionsAreSweptByALaterSignIn() async throws {
        try await withStore { store, clock in
            try await store.createSession(Session(tokenHash: "sha256-a", username: "alice", expiresAt: clock.now.addingTimeInterval(60)))
            try await store.createSession(Session(tokenHash: "sha256-b", username: "bob", expiresAt: clock.now.addingTimeInterval(60)))
            try await store.deleteSession(tokenHash: "sha256-b")
            clock.advance(by: .seconds(600))
            try await store.createSession(Session(tokenHash: "sha256-c", username: "carol", expiresAt: clock.now.addingTimeInterval(60)))
            #expect(try await store.integerForTesting("SELECT count(*) FROM sessions") == 1)
        }
    }
}
