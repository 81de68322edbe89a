import ArgumentParser
import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldHub
import HeraldHubWire
import HeraldPostgres
import HeraldSQLite
import Logging
import Synchronization

/// Writes to a node process whose CPU is limited: the node (`herald serve`) in a cgroup of its
/// own, and the load generator (this process) and PostgreSQL outside it, as a deployment has
/// its database on a machine of its own. The node is then what limits the rate, on SQLite and
/// on PostgreSQL alike, and the two rates compare what a node does per write on each store.
extension Bench {
    /// The upserts and installation `PUT`s one limited node took.
    struct NodeWrites {
        var cores: Double
        var upserts: RequestRate?
        var installations: RequestRate?
    }

    /// Starts a node on `store` limited to `cores`, then sends it `upserts` registration upserts
    /// (`PUT /api/register/{id}`) and `installations` installation `PUT`s, each half creating and
    /// half updating, over `connections` connections.
    static func nodeWrites(
        _ store: BenchStore, cores: Double, upserts: Int, installations: Int, connections: Int, logger: Logger
    ) async throws -> NodeWrites {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-bench-writes-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        switch store {
        case .sqlite:
            let hub = try await createBenchHub(in: HubCatalog(storage: DirectoryHubStorage(dataDirectory: directory + "/node")))
            return try await writeToNode(
                hub: hub, directory: directory, databaseURL: nil, database: nil, cores: cores, upserts: upserts, installations: installations,
                connections: connections)
        case .postgres(let server, let serverText):
            return try await PostgresDatabase.withScratchDatabase(on: server, prefix: "herald_bench_writes", logger: logger) { url in
                let hub = try await PostgresDatabase.with(url: url, maximumConnections: 1, logger: logger) { database in
                    try await createBenchHub(in: HubCatalog(storage: database))
                }
                return try await writeToNode(
                    hub: hub, directory: directory, databaseURL: try scratchURLText(serverText, database: url.database), database: url.database, cores: cores,
                    upserts: upserts,
                    installations: installations, connections: connections)
            }
        }
    }

    private static func writeToNode(
        hub: HubDefinition, directory: String, databaseURL: String?, database: String?, cores: Double, upserts: Int, installations: Int,
        connections: Int
    ) async throws -> NodeWrites {
        guard let rule = hub.rule(named: SharedAccessRule.defaultFullRuleName) else {
            throw ValidationError("the new hub has no \(SharedAccessRule.defaultFullRuleName) rule")
        }
        let emulator = try await EmulatorProcess.start(directory: directory)
        defer { emulator.process.stop() }
        let node = try NodeProcess.node(name: "node", directory: directory, settings: emulator.settings, databaseURL: databaseURL, secureKeyFrom: nil)
        let quota: CPUQuota
        do {
            quota = try CPUQuota.make(name: "herald-bench-\(getpid())-writes", cores: cores)
        } catch {
            node.stop()
            throw error
        }
        // A group with a process in it stays: the node ends first.
        defer {
            node.stop()
            quota.remove()
        }
        try quota.add(pid: node.pid)
        try await node.waitUntilSettled()
        say(String(format: "  the node answers, limited to %.2f of a core (cgroup cpu quota); the load generator and PostgreSQL are not", cores))

        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = connections
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let base = "http://127.0.0.1:\(node.port)"
        var writes = NodeWrites(cores: cores)
        do {
            if upserts > 0 {
                let token = try await signUp(http, base: base)
                say("upserts: reserving \((upserts / 2).formatted()) registration ids (POST /api/register)…")
                let ids = IssuedIDs()
                try await inLanes(Array(0..<(upserts / 2)), connections: connections) { _ in
                    let body = try await call(http, "POST", base + "/api/register", body: nil, headers: ["authorization": "Bearer \(token)"])
                    let id = try JSONDecoder().decode(String.self, from: body)
                    ids.list.withLock { $0.append(id) }
                }
                let work = createThenUpdate(ids.list.withLock { $0 })
                say("  \(work.count.formatted()) PUT /api/register/{id} over \(connections) connections…")
                let rate = try await timedLoad(
                    work.map { registrationUpsert($0, token: token) }, base: base, connections: connections, database: database, node: node.pid)
                say(String(format: "  %.0f upserts/s (half creates, half updates)", rate.perSecond))
                writes.upserts = rate
            }
            if installations > 0 {
                let signature = SharedAccessSignature.make(
                    resource: base + "/bench", keyName: rule.name, key: rule.primaryKey, expiry: Date().addingTimeInterval(3600))
                let work = createThenUpdate((0..<(installations / 2)).map { _ in UUID().uuidString.lowercased() })
                say("installations: \(work.count.formatted()) PUT /bench/installations/{id} over \(connections) connections…")
                let rate = try await timedLoad(
                    work.map { installationPut($0, signature: signature) }, base: base, connections: connections, database: database,
                    node: node.pid)
                say(String(format: "  %.0f installation PUTs/s (half creates, half updates)", rate.perSecond))
                writes.installations = rate
            }
        } catch {
            try? await http.shutdown()
            throw error
        }
        try await http.shutdown()
        return writes
    }

    /// The registration ids the node issued, collected from concurrent lanes.
    private final class IssuedIDs: Sendable {
        let list = Mutex<[String]>([])
    }
}
