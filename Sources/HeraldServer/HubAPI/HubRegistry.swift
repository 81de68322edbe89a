public import HeraldCore
public import HeraldHub
public import HeraldPush
import HeraldStore
public import Logging
public import ServiceLifecycle
import Synchronization

/// The hubs of the catalog that this server has open: each one's store, engine and
/// delivery worker.
///
/// A hub opens on first use (or at start-up, for those that exist then), so a hub created
/// with `herald hub create` while the server runs is served at once. The registry is a
/// service: it runs one ``DeliveryWorker`` per open hub until shutdown, then closes the
/// stores.
public final class HubRegistry: Service, Sendable {
    /// The push providers of a hub: the server's own for platforms the hub has no
    /// credentials for, and ones made from the hub's credentials for the others.
    public typealias ProviderFactory = @Sendable (HubDefinition) async throws -> [any PushProvider]

    public let catalog: HubCatalog
    let makeProviders: ProviderFactory
    let hubConfiguration: Hub.Configuration
    let logger: Logger

    private struct State {
        var hubs: [String: Hub] = [:]
        var opening: [String: Task<Hub, any Error>] = [:]
        var started: AsyncStream<Hub>.Continuation?
        var pending: [Hub] = []
        var closed = false
    }
    private let state = Mutex(State())

    public init(
        catalog: HubCatalog,
        hubConfiguration: Hub.Configuration = Hub.Configuration(),
        logger: Logger,
        makeProviders: @escaping ProviderFactory
    ) {
        self.catalog = catalog
        self.hubConfiguration = hubConfiguration
        self.logger = logger
        self.makeProviders = makeProviders
    }

    /// The engine of the hub with this name, opened if needed; `nil` if the catalog has no
    /// such hub.
    public func hub(named name: String) async throws -> Hub? {
        guard try catalog.hub(named: name) != nil else { return nil }
        enum Next {
            case ready(Hub)
            case wait(Task<Hub, any Error>)
        }
        let next: Next = try state.withLock { state in
            if state.closed { throw HeraldError.unavailable("the server is shutting down") }
            if let hub = state.hubs[name] { return .ready(hub) }
            if let task = state.opening[name] { return .wait(task) }
            let task = Task { try await self.open(name) }
            state.opening[name] = task
            return .wait(task)
        }
        switch next {
        case .ready(let hub):
            return hub
        case .wait(let task):
            do {
                let hub = try await task.value
                state.withLock { state in
                    if state.hubs[name] == nil {
                        state.hubs[name] = hub
                        if let started = state.started { started.yield(hub) } else { state.pending.append(hub) }
                    }
                    state.opening[name] = nil
                }
                return state.withLock { $0.hubs[name] } ?? hub
            } catch {
                state.withLock { $0.opening[name] = nil }
                throw error
            }
        }
    }

    private func open(_ name: String) async throws -> Hub {
        guard let definition = try catalog.hub(named: name) else {
            throw HeraldError.notFound("no hub named '\(name)'")
        }
        var hubLogger = logger
        hubLogger[metadataKey: "herald.hub"] = "\(name)"
        let store = try await SQLiteStore.open(path: catalog.storePath(of: name), logger: hubLogger)
        let providers: [any PushProvider]
        do {
            providers = try await makeProviders(definition)
        } catch {
            try? await store.close()
            throw error
        }
        hubLogger.info("Opened hub", metadata: ["herald.platforms": "\(providers.map(\.platform.rawValue).sorted())"])
        return Hub(store: store, providers: providers, configuration: hubConfiguration, logger: hubLogger)
    }

    /// Opens every hub in the catalog, then runs their delivery workers (and those of hubs
    /// opened later) until graceful shutdown.
    public func run() async throws {
        let (stream, continuation) = AsyncStream<Hub>.makeStream()
        let pending = state.withLock { state in
            state.started = continuation
            defer { state.pending = [] }
            return state.pending
        }
        for hub in pending { continuation.yield(hub) }
        for definition in (try? catalog.list()) ?? [] {
            do {
                _ = try await hub(named: definition.name)
            } catch {
                logger.error("Cannot open hub", metadata: ["herald.hub": "\(definition.name)", "error": "\(error)"])
            }
        }
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                for await hub in stream {
                    group.addTask { try? await DeliveryWorker(hub: hub).run() }
                }
            }
        }
        continuation.finish()
        let hubs = state.withLock { state in
            state.closed = true
            return Array(state.hubs.values)
        }
        for hub in hubs { try? await hub.store.close() }
    }
}
