import Foundation
public import HeraldCore
public import HeraldPush
public import HeraldStore
public import Logging
import NIOCore

/// The engine: accepts notifications durably, resolves their targets by streaming from
/// the store, renders per platform, delivers with bounded concurrency, retries what is
/// retryable, removes registrations whose channel is dead, and records outcomes.
///
/// Accepting (``enqueue(tagExpression:payloads:)``) only writes to the store; a
/// ``DeliveryWorker`` delivers. A crash between the two loses nothing: the next worker
/// claims the notification and resumes from its last saved cursor.
public final class Hub: Sendable {
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

        public init() {}
    }

    public let store: any HeraldStore
    public let configuration: Configuration
    let providers: [Platform: any PushProvider]
    let logger: Logger
    let signal = Signal()
    static let workerKey = "\u{0}worker"

    public init(
        store: any HeraldStore,
        providers: [any PushProvider],
        configuration: Configuration = Configuration(),
        logger: Logger
    ) {
        self.store = store
        self.configuration = configuration
        self.logger = logger
        var byPlatform: [Platform: any PushProvider] = [:]
        for provider in providers { byPlatform[provider.platform] = provider }
        self.providers = byPlatform
    }

    /// The platforms that have a provider.
    public var configuredPlatforms: Set<Platform> { Set(providers.keys) }

    // MARK: Accepting

    /// Validates and durably accepts a notification. When this returns, the notification
    /// survives a crash; a ``DeliveryWorker`` delivers it.
    ///
    /// - Parameters:
    ///   - tagExpression: whom to send to; `nil` broadcasts to every registration.
    ///   - payloads: one rendered payload per platform to deliver on; registrations on other
    ///     platforms are not targeted.
    public func enqueue(tagExpression: String?, payloads: [PlatformPayload]) async throws -> NotificationRecord {
        if let tagExpression {
            do {
                _ = try TagExpression(parsing: tagExpression)
            } catch {
                throw error.heraldError
            }
        }
        guard !payloads.isEmpty else { throw HeraldError.badRequest("a notification needs at least one platform payload") }
        guard Set(payloads.map(\.platform)).count == payloads.count else {
            throw HeraldError.badRequest("a notification has at most one payload per platform")
        }
        let record = NotificationRecord(id: UUID().uuidString.lowercased(), tagExpression: tagExpression, payloads: payloads)
        try await store.enqueueNotification(record)
        signal.ring(Self.workerKey, remember: true)
        return record
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
    public func deliverNext() async throws -> Bool {
        guard let record = try await store.claimNotification(now: Date(), lease: configuration.lease) else {
            return false
        }
        try await deliver(record)
        return true
    }

    /// Waits for work: returns when a notification is enqueued here, or after `pollInterval`.
    func waitForWork() async {
        await signal.wait(Self.workerKey, timeout: configuration.pollInterval)
    }

    /// Delivers a claimed notification from its cursor to the end and records the outcome.
    @discardableResult
    public func deliver(_ claimed: NotificationRecord) async throws -> NotificationRecord {
        var logger = self.logger
        logger[metadataKey: "herald.notification.id"] = "\(claimed.id)"
        let now = Date()
        if now.timeIntervalSince(claimed.enqueuedAt) > configuration.abandonAfter.seconds {
            logger.warning("Abandoning a notification that was not delivered in time")
            return try await finish(claimed, state: .abandoned, counts: claimed.counts)
        }
        let expression: TagExpression?
        let notifications: [Platform: PushNotification]
        do {
            expression = try claimed.tagExpression.map { try TagExpression(parsing: $0) }
            notifications = try Self.prepare(claimed.payloads)
        } catch {
            logger.error("Abandoning a notification that cannot be delivered", metadata: ["error": "\(error)"])
            return try await finish(claimed, state: .abandoned, counts: claimed.counts)
        }
        let platforms = Set(notifications.keys)
        let pageSize = configuration.pageSize
        var counts = claimed.counts
        var cursor = claimed.cursor
        logger.debug("Delivering", metadata: ["herald.resume": "\(cursor != nil)"])

        let store = self.store
        let fetch: @Sendable (String?) async throws -> [Registration] = { after in
            try await store.registrations(matching: expression, platforms: platforms, after: after, limit: pageSize)
        }
        var page = try await fetch(cursor)
        while !page.isEmpty {
            let last = page[page.count - 1].id
            // Read the next page while this one is being sent.
            let next: Task<[Registration], any Error>? =
                page.count == pageSize ? Task { try await fetch(last) } : nil
            defer { next?.cancel() }

            let (pageCounts, expired) = await send(page: page, notifications: notifications, logger: logger)
            counts.merge(pageCounts)
            if !expired.isEmpty {
                try await store.deleteRegistrations(ids: expired)
                logger.debug("Removed registrations whose channel expired", metadata: ["herald.count": "\(expired.count)"])
            }
            cursor = last
            try await store.saveProgress(
                id: claimed.id,
                cursor: cursor,
                counts: counts,
                leaseUntil: Date().addingTimeInterval(configuration.lease.seconds)
            )
            page = try await next?.value ?? []
        }
        return try await finish(claimed, state: counts.total == 0 ? .noTargetFound : .completed, counts: counts)
    }

    private func finish(_ record: NotificationRecord, state: NotificationState, counts: OutcomeCounts) async throws -> NotificationRecord {
        let end = Date()
        try await store.finishNotification(id: record.id, state: state, counts: counts, endedAt: end)
        signal.ring(record.id)
        var finished = record
        finished.state = state
        finished.counts = counts
        finished.endedAt = end
        return finished
    }

    /// Sends one page with at most `concurrency` sends in flight. Returns the outcome counts
    /// and the ids of registrations whose channel expired.
    private func send(
        page: [Registration],
        notifications: [Platform: PushNotification],
        logger: Logger
    ) async -> (OutcomeCounts, [String]) {
        let concurrency = max(1, configuration.concurrency)
        return await withTaskGroup(of: (Platform, String, PushResult).self) { group in
            var counts = OutcomeCounts()
            var expired: [String] = []
            var handles = Set<String>()
            var inFlight = 0

            func record(_ result: (Platform, String, PushResult)) {
                let (platform, id, push) = result
                counts.add(push.outcome, platform: platform)
                if push.disposition == .channelExpired { expired.append(id) }
            }

            for registration in page {
                let platform = registration.platform
                guard let notification = notifications[platform] else { continue }
                guard let provider = providers[platform] else {
                    counts.add(.noProvider, platform: platform)
                    continue
                }
                // Two registrations of one handle are one device: send once.
                guard handles.insert(registration.handle).inserted else {
                    counts.add(.skipped, platform: platform)
                    continue
                }
                if inFlight >= concurrency, let done = await group.next() {
                    record(done)
                    inFlight -= 1
                }
                let target = PushTarget(handle: registration.handle, webPushKeys: registration.webPushKeys)
                let id = registration.id
                group.addTask {
                    (platform, id, await self.sendWithRetries(notification, to: target, via: provider, logger: logger))
                }
                inFlight += 1
            }
            for await done in group { record(done) }
            return (counts, expired)
        }
    }

    /// One device: the first attempt and the retries the policy allows.
    func sendWithRetries(
        _ notification: PushNotification,
        to target: PushTarget,
        via provider: any PushProvider,
        logger: Logger
    ) async -> PushResult {
        var attempt = 1
        while true {
            let result = await provider.send(notification, to: target)
            guard case .retryable(let retryAfter) = result.disposition else { return result }
            switch configuration.retry.decide(afterAttempt: attempt, retryAfter: retryAfter) {
            case .giveUp:
                logger.debug(
                    "Giving up on a device after retries",
                    metadata: ["herald.platform": "\(provider.platform)", "herald.attempts": "\(attempt)", "herald.reason": "\(result.reason ?? "-")"]
                )
                return result
            case .retry(let delay):
                do {
                    try await Task.sleep(for: delay)
                } catch {
                    return result
                }
                attempt += 1
            }
        }
    }

    /// Turns stored payloads into provider-ready notifications, once per notification.
    static func prepare(_ payloads: [PlatformPayload]) throws -> [Platform: PushNotification] {
        var prepared: [Platform: PushNotification] = [:]
        for payload in payloads {
            let headers = payload.headers.map { (name: $0.name, value: $0.value) }
            switch payload.platform {
            case .fcm:
                let message = try JSONDecoder().decode(JSONValue.self, from: payload.body)
                prepared[.fcm] = PushNotification(body: .fcmMessage(message), headers: headers)
            case .apns, .wns, .webpush:
                prepared[payload.platform] = PushNotification(body: .bytes(ByteBuffer(bytes: payload.body)), headers: headers)
            }
        }
        return prepared
    }
}

extension NotificationState {
    /// Whether delivery has ended (nothing more will change).
    public var isFinal: Bool {
        switch self {
        case .enqueued, .processing: false
        case .completed, .abandoned, .noTargetFound: true
        }
    }
}

extension Duration {
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) * 1e-18
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
