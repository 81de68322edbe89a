import Foundation
public import HeraldCore
import HeraldMetrics
import HeraldPush
import HeraldStore
import Logging
import Tracing

extension HubEngine {
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

    func deliverInSpan(_ claimed: NotificationRecord) async throws -> NotificationRecord {
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
        var run = DeliveryRun(engine: self, record: claimed, staleAt: staleAt(claimed), logger: logger)
        let counts = try await run.run(claimed, plan: plan)
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

    /// Whether the registration id `id` sorts after `bound`, in the stores' order (bytes).
    static func id(_ id: String, isAfter bound: String) -> Bool {
        bound.utf8.lexicographicallyPrecedes(id.utf8)
    }

    /// Splits a notification whose first page is full into partitions of about
    /// ``Configuration/partitionSize`` registrations after `cursor`, which idle workers here and
    /// on other nodes claim at once; returns the last id this worker keeps, or `nil` when there
    /// are too few registrations to split. A split the store cannot make now (unavailable) is
    /// skipped: this worker then delivers it all.
    func split(_ claimed: NotificationRecord, after cursor: String?, logger: Logger) async throws -> String? {
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
        } catch let error as StoreError where error.code == .databaseUnavailable {
            logger.warning("Could not split a large notification; this worker delivers all of it")
            return nil
        }
    }
}
