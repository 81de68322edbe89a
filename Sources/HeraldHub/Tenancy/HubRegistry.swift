import Foundation
import HeraldCore
public import HeraldMetrics
public import HeraldPush
public import HeraldStore
public import Logging
public import ServiceLifecycle
import Synchronization

/// The hubs of the catalog that this server has open: each one's store, engine and
/// delivery worker. It is the one way a hub is opened, the app backend's hub included.
///
/// A hub opens on first use (or at start-up, for those that exist then), so a hub created
/// with `herald hub create` while the server runs is served at once. Each hub has one engine
/// for as long as it exists: when its push credentials change (`herald hub set-credentials`),
/// the engine gets new providers and the replaced ones are shut down once the sends still in
/// flight on them had time to end. A hub deleted and created again under the same name is
/// another hub, with another store and engine.
///
/// The registry is a service, and the owner of every open hub's store, engine and worker: it
/// runs one ``DeliveryWorker``, one ``JobSweeper`` and one ``WebhookSender`` per open hub, and the retiring of replaced providers, as child
/// tasks until graceful shutdown, then closes the stores and shuts down the providers made
/// from hubs' own credentials (``PushProviderFactory``). The server's own providers, which
/// hubs share, are services of their own (``PushProvider`` is a `Service`).
public final class HubRegistry: Service, Sendable {
    public let catalog: HubCatalog
    /// The server's own providers: a hub delivers through them on the platforms it has no
    /// credentials of its own for. They are the server's to shut down.
    let serverProviders: [any PushProvider]
    /// Makes the providers of hubs with credentials of their own; the registry shuts those
    /// down when the hub's credentials change, and when it ends.
    let factory: PushProviderFactory
    let engineConfiguration: HubEngine.Configuration
    let logger: Logger
    /// How long replaced providers are kept for the sends still in flight on them.
    let retirementDelay: Duration
    /// How often the catalog is read again for hubs created, recreated or given new
    /// credentials elsewhere (another node, `herald hub`), so that this node delivers for them
    /// too, and takes over their work if another node dies, without waiting for a request.
    let catalogRefreshInterval: Duration
    /// Where every hub's engine records; the server's `GET /metrics` serves it.
    public let metrics: HeraldMetrics?

    private struct OpenHub {
        var engine: HubEngine
        /// The credentials its providers were made from.
        var credentials: HubCredentials
        /// When the hub was created: a hub deleted and created again under the same name is
        /// another hub, with another store.
        var createdAt: Date
        /// The providers made from the hub's own credentials.
        var owned: [any PushProvider]
        /// The send rates its budgets were given.
        var sendRates: [Platform: SendRate]

        func serves(_ definition: HubDefinition) -> Bool {
            credentials == definition.credentials && createdAt == definition.createdAt && sendRates == definition.sendRates
        }
    }

    /// Work for ``run()``'s task group.
    private enum Work: Sendable {
        /// Run the delivery worker of a newly opened engine.
        case deliver(HubEngine)
        /// Once the sends in flight had time to end, shut down providers that were replaced,
        /// and close the store of an engine replaced by a hub created again (if any).
        case retire([any PushProvider], store: (any HeraldStore)?)
    }

    private struct State {
        var hubs: [String: OpenHub] = [:]
        /// Hubs being opened, with the callers waiting for them.
        var opening: [String: [CheckedContinuation<Void, Never>]] = [:]
        /// ``run()``'s queue of work, once it runs; work before that waits in `pending`.
        var work: AsyncStream<Work>.Continuation?
        var pending: [Work] = []
        var closed = false
        /// The engines ``engine(named:readWithin:)`` found, by the name asked for, with when
        /// the catalog was read for them.
        var recentlyRead: [String: (engine: HubEngine, at: ContinuousClock.Instant)] = [:]

        mutating func submit(_ item: Work) {
            if let work { work.yield(item) } else { pending.append(item) }
        }
    }
    private let state = Mutex(State())
    /// What the scrape-time metric gauges remember (``updateMetricGauges(now:)``).
    let gaugeState = Mutex(MetricGaugeState())
    /// This process's name among the nodes sharing the storage: host, pid and a random part.
    public let nodeID =
        "\(ProcessInfo.processInfo.hostName):\(ProcessInfo.processInfo.processIdentifier):"
        + UUID.random().uuidString.prefix(8).lowercased()
    private let liveNodes = Atomic<Int>(1)
    /// The send budget of every credential the open hubs send with.
    public let sendBudgets = SendBudgets()

    /// How many nodes share the storage (this one included), as last reported: every node
    /// reports every ``catalogRefreshInterval``, and a node silent for three of them is not
    /// counted. One for a data directory.
    public var liveNodeCount: Int { liveNodes.load(ordering: .acquiring) }

    public init(
        catalog: HubCatalog,
        serverProviders: [any PushProvider],
        factory: PushProviderFactory,
        engineConfiguration: HubEngine.Configuration = HubEngine.Configuration(),
        retirementDelay: Duration = .seconds(30),
        catalogRefreshInterval: Duration = .seconds(10),
        metrics: HeraldMetrics? = nil,
        logger: Logger
    ) {
        self.catalog = catalog
        self.serverProviders = serverProviders
        self.factory = factory
        self.engineConfiguration = engineConfiguration
        self.retirementDelay = retirementDelay
        self.catalogRefreshInterval = catalogRefreshInterval
        self.metrics = metrics
        self.logger = logger
    }

    /// The providers of a hub: made from its own credentials where it has them, the
    /// server's for the other platforms. Returns those made for the hub apart.
    private func makeProviders(_ definition: HubDefinition) throws -> (all: [any PushProvider], owned: [any PushProvider]) {
        let owned = try factory.providers(for: definition.credentials)
        let ownPlatforms = Set(owned.map(\.platform))
        return (serverProviders.filter { !ownPlatforms.contains($0.platform) } + owned, owned)
    }

    /// The budgets of the credentials `providers` send with, at the hub's rates.
    private func budgets(for providers: [any PushProvider], _ definition: HubDefinition) -> [Platform: SendBudget] {
        var budgets: [Platform: SendBudget] = [:]
        for provider in providers {
            budgets[provider.platform] = sendBudgets.budget(
                platform: provider.platform, credential: provider.credentialID, rate: definition.sendRate(for: provider.platform))
        }
        return budgets
    }

    /// Where the app backend keeps its accounts, sessions and secure and rich content: the
    /// store this registry opened from the catalog's storage for the hub `name` (opening the
    /// hub if needed), as no more than the app backend needs; `nil` if the catalog has no such
    /// hub. The registry owns the store and closes it with the hub.
    public func appBackendStore(named name: String) async throws -> (any AppBackendStore)? {
        try await engine(named: name)?.store
    }

    /// The engine of the hub with this name, opened if needed; `nil` if the catalog has no
    /// such hub. When the hub's push credentials changed since it was opened, its providers
    /// are made anew first.
    public func engine(named requested: String) async throws -> HubEngine? {
        guard let definition = try await catalog.hub(named: requested) else { return nil }
        return try await engine(for: definition)
    }

    /// The engine of the hub `name` as ``engine(named:)`` found it less than `maximumAge` ago,
    /// or as it finds it now. For calls that do not depend on the hub's definition (its keys,
    /// rules and credentials), such as the app backend's device writes, so that a burst of them
    /// reads the definition once per `maximumAge` instead of once each: a hub deleted or created
    /// again meanwhile is seen within `maximumAge`.
    public func engine(named name: String, readWithin maximumAge: Duration) async throws -> HubEngine? {
        let now = ContinuousClock.now
        // Not once the registry closes (the hub's lookup says so), nor for an engine replaced meanwhile.
        let recent = state.withLock { state in
            state.closed ? nil : state.recentlyRead[name].flatMap { now - $0.at < maximumAge && !$0.engine.isStopped ? $0.engine : nil }
        }
        if let recent { return recent }
        guard let engine = try await engine(named: name) else {
            _ = state.withLock { $0.recentlyRead.removeValue(forKey: name) }
            return nil
        }
        state.withLock { state in
            // One entry per name asked for; the app backend asks for one.
            if state.recentlyRead.count >= 64 { state.recentlyRead.removeAll() }
            state.recentlyRead[name] = (engine, now)
        }
        return engine
    }

    /// The hubs open now, with their engines.
    public func openEngines() -> [(String, HubEngine)] {
        state.withLock { state in state.hubs.map { ($0.key, $0.value.engine) } }
    }

    /// Every provider in use: the server's, and those made from open hubs' own credentials.
    func providersInUse() -> [any PushProvider] {
        serverProviders + state.withLock { state in state.hubs.values.flatMap(\.owned) }
    }

    /// The providers made from each open hub's own credentials, by hub.
    func ownedProviders() -> [String: [any PushProvider]] {
        state.withLock { state in state.hubs.mapValues(\.owned) }
    }

    /// The engine of a hub that is open already, as it is now; `nil` if it is not open.
    public func openEngine(named name: String) -> HubEngine? {
        state.withLock { state in
            state.hubs[name]?.engine ?? state.hubs.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value.engine
        }
    }

    /// The engine of the hub `definition` describes (as just read from the catalog), opened
    /// if needed; given new providers when its credentials changed; opened anew when it was
    /// created again.
    public func engine(for definition: HubDefinition) async throws -> HubEngine {
        // Names are looked up case-insensitively; the definition's spelling is the key.
        let name = definition.name
        enum Next {
            case ready(HubEngine)
            case wait
            case open(OpenHub?)
        }
        while true {
            let next: Next = try state.withLock { state in
                if state.closed { throw HeraldError.unavailable("the server is shutting down") }
                if let open = state.hubs[name], open.serves(definition) { return .ready(open.engine) }
                if state.opening[name] != nil { return .wait }
                state.opening[name] = []
                return .open(state.hubs[name])
            }
            switch next {
            case .ready(let engine):
                return engine
            case .wait:
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let waiting = state.withLock { state in
                        guard state.opening[name] != nil else { return false }
                        state.opening[name]?.append(continuation)
                        return true
                    }
                    if !waiting { continuation.resume() }
                }
            case .open(let current):
                defer {
                    let waiters = state.withLock { $0.opening.removeValue(forKey: name) } ?? []
                    for waiter in waiters { waiter.resume() }
                }
                if let current, current.createdAt == definition.createdAt {
                    return try await replaceProviders(of: current, for: definition)
                }
                return try await open(definition, replacing: current)
            }
        }
    }

    /// Opens a hub's store, makes its providers and starts its worker; an engine of an earlier
    /// hub of the same name is stopped and its store closed.
    private func open(_ definition: HubDefinition, replacing replaced: OpenHub?) async throws -> HubEngine {
        let hubLogger = hubLogger(definition.name)
        let store = try await catalog.storage.openStore(forHub: definition.name, logger: hubLogger)
        let providers: (all: [any PushProvider], owned: [any PushProvider])
        do {
            providers = try makeProviders(definition)
        } catch {
            try? await store.close()
            throw error
        }
        let engine = HubEngine(
            store: store, providers: providers.all, budgets: budgets(for: providers.all, definition), configuration: engineConfiguration,
            metrics: metrics?.hub(definition.name), logger: hubLogger
        )
        let opened = OpenHub(
            engine: engine,
            credentials: definition.credentials,
            createdAt: definition.createdAt,
            owned: providers.owned,
            sendRates: definition.sendRates
        )
        // `nil` when the registry closed while the hub was being opened.
        let registered: OpenHub?? = state.withLock { state in
            if state.closed { return nil }
            state.hubs[definition.name] = opened
            state.submit(.deliver(engine))
            return .some(replaced)
        }
        guard let closing = registered else {
            // Nobody else will close what was just opened.
            for provider in providers.owned { try? await provider.shutdown() }
            try? await store.close()
            throw HeraldError.unavailable("the server is shutting down")
        }
        if let closing {
            closing.engine.stop()
            state.withLock { $0.submit(.retire(closing.owned, store: closing.engine.store)) }
        }
        hubLogger.info("Opened hub", metadata: ["herald.platforms": "\(providers.all.map(\.platform.rawValue).sorted())"])
        return engine
    }

    /// Gives an open hub's engine providers made from its new credentials; the replaced ones
    /// are retired.
    private func replaceProviders(of current: OpenHub, for definition: HubDefinition) async throws -> HubEngine {
        if current.credentials == definition.credentials {
            // Only the send rates changed: the providers stay.
            current.engine.replaceBudgets(budgets(for: Array(current.engine.providers.values), definition))
            state.withLock { $0.hubs[definition.name]?.sendRates = definition.sendRates }
            hubLogger(definition.name).info("Hub send rates changed", metadata: ["herald.send_rates": "\(definition.sendRates)"])
            return current.engine
        }
        let (providers, owned) = try makeProviders(definition)
        current.engine.replaceProviders(providers, budgets: budgets(for: providers, definition))
        state.withLock { state in
            state.hubs[definition.name]?.credentials = definition.credentials
            state.hubs[definition.name]?.sendRates = definition.sendRates
            state.hubs[definition.name]?.owned = owned
            if !current.owned.isEmpty { state.submit(.retire(current.owned, store: nil)) }
        }
        hubLogger(definition.name).info(
            "Hub credentials changed: providers made anew",
            metadata: ["herald.platforms": "\(providers.map(\.platform.rawValue).sorted())"]
        )
        return current.engine
    }

    private func hubLogger(_ name: String) -> Logger {
        var hubLogger = logger
        hubLogger[metadataKey: "herald.hub"] = "\(name)"
        return hubLogger
    }

    /// Opens every hub in the catalog, then runs the delivery workers of the open hubs (and of
    /// hubs opened later) until graceful shutdown; then, once every worker has ended, closes
    /// the hubs (``close()``): their stores, and the providers made from their own credentials.
    public func run() async throws {
        let (stream, continuation) = AsyncStream<Work>.makeStream()
        let start: [Work] = state.withLock { state in
            state.work = continuation
            defer { state.pending = [] }
            // Every open hub gets a worker; what else waited is done now.
            let retiring = state.pending.filter { if case .deliver = $0 { false } else { true } }
            return state.hubs.values.filter { !$0.engine.isStopped }.map { .deliver($0.engine) } + retiring
        }
        for item in start { continuation.yield(item) }
        await reportAlive()
        await openEveryHub()
        let retirementDelay = self.retirementDelay
        let logger = self.logger
        // Workers and retirements are child tasks of this service's task. Graceful shutdown
        // ends the stream; the workers see it too and stop after the page they are sending
        // (handing their notification back), and the retirements' delays are cut short.
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                group.addTask {
                    await cancelWhenGracefulShutdown {
                        while !Task.isCancelled {
                            try? await Task.sleep(for: self.catalogRefreshInterval)
                            if Task.isCancelled { break }
                            await self.reportAlive()
                            await self.openEveryHub()
                        }
                    }
                }
                for await item in stream {
                    switch item {
                    case .deliver(let engine):
                        group.addTask { try? await DeliveryWorker(engine: engine).run() }
                        group.addTask { try? await JobSweeper(engine: engine).run() }
                        group.addTask { try? await WebhookSender(engine: engine).run() }
                    case .retire(let providers, let store):
                        group.addTask {
                            await cancelWhenGracefulShutdown { try? await Task.sleep(for: retirementDelay) }
                            for provider in providers { try? await provider.shutdown() }
                            try? await store?.close()
                            logger.debug("Retired a replaced hub's providers", metadata: ["herald.count": "\(providers.count)"])
                        }
                    }
                }
            }
        } onGracefulShutdown: {
            continuation.finish()
        }
        state.withLock { $0.work = nil }
        continuation.finish()
        await close()
    }

    /// Reports this node alive to the storage and keeps the count of live nodes it returns.
    private func reportAlive() async {
        do {
            let count = try await catalog.storage.reportAlive(node: nodeID, window: catalogRefreshInterval * 3)
            // The budgets first: whoever sees the new count sees them shared by it.
            sendBudgets.share(among: count)
            let previous = liveNodes.exchange(max(1, count), ordering: .releasing)
            if count != previous {
                logger.info("Nodes sharing the storage", metadata: ["herald.nodes": "\(count)"])
            }
        } catch {
            logger.warning("Cannot report this node alive", metadata: ["error": "\(error)"])
        }
    }

    /// Opens every hub of the catalog that is not open (or gives an open one the credentials it
    /// has now): at start-up, and every ``catalogRefreshInterval``.
    private func openEveryHub() async {
        let definitions: [HubDefinition]
        do {
            definitions = try await catalog.list()
        } catch {
            logger.warning("Cannot read the hubs", metadata: ["error": "\(error)"])
            return
        }
        for definition in definitions {
            do {
                _ = try await engine(for: definition)
            } catch {
                logger.error("Cannot open hub", metadata: ["herald.hub": "\(definition.name)", "error": "\(error)"])
            }
        }
    }

    /// Stops every engine, shuts down the providers made from hubs' own credentials and
    /// closes the stores. Later requests for a hub fail with `unavailable`. ``run()`` ends with
    /// it; whoever made a registry that never ran calls it. Calling it again does nothing.
    public func close() async {
        let hubs = state.withLock { state in
            state.closed = true
            state.work?.finish()
            let hubs = Array(state.hubs.values)
            state.hubs = [:]
            return hubs
        }
        for open in hubs {
            open.engine.stop()
            for provider in open.owned { try? await provider.shutdown() }
            try? await open.engine.store.close()
        }
    }
}
