public import Foundation
import HeraldCore
import HeraldMetrics
import HeraldStore
import Logging

/// A delivery's hold on its notification: the claim, the lease's heartbeat, and the writes
/// only the lease's holder makes (progress, the outcome), tried again while the store is
/// unavailable for a moment.
extension HubEngine {
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
        } catch  where !(error is CancellationError) {
            // The delivery failed (the database was away for longer than the lease, say): hand
            // the notification back from its last saved cursor now, so that a worker (this one
            // a second later, or one on another node) resumes it without waiting out the lease.
            try? await store.renewLease(id: record.id, owner: leaseOwner, until: Date())
            throw error
        }
        return true
    }

    /// The heartbeat of a delivery: extends the lease every quarter of its length, so that a
    /// page that takes longer than the lease does not let another worker take the notification
    /// over while this one is alive, and a node that dies or goes silent loses it within one
    /// lease. Runs until cancelled; throws when the lease was lost.
    func renewLease(of id: String) async throws {
        let interval = configuration.lease / 4
        while true {
            try await Task.sleep(for: interval)
            // A delivery interrupted by shutdown hands its notification back with a lease that
            // ends now: renewing it then would make the next node wait.
            if isInterrupted { continue }
            do {
                try await store.renewLease(id: id, owner: leaseOwner, until: Date().addingTimeInterval(configuration.lease.seconds))
            } catch let error as StoreError where error.code == .databaseUnavailable {
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

    /// Runs a read or write of a delivery, trying again while the store is unavailable (a
    /// database that restarts or fails over) for as long as the lease would last: the sends
    /// were made, and recording them late beats making them again; a page read when the
    /// database is back goes on without waiting for another worker to claim the notification.
    func retryingWhileUnavailable<T>(_ what: String, id: String, _ operation: () async throws -> T) async throws -> T {
        let deadline = ContinuousClock.now + configuration.lease
        while true {
            do {
                return try await operation()
            } catch let error as StoreError where error.code == .databaseUnavailable && ContinuousClock.now < deadline {
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

    func finish(_ record: NotificationRecord, state: NotificationState, counts: OutcomeCounts) async throws -> NotificationRecord {
        let end = Date()
        // The event is recorded before the outcome it reports: a node killed between the two
        // leaves the notification to be finished again, which records the same event (by its
        // id) once more rather than never.
        if let event = Self.notificationEvent(record, state: state, counts: counts, at: end), await wantsWebhookEvent(event.type) {
            await recordWebhookEvents([event])
        }
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
}
