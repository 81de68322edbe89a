import Foundation
import HeraldCore
import HeraldPush
import HeraldStore
import Logging

extension HubEngine {
    /// Delivers a validated notification at once, not through the queue, to at most `limit`
    /// of the registrations it targets, and reports each one's outcome: a test send
    /// (``SendRequest/Target/test(_:limit:)``), or a send to one registration
    /// (``SendRequest/Target/registration(_:)``, `404` if there is none).
    ///
    /// Targets are chosen as for a queued send (native payloads reach native registrations,
    /// a template send template registrations; one send per handle, or per handle and
    /// template) in the order of registration ids. Registrations whose channel the push
    /// service reports dead are removed. The finished notification is stored, so that
    /// ``notification(id:)`` returns it.
    func testSend(
        _ accepted: NotificationRecord,
        expression: TagExpression?,
        limit: Int,
        registrationID: String?
    ) async throws -> SendResult {
        let started = Date()
        var record = accepted
        record.state = .processing
        record.enqueuedAt = started
        record.startedAt = started
        let plan = try DeliveryPlan(record, expression: expression)
        var logger = self.logger
        logger[metadataKey: "herald.notification.id"] = "\(record.id)"

        // Choose the targets: the first `limit` registrations that would get something.
        var chosen: [(device: DeliveryDevice, step: DeliveryStep)] = []
        var selection = Selection()
        if let registrationID {
            guard let registration = try await store.registration(id: registrationID) else {
                throw HeraldError.notFound("there is no registration \(registrationID)")
            }
            let device = DeliveryDevice.registration(registration)
            let step = plan.step(for: device, providers: self.providers, selection: &selection)
            switch step {
            case .ignore, .outcome(_, .skipped): break
            default: chosen.append((device, step))
            }
        }
        var cursor: String?
        let pageSize = max(limit, min(configuration.pageSize, 1000))
        choosing: while registrationID == nil {
            let page = try await plan.page(after: cursor, pageSize: pageSize, store: store)
            let providers = self.providers
            for device in page {
                let step = plan.step(for: device, providers: providers, selection: &selection)
                switch step {
                case .ignore, .outcome(_, .skipped): continue
                default: chosen.append((device, step))
                }
                if chosen.count == limit { break choosing }
            }
            guard page.count == pageSize, let last = page.last else { break }
            cursor = last.cursor
        }

        // Someone waits for the answer: a paused provider is waited for 10 seconds at most.
        var run = DeliveryRun(engine: self, record: record, staleAt: Date().addingTimeInterval(10), logger: logger)
        let outcomes = try await run.deliver(chosen.map(\.device), steps: chosen.map(\.step), handsBack: false).outcomes

        record.counts = run.counts
        record.state = run.counts.total == 0 ? .noTargetFound : .completed
        record.endedAt = Date()
        try await store.enqueueNotification(record)
        signal.ring(record.id)
        let results = chosen.indices.compactMap { index -> SendResult.Result? in
            guard case .registration(let registration) = chosen[index].device else { return nil }
            return SendResult.Result(registration: registration, outcome: outcomes[index] ?? .unknownError)
        }
        return SendResult(record: record, results: results)
    }
}
