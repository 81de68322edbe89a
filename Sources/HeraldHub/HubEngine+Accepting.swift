public import Foundation
public import HeraldCore
import HeraldMetrics
import HeraldPush
import HeraldStore
import Logging
import Tracing

extension HubEngine {
    /// The most devices one direct send reaches (the established hub's batch limit).
    public static let directTargetLimit = 1000

    /// The one way into the engine: validates `request` once and has it delivered.
    ///
    /// A send to tags, to a user or to devices is accepted durably: when this returns, the
    /// notification survives a crash, and a ``DeliveryWorker`` delivers it (at its scheduled
    /// time, if it has one); the result has no ``SendResult/results``. A test send, or a send
    /// to one registration, is delivered at once, not through the queue, and the result tells
    /// each registration's outcome.
    ///
    /// - Throws: ``HeraldError`` `badRequest` for a request that cannot be sent (nothing is
    ///   stored), `notFound` for a send to a registration that does not exist.
    public func send(_ request: SendRequest) async throws -> SendResult {
        let accepted = try validate(request)
        switch request.target {
        case .test(let tags, let limit):
            return try await testSend(accepted, expression: tags?.expression, limit: limit, registrationID: nil)
        case .registration(let id):
            return try await testSend(accepted, expression: nil, limit: 1, registrationID: id)
        case .tags, .user, .devices:
            return try await accept(accepted, idempotencyKey: request.options.idempotencyKey)
        }
    }

    /// Persists a new notification and wakes a local worker (also for a scheduled one, so that
    /// it bounds its wait by the new time). The notification keeps the traceparent of its
    /// `notification.accept` span, so that its delivery joins the trace.
    ///
    /// Sent under `key`, it is stored unless the key holds a notification already: then that
    /// one is answered again, as it is now, and nothing is stored, announced or counted.
    /// Concurrent sends under one key (on any node) store one notification: the store decides.
    ///
    /// - Throws: ``StoreError/Code/idempotencyKeyReused`` when the key was used for another
    ///   request within its retention.
    func accept(_ record: NotificationRecord, idempotencyKey key: IdempotencyKey?) async throws -> SendResult {
        let (stored, replay) = try await withSpan("notification.accept", ofKind: .internal) { span -> (NotificationRecord, IdempotentReplay?) in
            var record = record
            span.updateAttributes { attributes in
                if let hub = metrics?.hub { attributes["herald.hub"] = hub }
                attributes["herald.platforms"] = (record.template == nil ? record.platforms.map(\.rawValue).sorted() : ["template"])
                attributes["herald.notification.id"] = record.id
            }
            record.traceContext = Self.traceparent(of: span.context)
            if let key {
                if let replay = try await store.enqueueNotification(record, idempotencyKey: key) {
                    span.updateAttributes { $0["herald.notification.replayed_id"] = replay.notificationID }
                    return (record, replay)
                }
            } else {
                try await store.enqueueNotification(record)
            }
            metrics?.notificationAccepted()
            signal.ring(Self.workerKey, remember: true)
            return (record, nil)
        }
        guard let replay else { return SendResult(record: stored, results: []) }
        logger.debug("Answered a repeated send with its first notification", metadata: ["herald.notification.id": "\(replay.notificationID)"])
        guard let first = try await store.notification(id: replay.notificationID) else {
            throw HeraldError.conflict("the notification sent under this Idempotency-Key is gone; send again under a new key")
        }
        return SendResult(record: first, results: [], replay: replay)
    }

    /// Forgets the idempotency keys whose retention ended (``JobSweeper`` runs it on every
    /// node, with the jobs' sweep): a later send under such a key is a new notification.
    @discardableResult
    public func forgetIdempotencyKeys(now: Date = Date()) async throws -> Int {
        let forgotten = try await store.forgetIdempotencyKeys(expiredBy: now)
        if forgotten > 0 {
            logger.debug("Forgot idempotency keys past their retention", metadata: ["herald.keys.count": "\(forgotten)"])
        }
        return forgotten
    }

    /// Checks a request and returns the notification it becomes, not stored yet: payloads
    /// with the request's options applied and checked as a provider will send them, direct
    /// devices' handles normalized and checked against ``Configuration/channelHosts``.
    func validate(_ request: SendRequest) throws(HeraldError) -> NotificationRecord {
        var payloads: [PlatformPayload] = []
        var template: TemplateSend?
        switch request.content {
        case .native(let given):
            guard !given.isEmpty else { throw .badRequest("a notification needs at least one platform payload") }
            guard Set(given.map(\.platform)).count == given.count else {
                throw .badRequest("a notification has at most one payload per platform")
            }
            let now = Date()
            payloads = []
            for payload in given {
                let applied = try payload.applying(request.options, now: now)
                try applied.checkLiveActivity()
                payloads.append(applied)
            }
            _ = try Self.prepareForSending(payloads)
        case .template(let send):
            try Self.check(send)
            template = send
        }
        let scheduledAt = request.options.scheduledAt
        var tagExpression: String?
        var directTargets: [DirectTarget]?
        switch request.target {
        case .tags(let tags):
            tagExpression = tags?.text
        case .user(let user):
            do {
                tagExpression = try SendRequest.Tags(parsing: "username:\(user)").text
            } catch {
                throw error.heraldError
            }
        case .devices(let targets):
            guard let payload = payloads.first, payloads.count == 1 else {
                throw .badRequest("a direct send carries one native payload, for the devices' platform")
            }
            directTargets = try checkDirect(targets, platform: payload.platform)
        case .test(let tags, let limit):
            guard (1...SendRequest.testLimit).contains(limit) else {
                throw .badRequest("a test send reaches 1 to \(SendRequest.testLimit) registrations, not \(limit)")
            }
            tagExpression = tags?.text
        case .registration:
            break
        }
        switch request.target {
        case .test, .registration:
            guard scheduledAt == nil else { throw .badRequest("a test send goes at once: it cannot be scheduled") }
            guard request.options.idempotencyKey == nil else {
                throw .badRequest("a test send is delivered at once and not kept, so it takes no Idempotency-Key; send it without one")
            }
            guard request.options.spread == nil else { throw .badRequest("a test send goes at once: it cannot be spread over a time") }
        case .tags, .user, .devices:
            break
        }
        if let spread = request.options.spread {
            let most = configuration.abandonAfter
            guard spread >= .seconds(1), spread < most, spread.components.attoseconds == 0 else {
                throw .badRequest(
                    "a notification is spread over 1 second to less than \(Int(most.seconds)) seconds (after that it is abandoned), in whole seconds")
            }
        }
        return NotificationRecord(
            id: Self.newNotificationID(),
            tagExpression: tagExpression,
            payloads: payloads,
            template: template,
            directTargets: directTargets,
            scheduledAt: scheduledAt,
            state: Self.initialState(scheduledAt: scheduledAt),
            spread: request.options.spread
        )
    }

    /// A direct send's devices, checked and normalized as a registration's are (APNs tokens
    /// lowercased, without spaces; Web Push devices need their subscription keys).
    private func checkDirect(_ targets: [DirectTarget], platform: Platform) throws(HeraldError) -> [DirectTarget] {
        guard (1...Self.directTargetLimit).contains(targets.count) else {
            throw .badRequest("a direct send goes to 1 to \(Self.directTargetLimit) devices; this one has \(targets.count)")
        }
        var normalized: [DirectTarget] = []
        normalized.reserveCapacity(targets.count)
        for (index, target) in targets.enumerated() {
            let which = targets.count == 1 ? "the device" : "device \(index + 1)"
            guard target.platform == platform else {
                throw .badRequest("\(which) is on \(target.platform) but the notification is for \(platform); a direct send goes to one platform")
            }
            var checked = target
            do {
                checked.handle = try Registration.normalizedHandle(target.handle, platform: target.platform)
                try configuration.channelHosts.check(checked.handle, platform: target.platform)
            } catch {
                throw .badRequest("\(which): \(error.message)")
            }
            if target.platform == .webpush, target.webPushKeys == nil {
                throw .badRequest("\(which) is a Web Push subscription and needs its p256dh and auth keys")
            }
            normalized.append(checked)
        }
        return normalized
    }

    static func check(_ send: TemplateSend) throws(HeraldError) {
        if let name = send.templateName {
            guard !name.isEmpty, name.count <= 200 else {
                throw .badRequest("a template name has 1 to 200 characters; this one has \(name.count)")
            }
        }
        for name in send.properties.keys.sorted() where name.isEmpty {
            throw .badRequest("a template property needs a name; one of the properties has an empty name")
        }
    }

    /// Cancels a scheduled notification that has not started: `false` if there is no such
    /// notification; ``HeraldError/conflict(_:)`` if it is no longer scheduled (delivery
    /// started, or it ended or was cancelled already).
    public func cancelScheduled(id: String) async throws -> Bool {
        guard try await store.cancelScheduledNotification(id: id, now: Date()) else { return false }
        signal.ring(id)
        return true
    }

    static func newNotificationID() -> String { UUID.random().uuidString.lowercased() }

    static func initialState(scheduledAt: Date?, now: Date = Date()) -> NotificationState {
        if let scheduledAt, scheduledAt > now { .scheduled } else { .enqueued }
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
}
