import Foundation
import HeraldCore
import HeraldStore
import Testing

/// Accounts and sign-in sessions of the app backend.
enum AccountChecks {
    static let all: [StoreCheck] = [
        check("accountsAreUniqueByName") { store, clock in
            let account = Account(username: "alice", passwordHash: "hash-1", createdAt: clock.now)
            try await store.createAccount(account)
            #expect(try await store.account(username: "alice") == account)
            #expect(try await store.account(username: "bob") == nil)
            do {
                try await store.createAccount(Account(username: "alice", passwordHash: "hash-2"))
                Issue.record("a duplicate account was created")
            } catch let error as HeraldError {
                #expect(error.code == .conflict)
                #expect(error.message == "the user name 'alice' is taken")
            }
            #expect(try await store.account(username: "alice")?.passwordHash == "hash-1")
        },

        check("sessionsExpireAndCanBeDeleted") { store, clock in
            let session = Session(tokenHash: "sha256-a", username: "alice", expiresAt: clock.now.addingTimeInterval(60))
            try await store.createSession(session)
            #expect(try await store.session(tokenHash: "sha256-a", now: clock.now) == session)
            #expect(try await store.session(tokenHash: "sha256-a", now: clock.now.addingTimeInterval(59)) != nil)
            #expect(try await store.session(tokenHash: "sha256-a", now: clock.now.addingTimeInterval(60)) == nil)
            #expect(try await store.session(tokenHash: "unknown", now: clock.now) == nil)

            try await store.createSession(Session(tokenHash: "sha256-b", username: "bob", expiresAt: clock.now.addingTimeInterval(60)))
            try await store.deleteSession(tokenHash: "sha256-b")
            #expect(try await store.session(tokenHash: "sha256-b", now: clock.now) == nil)
            try await store.deleteSession(tokenHash: "sha256-b")  // deleting again is fine

            // A later sign-in after the others expired (the SQLite store sweeps them then).
            clock.advance(by: .seconds(600))
            try await store.createSession(Session(tokenHash: "sha256-c", username: "carol", expiresAt: clock.now.addingTimeInterval(60)))
            #expect(try await store.session(tokenHash: "sha256-c", now: clock.now)?.username == "carol")
            #expect(try await store.session(tokenHash: "sha256-a", now: clock.now) == nil)
        },
    ]

    private static func check(_ name: String, _ body: @escaping StoreCheck.Body) -> StoreCheck {
        StoreCheck(area: "accounts and sessions", name: name, body: body)
    }
}
