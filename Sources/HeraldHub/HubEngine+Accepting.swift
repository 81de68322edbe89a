public import Foundation
public import HeraldCore
import HeraldMetrics
import HeraldStore
import Tracing

extension HubEngine {
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
}
