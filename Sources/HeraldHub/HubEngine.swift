public import Foundation
public import HeraldCore
public import HeraldMetrics
public import HeraldPush
public import HeraldStore
public import Logging
import NIOCore
import ServiceContextModule
import Synchronization
import Tracing

/// The engine: accepts notifications durably, resolves their targets by streaming from
/// the store, renders per platform, delivers with bounded concurrency, retries what is
/// retryable, removes registrations whose channel is dead, and records outcomes.
///
/// Accepting (``enqueue(tagExpression:payloads:)``) only writes to the store; a
/// ``DeliveryWorker`` delivers. A crash between the two loses nothing: the next worker
/// claims the notification and resumes from its last saved cursor.
public final class HubEngine: Sendable {
    public struct Configuration: Sendable {
        /// Registrations read from the store per page.
        public var pageSize: Int = 2000
        /// Sends in flight at once, over every provider.
        public var concurrency: Int = 512
        public var retry: RetryPolicy = RetryPolicy()
        /// How long a worker owns a notification before another may take it over; renewed
        /// after every page.
        public var lease: Duration = .seconds(60)
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

        public init() {}
    }

    public let store: any HeraldStore
    public let configuration: Configuration
    private let providerTable: Mutex<[Platform: any PushProvider]>
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
    /// The recent outcomes of devices and progress of notifications, for operators' pages.
    public let deliveryLog = DeliveryLog()
    static let workerKey = "\u{0}worker"

    public init(
        store: any HeraldStore,
        providers: [any PushProvider],
        configuration: Configuration = Configuration(),
        metrics: HeraldMetrics.HubMetrics? = nil,
        logger: Logger
    ) {
        self.store = store
        self.configuration = configuration
        self.metrics = metrics
        self.logger = logger
        self.providerTable = Mutex(Self.byPlatform(providers))
        let process = "\(ProcessInfo.processInfo.hostName):\(ProcessInfo.processInfo.processIdentifier):"
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
    public func replaceProviders(_ providers: [any PushProvider]) {
        providerTable.withLock { $0 = Self.byPlatform(providers) }
    }

    /// Stops this engine's delivery workers once their current notification is done (the hub
    /// was deleted, or created again with another store). Accepting still works; the store
    /// keeps what is accepted for whoever delivers next.
    public func stop() {
        stopped.store(true, ordering: .relaxed)
        signal.ring(Self.workerKey, remember: true)
        signal.ring(Self.jobKey, remember: true)
        signal.ring(Self.sweepKey, remember: true)
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

    // MARK: Accepting

    /// Validates and durably accepts a native notification. When this returns, the
    /// notification survives a crash; a ``DeliveryWorker`` delivers it.
    ///
    /// Native notifications reach native registrations only (those without a template).
    ///
    /// - Parameters:
    ///   - tagExpression: whom to send to; `nil` broadcasts to every registration.
    ///   - payloads: one rendered payload per platform to deliver on; registrations on other
    ///     platforms are not targeted.
    ///   - scheduledAt: when delivery may start; a future time stores the notification as
    ///     ``NotificationState/scheduled`` until then. `nil` (or a past time) delivers at once.
    public func enqueue(
        tagExpression: String?,
        payloads: [PlatformPayload],
        scheduledAt: Date? = nil
    ) async throws -> NotificationRecord {
        try Self.checkTagExpression(tagExpression)
        guard !payloads.isEmpty else { throw HeraldError.badRequest("a notification needs at least one platform payload") }
        guard Set(payloads.map(\.platform)).count == payloads.count else {
            throw HeraldError.badRequest("a notification has at most one payload per platform")
        }
        _ = try Self.prepareForSending(payloads)
        let record = NotificationRecord(
            id: Self.newNotificationID(),
            tagExpression: tagExpression,
            payloads: payloads,
            scheduledAt: scheduledAt,
            state: Self.initialState(scheduledAt: scheduledAt)
        )
        return try await accept(record)
    }

    /// Cancels a scheduled notification that has not started: `false` if there is no such
    /// notification; ``HeraldError/conflict(_:)`` if it is no longer scheduled (delivery
    /// started, or it ended or was cancelled already).
    public func cancelScheduled(id: String) async throws -> Bool {
        guard try await store.cancelScheduledNotification(id: id, now: Date()) else { return false }
        signal.ring(id)
        return true
    }

    /// Persists a new notification and wakes a local worker (also for a scheduled one, so that
    /// it bounds its wait by the new time).
    /// The notification keeps the traceparent of its `notification.accept` span, so that its
    /// delivery joins the trace.
    func accept(_ record: NotificationRecord) async throws -> NotificationRecord {
        try await withSpan("notification.accept", ofKind: .internal) { span in
            var record = record
            span.updateAttributes { attributes in
                if let hub = metrics?.hub { attributes["herald.hub"] = hub }
                attributes["herald.platforms"] = (record.template == nil ? record.platforms.map(\.rawValue).sorted() : ["template"])
                attributes["herald.notification.id"] = record.id
            }
            record.traceContext = Self.traceparent(of: span.context)
            try await store.enqueueNotification(record)
            metrics?.notificationAccepted()
            signal.ring(Self.workerKey, remember: true)
            return record
        }
    }

    static func newNotificationID() -> String { UUID.random().uuidString.lowercased() }

    static func initialState(scheduledAt: Date?, now: Date = Date()) -> NotificationState {
        if let scheduledAt, scheduledAt > now { .scheduled } else { .enqueued }
    }

    static func checkTagExpression(_ tagExpression: String?) throws {
        guard let tagExpression else { return }
        do {
            _ = try TagExpression(parsing: tagExpression)
        } catch {
            throw error.heraldError
        }
    }

    /// Waits until a notification has finished or `timeout` has passed, and returns it as it
    /// is then; `nil` if there is no such notification.
    public func waitForCompletion(id: String, timeout: Duration) async throws -> NotificationRecord? {
        let deadline = ContinuousClock.now + timeout
        while true {
            guard let record = try await store.notification(id: id) else { return nil }
            let remaining = deadline - .now
            if record.state.isFinal || remaining <= .zero { return record }
            await signal.wait(id, timeout: min(remaining, .milliseconds(250)))
        }
    }

    public func notification(id: String) async throws -> NotificationRecord? {
        try await store.notification(id: id)
    }

    // MARK: Delivering

    /// Claims and delivers one notification if there is one; `false` if there was none.
    ///
    /// - Parameter now: the time the claim is made at: a scheduled notification is claimed
    ///   once its ``NotificationRecord/scheduledAt`` is not later than this.
    public func deliverNext(now: Date = Date()) async throws -> Bool {
        guard let record = try await store.claimNotification(now: now, lease: configuration.lease, owner: leaseOwner) else {
            return false
        }
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await self.deliver(record) }
                group.addTask { try await self.renewLease(of: record.id) }
                // The delivery ends first, unless the lease was lost (or the task cancelled).
                try await group.next()
                group.cancelAll()
            }
        } catch let error as StoreError where error.code == .leaseLost {
            // The lease ran out while this worker was stalled and another worker took the
            // notification over: it goes on from there; nothing here is saved.
            logger.warning(
                "Lost the lease of a notification to another worker; it continues the delivery",
                metadata: ["herald.notification.id": "\(record.id)"]
            )
        }
        return true
    }

    /// The heartbeat of a delivery: extends the lease every third of its length, so that a page
    /// that takes longer than the lease does not let another worker take the notification over
    /// while this one is alive. Runs until cancelled; throws when the lease was lost.
    private func renewLease(of id: String) async throws {
        let interval = configuration.lease / 3
        while true {
            try await Task.sleep(for: interval)
            // A delivery interrupted by shutdown hands its notification back with a lease that
            // ends now: renewing it then would make the next node wait.
            if isInterrupted { continue }
            do {
                try await store.renewLease(id: id, owner: leaseOwner, until: Date().addingTimeInterval(configuration.lease.seconds))
            } catch let error as StoreError where error.code == .unavailable {
                // The database is away for a moment: the delivery goes on, the next beat tries again.
                logger.warning("Could not renew a delivery lease; trying again", metadata: ["herald.notification.id": "\(id)"])
            }
        }
    }

    /// Saves a page's progress (see ``retryingWhileUnavailable(_:id:_:)``).
    func saveProgress(of id: String, cursor: String?, counts: OutcomeCounts, handBack: Bool) async throws {
        try await retryingWhileUnavailable("save delivery progress", id: id) {
            let leaseUntil = handBack ? Date() : Date().addingTimeInterval(configuration.lease.seconds)
            try await store.saveProgress(id: id, owner: leaseOwner, cursor: cursor, counts: counts, leaseUntil: leaseUntil)
        }
    }

    /// Runs a write of a delivery's state, trying again while the store is unavailable (a
    /// database that restarts or fails over) for as long as the lease would last: the sends
    /// were made, and recording them late beats making them again.
    private func retryingWhileUnavailable(_ what: String, id: String, _ write: () async throws -> Void) async throws {
        let deadline = ContinuousClock.now + configuration.lease
        while true {
            do {
                return try await write()
            } catch let error as StoreError where error.code == .unavailable && ContinuousClock.now < deadline {
                logger.warning("Could not \(what); trying again", metadata: ["herald.notification.id": "\(id)"])
                try await Task.sleep(for: .milliseconds(500))
            }
        }
    }

    /// Waits for work: returns when a notification is enqueued here, after `pollInterval`, or
    /// when the earliest scheduled notification falls due, whichever is first.
    func waitForWork() async {
        var timeout = configuration.pollInterval
        if let next = try? await store.nextScheduledTime() {
            // Not less than a few milliseconds: a due notification another node holds must not
            // make this loop spin.
            let due = Duration.milliseconds(Int64((next.timeIntervalSinceNow * 1000).rounded(.up)))
            timeout = max(.milliseconds(5), min(timeout, due))
        }
        await signal.wait(Self.workerKey, timeout: timeout)
    }

    /// Delivers a claimed notification from its cursor to the end and records the outcome.
    ///
    /// A native notification goes to the native registrations its tag expression matches, once
    /// per handle; a template notification to the matching template registrations (of the named
    /// template, if the send names one), rendered per device, once per handle and template; a
    /// direct notification to its ``NotificationRecord/directTargets``. A notification not
    /// handed over within ``Configuration/abandonAfter`` of its acceptance (or of its scheduled
    /// time) is abandoned.
    @discardableResult
    public func deliver(_ claimed: NotificationRecord) async throws -> NotificationRecord {
        // A child of the span that accepted the notification, however much later and wherever.
        try await withSpan(
            "notification.deliver", context: Self.context(fromTraceparent: claimed.traceContext), ofKind: .consumer
        ) { span in
            span.updateAttributes { attributes in
                if let hub = metrics?.hub { attributes["herald.hub"] = hub }
                attributes["herald.notification.id"] = claimed.partOf ?? claimed.id
                attributes["herald.partition"] = claimed.partOf != nil
                attributes["herald.resumed"] = claimed.cursor != nil
            }
            let delivered = try await deliverInSpan(claimed)
            span.updateAttributes { attributes in
                attributes["herald.state"] = delivered.state.rawValue
                attributes["herald.devices"] = delivered.counts.total
            }
            return delivered
        }
    }

    private func deliverInSpan(_ claimed: NotificationRecord) async throws -> NotificationRecord {
        var logger = self.logger
        logger[metadataKey: "herald.notification.id"] = "\(claimed.id)"
        if Date() > staleAt(claimed) {
            logger.warning("Abandoning a notification that was not delivered in time")
            return try await finish(claimed, state: .abandoned, counts: claimed.counts)
        }
        let plan: DeliveryPlan
        do {
            plan = try DeliveryPlan(claimed)
        } catch {
            logger.error("Abandoning a notification that cannot be delivered", metadata: ["error": "\(error)"])
            return try await finish(claimed, state: .abandoned, counts: claimed.counts)
        }
        logger.debug("Delivering", metadata: ["herald.resume": "\(claimed.cursor != nil)"])
        let counts: OutcomeCounts
        if case .direct(_, let notification, let targets) = plan.mode {
            counts = try await deliverDirect(claimed, notification: notification, targets: targets, logger: logger)
        } else {
            counts = try await deliverToRegistrations(claimed, plan: plan, logger: logger)
        }
        return try await finish(claimed, state: Self.finalState(counts), counts: counts)
    }

    /// The state a delivered notification ends in: `Abandoned` when some devices could not be
    /// reached before it went stale (it was not delivered, even if the others were).
    static func finalState(_ counts: OutcomeCounts) -> NotificationState {
        if counts.total == 0 { return .noTargetFound }
        return counts.total(.abandoned) > 0 ? .abandoned : .completed
    }

    /// When a notification goes stale: ``Configuration/abandonAfter`` after it was accepted,
    /// or after its scheduled time.
    func staleAt(_ record: NotificationRecord) -> Date {
        max(record.enqueuedAt, record.scheduledAt ?? record.enqueuedAt).addingTimeInterval(configuration.abandonAfter.seconds)
    }

    /// Tag and broadcast sends: reads the matching registrations page by page from the cursor,
    /// up to the record's upper bound. A notification whose first page is full is split before
    /// it is sent (``split(_:after:logger:)``), so that the workers of every node share it.
    private func deliverToRegistrations(
        _ claimed: NotificationRecord,
        plan: DeliveryPlan,
        logger: Logger
    ) async throws -> OutcomeCounts {
        let pageSize = configuration.pageSize
        var counts = claimed.counts
        var cursor = claimed.cursor
        var upperBound = claimed.upperBound
        var splitTried = false
        var selection = Selection()

        let store = self.store
        let expression = plan.expression
        let platforms = plan.platforms
        let kind = plan.kind
        let fetch: @Sendable (String?) async throws -> [Registration] = { after in
            try await store.registrations(
                matching: expression, platforms: platforms, kind: kind, after: after, limit: pageSize
            )
        }
        deliveryLog.recordProgress(notification: claimed.partOf ?? claimed.id, part: claimed.id, counts: counts)
        var page = try await fetch(cursor)
        while true {
            var more = page.count == pageSize
            if more, !splitTried, claimed.partOf == nil, upperBound == nil {
                splitTried = true
                upperBound = try await split(claimed, after: cursor, logger: logger)
            }
            // A partition ends at its upper bound (the next one starts after it).
            if let upperBound, let end = page.firstIndex(where: { Self.id($0.id, isAfter: upperBound) }) {
                page.removeSubrange(end...)
                more = false
            }
            guard let last = page.last?.id else { break }
            // Read the next page while this one is being sent (a child task, cancelled if
            // this page fails).
            let readNext = more
            async let next = readNext ? fetch(last) : []

            var expired: [String] = []
            var expiredPerPlatform: [Platform: Int] = [:]
            let providers = self.providers
            let countsBefore = counts
            var reached: [(registrationID: String, outcome: DeliveryOutcome)] = []
            let sent = await fanOut(
                count: page.count,
                staleAt: staleAt(claimed),
                logger: logger,
                step: { index in plan.step(for: page[index], providers: providers, selection: &selection) },
                done: { index, platform, result in
                    counts.add(result.outcome, platform: platform)
                    reached.append((page[index].id, result.outcome))
                    if result.disposition == .channelExpired {
                        expired.append(page[index].id)
                        expiredPerPlatform[platform, default: 0] += 1
                    }
                }
            )
            if !sent {
                // Shutdown came while a push service refused every send: the page is sent again
                // from its start by whoever resumes the notification.
                try await saveProgress(of: claimed.id, cursor: cursor, counts: countsBefore, handBack: true)
                logger.info("Delivery interrupted by shutdown while a push service paused; the page is handed back")
                throw CancellationError()
            }
            if !expired.isEmpty {
                try await store.deleteRegistrations(ids: expired)
                recordExpired(expiredPerPlatform)
                logger.debug("Removed registrations whose channel expired", metadata: ["herald.count": "\(expired.count)"])
            }
            deliveryLog.record(notification: claimed.partOf ?? claimed.id, outcomes: reached)
            deliveryLog.recordProgress(notification: claimed.partOf ?? claimed.id, part: claimed.id, counts: counts)
            cursor = last
            // Interrupted with devices left: hand the notification back (its lease ends now).
            let handBack = isInterrupted && more
            try await saveProgress(of: claimed.id, cursor: cursor, counts: counts, handBack: handBack)
            if handBack {
                logger.info("Delivery interrupted by shutdown; the notification is handed back from its cursor")
                throw CancellationError()
            }
            page = try await next
        }
        return counts
    }

    /// Whether the registration id `id` sorts after `bound`, in the stores' order (bytes).
    static func id(_ id: String, isAfter bound: String) -> Bool {
        bound.utf8.lexicographicallyPrecedes(id.utf8)
    }

    /// Splits a notification whose first page is full into partitions of about
    /// ``Configuration/partitionSize`` registrations after `cursor`, which idle workers here and
    /// on other nodes claim at once; returns the last id this worker keeps, or `nil` when there
    /// are too few registrations to split. A split the store cannot make now (unavailable) is
    /// skipped: this worker then delivers it all.
    private func split(_ claimed: NotificationRecord, after cursor: String?, logger: Logger) async throws -> String? {
        let size = configuration.partitionSize, most = configuration.maxPartitions
        guard size > 0, most > 1 else { return nil }
        do {
            let total = try await store.registrationCount()
            let every = max(size, total / most + 1)
            let boundaries = try await store.registrationIDBoundaries(after: cursor, every: every, limit: most - 1)
            guard let first = boundaries.first else { return nil }
            try await store.splitNotification(id: claimed.id, owner: leaseOwner, at: boundaries)
            logger.info(
                "Split a large notification into partitions that the workers of every node share",
                metadata: ["herald.partitions": "\(boundaries.count + 1)", "herald.partition.size": "\(every)"]
            )
            signal.ring(Self.workerKey, remember: true)
            return first
        } catch let error as StoreError where error.code == .unavailable {
            logger.warning("Could not split a large notification; this worker delivers all of it")
            return nil
        }
    }

    func finish(_ record: NotificationRecord, state: NotificationState, counts: OutcomeCounts) async throws -> NotificationRecord {
        let end = Date()
        try await retryingWhileUnavailable("record the outcome", id: record.id) {
            try await store.finishNotification(id: record.id, owner: leaseOwner, state: state, counts: counts, endedAt: end)
        }
        if record.partOf == nil { metrics?.notificationFinished(state: state.rawValue) }
        signal.ring(record.partOf ?? record.id)
        var finished = record
        finished.state = state
        finished.counts = counts
        finished.endedAt = end
        return finished
    }

    /// Sends to `count` devices with at most `concurrency` sends in flight.
    ///
    /// `step` says, for each index in order, what that device gets; `done` is told every
    /// outcome (also those decided without a send, such as duplicates), on this task, in the
    /// order the sends end. A device whose provider is paused waits for it until `staleAt`
    /// (then it counts as ``DeliveryOutcome/abandoned``) or until delivery is interrupted.
    ///
    /// - Returns: `false` when delivery was interrupted while a device waited for its paused
    ///   provider: that device was not sent to, and the outcomes told are not all final.
    @discardableResult
    func fanOut(
        count: Int,
        staleAt: Date,
        logger: Logger,
        step: (Int) -> DeliveryStep,
        done: (Int, Platform, PushResult) -> Void
    ) async -> Bool {
        var sentToAll = true
        let concurrency = max(1, configuration.concurrency)
        // A child of the current span (a delivery's); its sends get spans only when it is sampled.
        let pageSpan = startSpan("delivery.page", ofKind: .internal)
        let sendContext = pageSpan.isRecording ? pageSpan.context : nil
        // Outcomes are counted for the metrics once per call (a page), not once per device.
        var outcomes = OutcomeCounts()
        func finish(_ index: Int, _ platform: Platform, _ result: PushResult) {
            if case .providerPaused = result.disposition { sentToAll = false }
            outcomes.add(result.outcome, platform: platform)
            done(index, platform, result)
        }
        await withTaskGroup(of: (Int, Platform, PushResult).self) { group in
            var inFlight = 0
            for index in 0..<count {
                switch step(index) {
                case .ignore:
                    continue
                case .outcome(let platform, let outcome):
                    finish(index, platform, PushResult(disposition: .permanentFailure, outcome: outcome))
                case .send(let platform, let provider, let target, let delivery):
                    if inFlight >= concurrency, let finished = await group.next() {
                        finish(finished.0, finished.1, finished.2)
                        inFlight -= 1
                    }
                    group.addTask {
                        (index, platform, await self.send(delivery, to: target, via: provider, staleAt: staleAt, trace: sendContext, logger: logger))
                    }
                    inFlight += 1
                }
            }
            for await finished in group { finish(finished.0, finished.1, finished.2) }
        }
        // Outcomes of a page that is handed back are not final: they are counted when it is sent.
        if sentToAll { metrics?.deliveries(outcomes) }
        Self.recordPage(pageSpan, devices: count, outcomes: outcomes)
        pageSpan.end()
        return sentToAll
    }

    /// Counts registrations removed because their channel expired.
    func recordExpired(_ perPlatform: [Platform: Int]) {
        for (platform, count) in perPlatform { metrics?.channelsExpired(platform: platform, count: count) }
    }

    /// One device: renders its notification if it has a template, then sends.
    private func send(
        _ delivery: DeliveryStep.Delivery,
        to target: PushTarget,
        via provider: any PushProvider,
        staleAt: Date,
        trace: ServiceContext?,
        logger: Logger
    ) async -> PushResult {
        switch delivery {
        case .ready(let notification):
            return await sendWithRetries(notification, to: target, via: provider, staleAt: staleAt, trace: trace, logger: logger)
        case .template(let rendering):
            switch rendering.notification() {
            case .success(let notification):
                return await sendWithRetries(notification, to: target, via: provider, staleAt: staleAt, trace: trace, logger: logger)
            case .failure(let error):
                logger.debug(
                    "A template did not render into a valid notification for a device",
                    metadata: ["herald.platform": "\(provider.platform)", "herald.error": "\(error.code)"]
                )
                let outcome: DeliveryOutcome = error.code == .payloadTooLarge ? .invalidNotificationSize : .invalidNotificationFormat
                return PushResult(disposition: .permanentFailure, outcome: outcome, reason: "template")
            }
        }
    }

    /// One device: the first attempt and the retries the policy allows.
    ///
    /// While the provider is paused (``PushResult/Disposition/providerPaused(retryAfter:)``),
    /// the device waits for it without using up attempts, until `staleAt` (then the outcome is
    /// ``DeliveryOutcome/abandoned``) or until delivery is interrupted (then the paused result
    /// is returned, and the caller hands the page back).
    func sendWithRetries(
        _ notification: PushNotification,
        to target: PushTarget,
        via provider: any PushProvider,
        staleAt: Date,
        trace: ServiceContext? = nil,
        logger: Logger
    ) async -> PushResult {
        var attempt = 1
        while true {
            let span = Self.startPushSpan(in: trace, platform: provider.platform, attempt: attempt)
            let result = await provider.send(notification, to: target)
            Self.endPushSpan(span, result: result)
            switch result.disposition {
            case .providerPaused(let retryAfter):
                if Date() >= staleAt {
                    return PushResult(disposition: .permanentFailure, outcome: .abandoned, status: result.status, reason: result.reason)
                }
                // Waits in short steps, so that shutdown and staleness are noticed at once.
                let wait = min(Duration.milliseconds(Int64(max(0, retryAfter) * 1000)), .milliseconds(500), Duration.seconds(max(0, staleAt.timeIntervalSinceNow)))
                if isInterrupted { return result }
                do {
                    try await Task.sleep(for: wait)
                } catch {
                    return result
                }
                if isInterrupted { return result }
            case .retryable(let retryAfter):
                switch configuration.retry.decide(afterAttempt: attempt, retryAfter: retryAfter) {
                case .giveUp:
                    logger.debug(
                        "Giving up on a device after retries",
                        metadata: ["herald.platform": "\(provider.platform)", "herald.attempts": "\(attempt)", "herald.reason": "\(result.reason ?? "-")"]
                    )
                    return result
                case .retry(let delay):
                    metrics?.retry(platform: provider.platform, cause: result.outcome)
                    do {
                        try await Task.sleep(for: delay)
                    } catch {
                        return result
                    }
                    attempt += 1
                }
            case .delivered, .channelExpired, .permanentFailure:
                return result
            }
        }
    }

    /// Turns stored payloads into provider-ready notifications, once per notification.
    static func prepare(_ payloads: [PlatformPayload]) throws -> [Platform: PushNotification] {
        var prepared: [Platform: PushNotification] = [:]
        for payload in payloads { prepared[payload.platform] = try prepare(payload) }
        return prepared
    }

    /// One payload as a provider-ready notification (an FCM body is parsed into its message).
    static func prepare(_ payload: PlatformPayload) throws -> PushNotification {
        let headers = payload.headers.map { (name: $0.name, value: $0.value) }
        switch payload.platform {
        case .fcm:
            let message = try JSONDecoder().decode(JSONValue.self, from: payload.body)
            return PushNotification(body: .fcmMessage(message), headers: headers)
        case .apns, .wns, .webpush:
            return PushNotification(body: .bytes(ByteBuffer(bytes: payload.body)), headers: headers)
        }
    }

    /// Prepares payloads for a caller that is accepting them: `400` when one cannot be sent.
    static func prepareForSending(_ payloads: [PlatformPayload]) throws(HeraldError) -> [Platform: PushNotification] {
        do {
            return try prepare(payloads)
        } catch {
            throw .badRequest("the fcm payload must be the JSON object of an FCM v1 message")
        }
    }
}

extension Error {
    /// This error as a ``HeraldError`` for a caller: tag-expression syntax errors keep their
    /// message, anything unexpected becomes an internal error with no detail.
    var heraldError: HeraldError {
        if let error = self as? HeraldError { return error }
        if let error = self as? TagExpressionSyntaxError { return error.heraldError }
        return HeraldError(code: .internalError, message: "internal error")
    }
}
