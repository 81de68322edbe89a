import Foundation
import HeraldCore
import HeraldHub
import HeraldHubWire
import HeraldPostgres
import HeraldStore
import HeraldTestSupport
import Testing

/// The hub catalog on PostgreSQL: what one node changes, every other node sees at once.
@Suite("Hubs in PostgreSQL", .enabled(if: PostgresTestDatabase.isConfigured, PostgresTestDatabase.skipReason))
struct PostgresHubStorageTests {
    /// Two nodes: two databases (two pools) on the same server.
    private func withTwoNodes(_ body: (HubCatalog, HubCatalog) async throws -> Void) async throws {
        try await PostgresTestDatabase.with { first in
            try await PostgresTestDatabase.with { second in
                try await body(HubCatalog(storage: first), HubCatalog(storage: second))
            }
        }
    }

    private func uniqueName() -> String {
        "hub-" + UUID().uuidString.prefix(8).lowercased()
    }

    private func token(_ hub: HubDefinition, key: String) throws -> SharedAccessSignature {
        let resource = "https://localhost/\(hub.name)"
        return try SharedAccessSignature(
            parsing: SharedAccessSignature.make(
                resource: resource, keyName: SharedAccessRule.defaultFullRuleName, key: key, expiry: Date().addingTimeInterval(600)
            )
        )
    }

    @Test func nodesReportingAliveAreCountedUntilTheyFallSilent() async throws {
        try await withTwoNodes { first, second in
            let a = "test-a-" + uniqueName(), b = "test-b-" + uniqueName()
            #expect(try await first.storage.reportAlive(node: a, window: .seconds(2)) == 1)
            #expect(try await second.storage.reportAlive(node: b, window: .seconds(2)) == 2)
            #expect(try await first.storage.reportAlive(node: a, window: .seconds(2)) == 2, "a report again is not a new node")
            try await Task.sleep(for: .milliseconds(2500))
            #expect(try await second.storage.reportAlive(node: b, window: .seconds(2)) == 1, "a silent node is not counted")
        }
    }

    /// The registry of each node counts the live nodes as it reports itself alive, and each
    /// credential's send budget on that node is its share: the rate divided by the live nodes,
    /// the whole rate again once the other node is gone.
    @Test(.timeLimit(.minutes(1)))
    func eachNodesSendBudgetIsItsShareOfTheLiveNodes() async throws {
        try await PostgresTestDatabase.withScratchDatabase { url, _ in
            try await PostgresTestDatabase.with(url: url) { first in
                try await PostgresTestDatabase.with(url: url) { second in
                    let registries = [first, second].map {
                        HubRegistry(
                            catalog: HubCatalog(storage: $0), serverProviders: [], factory: PushProviderFactory(logger: testLogger),
                            catalogRefreshInterval: .milliseconds(200), logger: testLogger)
                    }
                    let rate = try SendRate(perMinute: 600)
                    let budgets = registries.map { $0.sendBudgets.budget(platform: .fcm, credential: "project", rate: rate) }
                    #expect(budgets.allSatisfy { $0.snapshot().nodeShare == 600 })
                    let running = registries.map { registry in Task { try await registry.run() } }
                    try await eventually("both nodes count two", within: .seconds(20)) { registries.allSatisfy { $0.liveNodeCount == 2 } }
                    #expect(budgets.allSatisfy { $0.snapshot().nodeShare == 300 }, "\(budgets.map { $0.snapshot() })")
                    running[1].cancel()
                    _ = await running[1].result
                    try await eventually("the first node counts itself alone", within: .seconds(20)) { registries[0].liveNodeCount == 1 }
                    #expect(budgets[0].snapshot().nodeShare == 600)
                    running[0].cancel()
                    _ = await running[0].result
                }
            }
        }
    }

    @Test func aHubCreatedOnOneNodeIsServedByAnother() async throws {
        try await withTwoNodes { first, second in
            let name = uniqueName()
            let created = try await first.create(name: name)
            let seen = try await second.hub(named: name.uppercased())
            #expect(seen == created)
            let listed = try await second.list().map(\.name)
            #expect(listed.contains(name))
            let duplicate = await #expect(throws: HeraldError.self) { try await second.create(name: name.uppercased()) }
            #expect(duplicate?.code == .conflict)
            #expect(duplicate?.message.contains(name) == true)
        }
    }

    @Test func aKeyRotatedOnOneNodeIsRefusedByAnotherAtOnce() async throws {
        try await withTwoNodes { first, second in
            let name = uniqueName()
            let hub = try await first.create(name: name)
            let oldKey = try #require(hub.rule(named: SharedAccessRule.defaultFullRuleName)).primaryKey
            let url = "https://localhost/\(name)/messages"
            // The second node has the definition cached.
            _ = try await second.authorize(try token(hub, key: oldKey), hub: name, requestURL: url, right: .send, now: Date())
            let rotated = try await first.rotate(name: name, rule: SharedAccessRule.defaultFullRuleName, key: .primary)
            let refused = await #expect(throws: HeraldError.self) {
                try await second.authorize(try token(hub, key: oldKey), hub: name, requestURL: url, right: .send, now: Date())
            }
            #expect(refused?.code == .unauthorized)
            let newKey = try #require(rotated.rule(named: SharedAccessRule.defaultFullRuleName)).primaryKey
            _ = try await second.authorize(try token(hub, key: newKey), hub: name, requestURL: url, right: .send, now: Date())
        }
    }

    /// Each node's change is a compare-and-swap on the definition's revision: changes made on
    /// two nodes at once are all kept, none written over by a node that read before it.
    @Test func changesMadeOnTwoNodesAtOnceAreAllKept() async throws {
        try await withTwoNodes { first, second in
            let name = uniqueName()
            _ = try await first.create(name: name)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<8 {
                    let node = index.isMultiple(of: 2) ? first : second
                    group.addTask {
                        _ = try await node.addRule(name: name, rule: "rule\(index)", rights: [.listen])
                    }
                }
                try await group.waitForAll()
            }
            let rules = try #require(try await first.hub(named: name)).rules.map(\.name)
            for index in 0..<8 { #expect(rules.contains("rule\(index)"), "rule\(index) was lost") }
        }
    }

    @Test func nodesCreatingTheSameHubAtOnceMakeOne() async throws {
        try await withTwoNodes { first, second in
            let name = uniqueName()
            async let a: HubDefinition? = try? first.create(name: name)
            async let b: HubDefinition? = try? second.create(name: name)
            let created = await [a, b].compactMap { $0 }
            #expect(created.count == 1)
        }
    }

    @Test func deletingAHubDeletesItsDataOnEveryNode() async throws {
        try await PostgresTestDatabase.with { database in
            let catalog = HubCatalog(storage: database)
            let name = uniqueName()
            try await catalog.create(name: name)
            let store = try await database.openStore(forHub: name, logger: testLogger)
            _ = try await store.upsertRegistration(
                Registration(id: "r1", platform: .fcm, handle: "device-1", tags: ["a"]), ifVersion: nil
            )
            try await store.createAccount(Account(username: "alice", passwordHash: "x"))
            try await catalog.delete(name: name)
            #expect(try await catalog.hub(named: name) == nil)
            // Created again: empty.
            try await catalog.create(name: name)
            let again = try await database.openStore(forHub: name, logger: testLogger)
            let count = try await again.registrationCount()
            let account = try await again.account(username: "alice")
            #expect(count == 0)
            #expect(account == nil)
            try await catalog.delete(name: name)
        }
    }
}
