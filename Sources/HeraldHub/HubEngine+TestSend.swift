import Foundation
public import HeraldCore
import HeraldPush
import HeraldStore
import Logging

extension HubEngine {
    /// Sends a notification at once, not through the queue, to at most `limit` of the
    /// registrations it targets, and reports each one's outcome: the hub API's test send.
    ///
    /// Targets are chosen as for a queued send (native payloads reach native registrations,
    /// a template send template registrations; one send per handle, or per handle and
    /// template) in the order of registration ids. Registrations whose channel the push
    /// service reports dead are removed. The finished notification is stored, so that
    /// ``notification(id:)`` returns it.
    ///
    /// - Parameters:
    ///   - tagExpression: whom to send to; `nil` for every registration.
    ///   - payloads: native payloads, one per platform; empty for a template send.
    ///   - template: the template send's properties; `nil` for a native send.
    ///   - limit: the most registrations reached (at least 1).
    ///   - registrationID: one registration to send to instead of those `tagExpression`
    ///     targets (a console's "test send to this device"); `404` if there is none.
    public func testSend(
        tagExpression: String?,
        payloads: [PlatformPayload],
        template: TemplateSend?,
        limit: Int = 10,
        registrationID: String? = nil
    ) async throws -> TestSendResult {
        try Self.checkTagExpression(tagExpression)
        if let template {
            guard payloads.isEmpty else {
                throw HeraldError.badRequest("a test send is either native (payloads) or a template send, not both")
            }
            try Self.check(template)
        } else {
            guard !payloads.isEmpty else { throw HeraldError.badRequest("a notification needs at least one platform payload") }
            guard Set(payloads.map(\.platform)).count == payloads.count else {
                throw HeraldError.badRequest("a notification has at most one payload per platform")
            }
            _ = try Self.prepareForSending(payloads)
        }
        let started = Date()
        var record = NotificationRecord(
            id: Self.newNotificationID(),
            tagExpression: tagExpression,
            payloads: payloads,
            template: template,
            state: .processing,
            enqueuedAt: started,
            startedAt: started
        )
        let plan = try DeliveryPlan(record)
        var logger = self.logger
        logger[metadataKey: "herald.notification.id"] = "\(record.id)"

        let limit = max(1, limit)
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
        let results = chosen.indices.compactMap { index -> TestSendResult.Result? in
            guard case .registration(let registration) = chosen[index].device else { return nil }
            return TestSendResult.Result(registration: registration, outcome: outcomes[index] ?? .unknownError)
        }
        return TestSendResult(record: record, results: results)
    }
}
