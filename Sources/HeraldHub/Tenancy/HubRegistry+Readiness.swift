import Foundation
public import HeraldCore
import HeraldPush
import HeraldStore

/// Whether this server can do its work: every open hub's store answers, and hubs have a push
/// provider to deliver through.
public struct Readiness: Sendable, Codable, Hashable {
    /// `ready`, or `unready` with the problems.
    public var status: String
    /// What is wrong, one sentence each; empty when ready.
    public var problems: [String]
    /// The open hubs, each with `ok` or what is wrong with its store.
    public var hubs: [String: String]
    /// The platforms the server can deliver to.
    public var platforms: [Platform]
    /// Each configured platform's provider: `ok`, or what keeps it from sending now (an APNs
    /// provider paused because APNs refuses its token update). A hub's own provider is named
    /// `<hub>/<platform>`.
    public var providers: [String: String]

    public var isReady: Bool { problems.isEmpty }
}

extension HubRegistry {
    /// Checks every open hub's store (each must answer within `timeout`) and that there is a
    /// push provider. The stores were migrated when they opened.
    public func readiness(timeout: Duration = .seconds(2)) async -> Readiness {
        let open = openEngines()
        var hubs: [String: String] = [:]
        await withTaskGroup(of: (String, String).self) { group in
            for (name, engine) in open {
                group.addTask {
                    let store = engine.store
                    let answer = await withTaskGroup(of: String?.self) { race in
                        race.addTask {
                            do {
                                try await store.ping()
                                return "ok"
                            } catch let error as StoreError where error.code == .storageFull {
                                return "the store cannot write: its disk is full"
                            } catch {
                                return "the store does not answer: \(error)"
                            }
                        }
                        race.addTask {
                            try? await Task.sleep(for: timeout)
                            return Task.isCancelled ? nil : "the store did not answer within \(timeout)"
                        }
                        let first = await race.next() ?? nil
                        race.cancelAll()
                        return first ?? "the store did not answer"
                    }
                    return (name, answer)
                }
            }
            for await (name, answer) in group { hubs[name] = answer }
        }
        var problems = hubs.sorted { $0.key < $1.key }.filter { $0.value != "ok" }.map { "hub \($0.key): \($0.value)" }
        if open.isEmpty { problems.append("no hub is open") }
        let platforms = Set(open.flatMap { $0.1.configuredPlatforms })
        if platforms.isEmpty {
            problems.append("no push provider is configured: set a platform's credentials, or leave HERALD_EMULATORS=auto")
        }
        // A provider shared by every hub is named by its platform; a hub's own, by both.
        var providers: [String: String] = [:]
        var shared: [Platform: ObjectIdentifier] = [:]
        for (_, engine) in open {
            for (platform, provider) in engine.providers where shared[platform] == nil {
                shared[platform] = ObjectIdentifier(provider as AnyObject)
            }
        }
        for (name, engine) in open {
            for (platform, provider) in engine.providers {
                let key = shared[platform] == ObjectIdentifier(provider as AnyObject) ? platform.rawValue : "\(name)/\(platform.rawValue)"
                providers[key] = provider.problem ?? "ok"
            }
        }
        if !providers.isEmpty, !providers.values.contains("ok") {
            problems.append("no push provider can send now: " + providers.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: "; "))
        }
        return Readiness(
            status: problems.isEmpty ? "ready" : "unready",
            problems: problems,
            hubs: hubs,
            platforms: Platform.allCases.filter(platforms.contains),
            providers: providers
        )
    }
}
