import Foundation
public import HeraldCore
public import HeraldMetrics
public import HeraldPush
public import HeraldStore
public import Logging
import Synchronization

/// The engine: accepts notifications durably, resolves their targets by streaming from
/// the store, renders per platform, delivers with bounded concurrency, retries what is
/// retryable, removes registrations whose channel is dead, and records outcomes.
///
/// Every send enters through ``send(_:)``, one ``SendRequest`` validated once. Accepting only
/// writes to the store; a ``DeliveryWorker`` delivers, through one delivery run whatever the
/// target. A crash between the two loses nothing: the next worker claims the notification and
/// resumes from its last saved cursor.
public final class HubEngine: Sendable {
    public struct Configuration: Sendable {
        /// Registrations read from the store per page; progress is saved after each, so a
        /// node killed mid-delivery has at most this many devices sent to again. 500 sends as
        /// fast as 2,000 did and for as little CPU, with a quarter of the repeats.
        public var pageSize: Int = 500
        /// Sends in flight at once, over every provider.
        public var concurrency: Int = 512
        public var retry: RetryPolicy = RetryPolicy()
        /// How long a worker owns a notification before another may take it over: after a node
        /// dies (or goes silent), another node resumes its notifications within this. Renewed
        /// every quarter of it by the delivery's own heartbeat, and after every page, so a node
        /// that is alive but slow keeps its work.
        public var lease: Duration = .seconds(10)
        /// A notification not finished this long after it was accepted is abandoned
        /// (the established hub's rule: stale pushes do more harm than good).
        public var abandonAfter: Duration = .seconds(30 * 60)
        /// How often an idle worker looks for work enqueued by another node.
        public var pollInterval: Duration = .seconds(1)
        /// A notification whose first page of devices is full is split into partitions of
        /// about this many registrations (counting every registration of the hub), which the
        /// delivery workers of every node claim and deliver in parallel; 0 never splits.
        public var partitionSize: Int = 25_000
        /// The most partitions one notification is split into: the hub's registrations
        /// divided by this, when that is more than ``partitionSize``, sets the size.
        public var maxPartitions: Int = 64
        /// This node's lasting name (kept in its data directory, so it outlives the process):
        /// leases begin with it, so that a node restarted after a crash resumes the
        /// notifications it held at once rather than when their leases run out. `nil`: a name
        /// for this process only (a crash then costs the lease).
        public var nodeName: String? = nil
        /// The hosts that the handles of WNS and Web Push devices may name: a registration,
        /// installation or direct send naming another is refused (`badRequest`) before
        /// anything is saved. The real services' hosts by default.
        public var channelHosts: PushChannelHosts = .publicServices
        /// What the hub's export and import jobs may take: jobs kept, jobs waiting or running
        /// at once, bytes of job files and outputs.
        public var jobQuota = JobQuota()
        /// The largest job file a client uploads (or an import reads).
        public var maxJobFileBytes = 64 * 1024 * 1024
        /// How long finished jobs (with their outputs) and uploaded job files are kept.
        public var jobRetention: Duration = .seconds(7 * 24 * 3600)
        /// How often the ``JobSweeper`` deletes what outlived ``jobRetention``.
        public var jobSweepInterval: Duration = .seconds(3600)
        /// Posts the hub's webhook events, shared by every hub of the node; `nil`: this node
        /// records events in the outbox but sends none (another node does).
        public var webhookPoster: WebhookPoster? = nil
        /// When a failed webhook event is tried again, and for how long before its endpoint is
        /// disabled.
        public var webhookRetry: WebhookRetrySchedule = .standard
        /// How long a node holds the webhook events it claimed before another may send them.
        public var webhookLease: Duration = .seconds(60)
        /// How often an idle ``WebhookSender`` looks for due events.
        public var webhookPollInterval: Duration = .seconds(1)
        /// Events posted at once per hub.
        public var webhookBatchSize: Int = 16
        /// How long a node trusts what it last read of the hub's endpoints (which events they
        /// want) before reading them again: an endpoint added, enabled or removed on another
        /// node takes effect here within this time; on this node, at once.
        public var webhookEndpointsRefresh: Duration = .seconds(5)
        /// How long each endpoint's delivery log keeps an attempt.
        public var webhookLogRetention: Duration = .seconds(7 * 24 * 3600)
        /// How often a node reports the receipts it recorded as `notification.confirmed` events:
        /// one event per notification and interval, with its counts so far, not one per device.
        public var confirmedEventInterval: Duration = .seconds(10)

        public init() {}
    }

    /// The hub's store. Only the engine touches it for devices and notifications; the app
    /// backend gets what it keeps there from the registry (``HubRegistry/appBackendStore(named:)``),
    /// and the tests and `herald bench` seed it directly.
    package let store: any HeraldStore
    public let configuration: Configuration
    private let providerTable: Mutex<[Platform: any PushProvider]>
    private let budgetTable: Mutex<[Platform: SendBudget]>
    private let stopped = Atomic<Bool>(false)
    private let interrupted = Atomic<Bool>(false)
    let logger: Logger
    /// Where this hub's acceptances, outcomes, retries and expired channels are counted.
    let metrics: HeraldMetrics.HubMetrics?
    /// Who holds the leases this engine's workers take: the node's lasting name (or one for
    /// this process), then the host and process, so an operator can tell which node delivers
    /// a notification, and a random part unique to this engine, so that a worker that lost a
    /// lease (it ran out while the worker was stalled) changes nothing.
    public let leaseOwner: String
    /// What every lease of this node begins with, whichever process of it took the lease.
    let leaseOwnerPrefix: String?
    let signal = Signal()
    /// What the hub's endpoints want, as last read (see ``wantedWebhookEvents()``), and how
    /// many changes this node made to them: a read that began before a change is not kept.
    let webhookSubscriptions = Mutex<(known: WebhookSubscriptions?, changes: Int)>((nil, 0))
    /// The notifications this node recorded receipts for since its last `notification.confirmed`
    /// events, and whether a report is scheduled.
    let confirmedSinceReport = Mutex<(notifications: Set<String>, scheduled: Bool)>(([], false))
    /// Notifications that receipts named and that were found stored (see ``confirm(_:from:now:)``).
    let knownNotifications = Mutex<Set<String>>([])
    /// The recent outcomes of devices and progress of notifications, for operators' pages.
    public let deliveryLog = DeliveryLog()
    static let workerKey = "\u{0}worker"

    public init(
        store: any HeraldStore,
        providers: [any PushProvider],
        budgets: [Platform: SendBudget] = [:],
        configuration: Configuration = Configuration(),
        metrics: HeraldMetrics.HubMetrics? = nil,
        logger: Logger
    ) {
        self.store = store
        self.configuration = configuration
        self.metrics = metrics
        self.logger = logger
        self.providerTable = Mutex(Self.byPlatform(providers))
        self.budgetTable = Mutex(budgets)
        let process =
            "\(ProcessInfo.processInfo.hostName):\(ProcessInfo.processInfo.processIdentifier):"
            + UUID.random().uuidString.prefix(8).lowercased()
        self.leaseOwnerPrefix = configuration.nodeName.map { "\($0)/" }
        self.leaseOwner = (leaseOwnerPrefix ?? "") + process
    }

    /// Ends the leases an earlier run of this node held (it was killed, or stopped without
    /// handing its work back), so that the workers here or on other nodes resume those
    /// notifications now, from their saved cursors, instead of when the leases run out.
    /// Nothing to do for an engine without a ``Configuration/nodeName``.
    func resumeLeasesOfEarlierRuns() async {
        guard let leaseOwnerPrefix else { return }
        do {
            let ended = try await store.endLeases(ownerPrefix: leaseOwnerPrefix, except: leaseOwner, now: Date())
            guard ended > 0 else { return }
            logger.info(
                "Resuming the deliveries this node held when it stopped, without waiting for their leases",
                metadata: ["herald.count": "\(ended)"])
            signal.ring(Self.workerKey, remember: true)
        } catch {
            logger.warning("Could not take back this node's earlier leases; they are resumed when they run out", metadata: ["error": "\(error)"])
        }
    }

    /// The push provider of each platform that has one: read once per page of devices, so
    /// that a change of providers takes effect between pages.
    var providers: [Platform: any PushProvider] { providerTable.withLock { $0 } }

    /// The platforms that have a provider.
    public var configuredPlatforms: Set<Platform> { Set(providers.keys) }

    /// The provider this hub delivers to `platform` through now, if any.
    public func provider(for platform: Platform) -> (any PushProvider)? { providers[platform] }

    /// Delivers through `providers` from now on (the hub's push credentials changed). Sends
    /// in flight finish on the providers they started with; shutting the replaced ones down
    /// is the caller's business.
    public func replaceProviders(_ providers: [any PushProvider], budgets: [Platform: SendBudget] = [:]) {
        providerTable.withLock { $0 = Self.byPlatform(providers) }
        budgetTable.withLock { $0 = budgets }
    }

    /// Sends against `budgets` from now on (the hub's send rates changed).
    func replaceBudgets(_ budgets: [Platform: SendBudget]) {
        budgetTable.withLock { $0 = budgets }
    }

    /// The send budget of `platform`'s credential (see ``SendBudget``); `nil` when the engine
    /// was given none (it then sends as fast as its concurrency allows).
    public func budget(for platform: Platform) -> SendBudget? { budgetTable.withLock { $0[platform] } }

    /// Stops this engine's delivery workers once their current notification is done (the hub
    /// was deleted, or created again with another store). Accepting still works; the store
    /// keeps what is accepted for whoever delivers next.
    public func stop() {
        stopped.store(true, ordering: .relaxed)
        signal.ring(Self.workerKey, remember: true)
        signal.ring(Self.jobKey, remember: true)
        signal.ring(Self.sweepKey, remember: true)
        signal.ring(Self.webhookKey, remember: true)
    }

    /// Wakes idle delivery workers: work was announced by another node.
    func wakeWorkers() {
        signal.ring(Self.workerKey, remember: true)
    }

    /// Whether ``stop()`` was called.
    public var isStopped: Bool { stopped.load(ordering: .relaxed) }

    /// Graceful shutdown: delivery stops after the page of devices being sent. The
    /// notification keeps its cursor and counts and is handed back at once (its lease ends
    /// now), so that the next worker (this node's after a restart, or another node's)
    /// resumes it without waiting for the lease to run out and without sending that page
    /// again.
    public func interruptDelivery() {
        interrupted.store(true, ordering: .relaxed)
        signal.ring(Self.workerKey, remember: true)
    }

    /// Whether ``interruptDelivery()`` was called.
    public var isInterrupted: Bool { interrupted.load(ordering: .relaxed) }

    private static func byPlatform(_ providers: [any PushProvider]) -> [Platform: any PushProvider] {
        var byPlatform: [Platform: any PushProvider] = [:]
        for provider in providers { byPlatform[provider.platform] = provider }
        return byPlatform
    }
}
