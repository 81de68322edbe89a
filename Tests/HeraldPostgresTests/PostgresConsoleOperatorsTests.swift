import Foundation
import HeraldCore
import HeraldPostgres
import HeraldStore
import Testing

@testable import HeraldServer

/// The console's operators and sessions on PostgreSQL: every node knows them, and sign-ins on
/// several nodes at once lose no session (the shared document is changed by compare-and-set).
@Suite("Console operators in PostgreSQL", .enabled(if: PostgresTestDatabase.isConfigured, PostgresTestDatabase.skipReason))
struct PostgresConsoleOperatorsTests {
    @Test func operatorsAndSessionsAreSharedByTheNodes() async throws {
        try await PostgresTestDatabase.with { first in
            try await PostgresTestDatabase.with { second in
                let a = ConsoleOperators(storage: first, bcryptCost: 4)
                let b = ConsoleOperators(storage: second, bcryptCost: 4)
                let name = "op-" + UUID().uuidString.prefix(8).lowercased()
                let (_, password) = try await a.create(name: name)
                #expect(try await b.list().contains { $0.name == name })
                // Sign-ins at once on both nodes: every session is kept.
                let tokens = try await withThrowingTaskGroup(of: String.self) { group in
                    for n in 0..<8 {
                        let node = n.isMultiple(of: 2) ? a : b
                        group.addTask { try #require(try await node.signIn(name: name, password: password, client: "10.0.0.\(n)")).token }
                    }
                    return try await group.reduce(into: [String]()) { $0.append($1) }
                }
                for token in tokens {
                    #expect(try await a.session(token: token)?.operator.name == name)
                    #expect(try await b.session(token: token)?.operator.name == name)
                }
                // Signing out on one node ends the session on the other.
                try await a.signOut(token: tokens[0])
                #expect(try await b.session(token: tokens[0]) == nil)
                #expect(try await b.session(token: tokens[1]) != nil)
                // Deleting the operator ends every session of theirs.
                try await b.delete(name: name)
                #expect(try await a.session(token: tokens[1]) == nil)
                let missing = await #expect(throws: HeraldError.self) { try await a.delete(name: name) }
                #expect(missing?.code == .notFound)
            }
        }
    }
}
