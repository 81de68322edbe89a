import Foundation
import HeraldCore
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
    /// credentials for, and ones made from the hub's credentials for the others. The
    /// registry shuts the latter down when the hub's credentials change and at shutdown;
    /// the server's own are the server's to shut down.
    public typealias ProviderFactory = @Sendable (HubDefinition) async throws -> [any PushProvider]

    public let catalog: HubCatalog
    let makeProviders: ProviderFactory
    let hubConfiguration: Hub.Configuration
    let logger: Logger

    private struct OpenHub {
        var hub: Hub
        /// The credentials its providers were made from.
        var credentials: HubCredentials
        /// When the hub was created: a hub deleted and created again under the same name is
        /// another hub, with another store.
        var createdAt: Date
        /// The providers made from the hub's own credentials.
        var owned: [any PushProvider]

        func serves(_ definition: HubDefinition) -> Bool {
            credentials == definition.credentials && createdAt == definition.createdAt
        }
    }

    private struct State {
        var hubs: [String: OpenHub] = [:]
        var opening: [String: Task<OpenHub, any Error>] = [:]
        var started: AsyncStream<(String, Hub)>.Continuation?
        var pending: [(String, Hub)] = []
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
    /// such hub. When the hub's push credentials changed since it was opened (`herald hub
    /// set-credentials`), its providers are made anew and its worker restarted.
    public func hub(named requested: String) async throws -> Hub? {
        guard let definition = try catalog.hub(named: requested) else { return nil }
        return try await hub(for: definition)
    }

    /// The engine of the hub `definition` describes (as just read from the catalog), opened
    /// if needed, or opened anew when its credentials changed or it was created again.
    public func hub(for definition: HubDefinition) async throws -> Hub {
        // Names are looked up case-insensitively; the definition's spelling is the key.
        let name = definition.name
        enum Next {
            case ready(Hub)
            case wait(Task<OpenHub, any Error>)
        }
        let next: Next = try state.withLock { state in
            if state.closed { throw HeraldError.unavailable("the server is shutting down") }
            if let open = state.hubs[name], open.serves(definition) { return .ready(open.hub) }
            if let task = state.opening[name] { return .wait(task) }
            // New credentials keep the store; a re-created hub gets its own.
            let store = state.hubs[name].flatMap { $0.createdAt == definition.createdAt ? $0.hub.store : nil }
            let task = Task { try await self.open(definition, store: store) }
            state.opening[name] = task
            return .wait(task)
        }
        switch next {
        case .ready(let hub):
            return hub
        case .wait(let task):
            do {
                let opened = try await task.value
                return state.withLock { state in
                    state.opening[name] = nil
                    if let current = state.hubs[name], current.credentials == opened.credentials,
                        current.createdAt == opened.createdAt, current.hub !== opened.hub
                    {
                        return current.hub
                    }
                    if state.hubs[name]?.hub !== opened.hub {
                        if let replaced = state.hubs[name] { Self.retire(replaced.owned, logger: logger) }
                        state.hubs[name] = opened
                        if let started = state.started { started.yield((name, opened.hub)) } else { state.pending.append((name, opened.hub)) }
                    }
                    return opened.hub
                }
            } catch {
                state.withLock { $0.opening[name] = nil }
                throw error
            }
        }
    }

    /// Opens a hub's store (or keeps the one already open) and makes its providers.
    private func open(_ definition: HubDefinition, store existing: (any HeraldStore)?) async throws -> OpenHub {
        var hubLogger = logger
        hubLogger[metadataKey: "herald.hub"] = "\(definition.name)"
        let store: any HeraldStore
        if let existing {
            store = existing
        } else {
            store = try await SQLiteStore.open(path: catalog.storePath(of: definition.name), logger: hubLogger)
        }
        let providers: [any PushProvider]
        do {
            providers = try await makeProviders(definition)
        } catch {
            if existing == nil { try? await store.close() }
            throw error
        }
        hubLogger.info(
            existing == nil ? "Opened hub" : "Hub credentials changed: providers made anew",
            metadata: ["herald.platforms": "\(providers.map(\.platform.rawValue).sorted())"]
        )
        return OpenHub(
            hub: Hub(store: store, providers: providers, configuration: hubConfiguration, logger: hubLogger),
            credentials: definition.credentials,
            createdAt: definition.createdAt,
            owned: providers.filter { definition.credentials.isConfigured($0.platform) }
        )
    }

    /// Shuts down the providers of a hub that was opened anew, once the sends its old worker
    /// still has in flight had time to end.
    private static func retire(_ providers: [any PushProvider], logger: Logger) {
        guard !providers.isEmpty else { return }
        Task.detached {
            try? await Task.sleep(for: .seconds(30))
            for provider in providers { try? await provider.shutdown() }
            logger.debug("Shut down the providers of replaced hub credentials", metadata: ["herald.count": "\(providers.count)"])
        }
    }

    /// Opens every hub in the catalog, then runs their delivery workers (and those of hubs
    /// opened later) until graceful shutdown.
    public func run() async throws {
        let (stream, continuation) = AsyncStream<(String, Hub)>.makeStream()
        let pending = state.withLock { state in
            state.started = continuation
            defer { state.pending = [] }
            return state.pending
        }
        for item in pending { continuation.yield(item) }
        for definition in (try? catalog.list()) ?? [] {
            do {
                _ = try await hub(named: definition.name)
            } catch {
                logger.error("Cannot open hub", metadata: ["herald.hub": "\(definition.name)", "error": "\(error)"])
            }
        }
        // One worker per hub; a hub opened anew (new credentials) replaces its worker. The
        // workers are child tasks of this service's task, so they inherit its graceful shutdown.
        let workers = await cancelWhenGracefulShutdown {
            var workers: [String: Task<Void, Never>] = [:]
            for await (name, hub) in stream {
                workers[name]?.cancel()
                workers[name] = Task { try? await DeliveryWorker(hub: hub).run() }
            }
            return workers
        }
        continuation.finish()
        for worker in workers.values {
            worker.cancel()
            await worker.value
        }
        let hubs = state.withLock { state in
            state.closed = true
            return Array(state.hubs.values)
        }
        // Closing must not be cut short by the cancellation that ends the service.
        await Task.detached {
            for open in hubs {
                for provider in open.owned { try? await provider.shutdown() }
                try? await open.hub.store.close()
            }
        }.value
    }
}
