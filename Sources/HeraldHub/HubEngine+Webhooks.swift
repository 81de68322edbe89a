public import Foundation
public import HeraldCore
import HeraldPush
import HeraldStore
import Logging
import Synchronization

extension HubEngine {
    static let webhookKey = "\u{0}webhooks"

    /// Records `events` in the hub's outbox, in one store call, for every endpoint that wants
    /// them, and wakes this node's ``WebhookSender``. Never throws: events that cannot be
    /// recorded (the store is down for longer than the retries wait) are logged and dropped,
    /// and the delivery that caused them goes on.
    func recordWebhookEvents(_ events: [WebhookEvent]) async {
        guard let first = events.first else { return }
        do {
            let added = try await retryingWhileUnavailable("record a webhook event", id: first.id) {
                try await store.enqueueWebhookEvents(events, endpointIDs: nil)
            }
            if added > 0 { signal.ring(Self.webhookKey, remember: true) }
        } catch {
            logger.error(
                "Could not record webhook events",
                metadata: ["herald.webhook.event": "\(first.type)", "herald.count": "\(events.count)", "error": "\(error)"]
            )
        }
    }

    /// Whether an enabled endpoint of the hub wants events of `type`, as last read (see
    /// ``wantedWebhookEvents()``): a hub without webhooks pays no write for its events.
    func wantsWebhookEvent(_ type: WebhookEventType) async -> Bool {
        await wantedWebhookEvents().events.contains(type)
    }

    /// What the hub's enabled endpoints want, read from the store at most once per
    /// ``Configuration/webhookEndpointsRefresh`` (and again at once after this node changed an
    /// endpoint): deliveries and the ``WebhookSender`` ask for every page and every second.
    /// When the store cannot be read, every event is wanted: the write that follows finds
    /// out for itself (and retries while the store is down).
    func wantedWebhookEvents() async -> WebhookSubscriptions {
        let now = ContinuousClock.now
        let (known, changes) = webhookSubscriptions.withLock { $0 }
        if let known, now - known.readAt < configuration.webhookEndpointsRefresh { return known }
        do {
            let enabled = try await store.webhookEndpoints().filter(\.enabled)
            let read = WebhookSubscriptions(
                anyEnabled: !enabled.isEmpty, events: enabled.reduce(into: []) { $0.formUnion($1.events) }, readAt: now
            )
            // Kept unless this node changed an endpoint meanwhile: the read may predate it.
            webhookSubscriptions.withLock { if $0.changes == changes { $0.known = read } }
            return read
        } catch {
            return WebhookSubscriptions(anyEnabled: true, events: Set(WebhookEventType.subscribable), readAt: now)
        }
    }

    /// Forgets what the endpoints want, after a change to them on this node.
    func webhookEndpointsChanged() {
        webhookSubscriptions.withLock {
            $0.known = nil
            $0.changes += 1
        }
        signal.ring(Self.webhookKey, remember: true)
    }

    /// Records a `registration.expired` event for each channel a push service reported gone
    /// while delivering `notification`: the registration's id and platform, or for a
    /// registration derived from an installation, the installation's id (once per
    /// installation).
    func recordExpiredChannelEvents(_ channels: [(id: String, platform: Platform)], notification: String) async {
        guard !channels.isEmpty, await wantsWebhookEvent(.registrationExpired) else { return }
        var installations = Set<String>()
        var events: [WebhookEvent] = []
        let now = Date()
        for (id, platform) in channels {
            var data: [(key: String, value: JSONValue)] = []
            let subject: String
            if id.hasPrefix(Installation.registrationIDPrefix) {
                let installationID = String(id.dropFirst(Installation.registrationIDPrefix.count).prefix { $0 != "/" })
                guard installations.insert(installationID).inserted else { continue }
                data.append(("installationId", .string(installationID)))
                subject = "installation_" + installationID
            } else {
                data.append(("registrationId", .string(id)))
                subject = "registration_" + id
            }
            data.append(("platform", .string(platform.rawValue)))
            data.append(("notificationId", .string(notification)))
            events.append(
                WebhookEvent(id: "evt_registration.expired_\(subject)_\(notification)", type: .registrationExpired, timestamp: now, data: .object(data))
            )
        }
        await recordWebhookEvents(events)
    }

    /// Records `credential.failing` when a provider's credential went from working (or not
    /// yet used) to failing, and `credential.recovered` when a failing one works again, by
    /// comparing each provider's health with `previous` (which it updates). Each node sees its
    /// own uses of a credential, so with several nodes each may report the same change.
    func recordCredentialEvents(previous: inout [Platform: PushCredentialHealth.Status]) async {
        for (platform, provider) in providers.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            let health = provider.credentialHealth
            let before = previous[platform]
            previous[platform] = health.status
            let type: WebhookEventType
            switch (before, health.status) {
            case (.failing, .working): type = .credentialRecovered
            case (let old, .failing) where old != .failing: type = .credentialFailing
            default: continue
            }
            guard await wantsWebhookEvent(type) else { continue }
            let at = (type == .credentialFailing ? health.lastErrorAt : health.lastSuccessAt) ?? Date()
            var data: [(key: String, value: JSONValue)] = [("platform", .string(platform.rawValue)), ("method", .string(health.method))]
            if type == .credentialFailing, let error = health.lastError { data.append(("error", .string(error))) }
            await recordWebhookEvents([
                WebhookEvent(
                    id: "evt_\(type.rawValue)_\(platform.rawValue)_\(at.storeMilliseconds)", type: type, timestamp: at, data: .object(data)
                )
            ])
        }
    }

    /// Records a test event for one endpoint, whatever it subscribed to, and wakes the sender.
    ///
    /// - Throws: ``HeraldError/notFound(_:)`` when the hub has no such endpoint.
    public func sendTestWebhookEvent(endpointID: String, now: Date = Date()) async throws -> WebhookEvent {
        guard try await store.webhookEndpoint(id: endpointID) != nil else {
            throw HeraldError.notFound("no webhook endpoint with id '\(endpointID)'")
        }
        let event = WebhookEvent(
            id: "evt_test_" + UUID.random().uuidString.lowercased(), type: .test, timestamp: now,
            data: .object([("endpointId", .string(endpointID)), ("message", .string("a test event from Herald"))])
        )
        try await store.enqueueWebhookEvent(event, endpointIDs: [endpointID])
        signal.ring(Self.webhookKey, remember: true)
        return event
    }

    /// The event for a notification that ended (`Completed` or `Abandoned`, not a partition):
    /// its id, state and outcome counts. Its id is the notification's, so that recording it
    /// again (another node, a retry) adds nothing.
    static func notificationEvent(_ record: NotificationRecord, state: NotificationState, counts: OutcomeCounts, at date: Date) -> WebhookEvent? {
        guard record.partOf == nil else { return nil }
        let type: WebhookEventType
        switch state {
        case .completed: type = .notificationCompleted
        case .abandoned: type = .notificationAbandoned
        default: return nil
        }
        // Per platform and outcome, as the notification's details report them:
        // {"apns": {"Success": 2, "ExpiredChannel": 1}}.
        var outcomes: [(key: String, value: JSONValue)] = []
        for (platform, perOutcome) in counts.counts {
            let perPlatform: [(key: String, value: JSONValue)] = perOutcome.map { (key: $0.key.rawValue, value: .number(Double($0.value))) }
            outcomes.append((key: platform.rawValue, value: .object(perPlatform)))
        }
        return WebhookEvent(
            id: "evt_\(type.rawValue)_\(record.id)", type: type, timestamp: date,
            data: .object([
                ("notificationId", .string(record.id)),
                ("state", .string(state.rawValue)),
                ("devices", .number(Double(counts.total))),
                ("outcomes", .object(outcomes)),
            ])
        )
    }

    /// Claims the due events of the hub's outbox (up to ``Configuration/webhookBatchSize``),
    /// posts them at once and records each attempt. Returns how many were claimed.
    @discardableResult
    public func sendDueWebhooks(now: @escaping @Sendable () -> Date = { Date() }) async throws -> Int {
        guard let poster = configuration.webhookPoster, await wantedWebhookEvents().anyEnabled else { return 0 }
        let claimed = try await store.claimWebhookDeliveries(
            now: now(), lease: configuration.webhookLease, owner: leaseOwner, limit: configuration.webhookBatchSize
        )
        guard !claimed.isEmpty else { return 0 }
        var endpoints: [String: WebhookEndpoint] = [:]
        for id in Set(claimed.map(\.endpointID)) { endpoints[id] = try await store.webhookEndpoint(id: id) }
        await withTaskGroup(of: Void.self) { group in
            for delivery in claimed {
                let endpoint = endpoints[delivery.endpointID]
                group.addTask { await self.send(delivery, to: endpoint, poster: poster, now: now) }
            }
        }
        return claimed.count
    }

    private func send(_ delivery: WebhookDelivery, to endpoint: WebhookEndpoint?, poster: WebhookPoster, now: () -> Date) async {
        let result: WebhookPoster.Result
        if let endpoint {
            result = await poster.post(
                to: endpoint.url, id: delivery.eventID, body: delivery.body, secrets: endpoint.signingSecrets(at: now()), now: now()
            )
        } else {
            result = WebhookPoster.Result(statusCode: nil, error: "the endpoint was deleted", duration: .zero)
        }
        let at = now()
        let attempt = delivery.attempts + 1
        var outcome = WebhookAttempt.Outcome.delivered
        var retryAt: Date?
        var error = result.error
        if !result.delivered {
            retryAt = configuration.webhookRetry.nextAttempt(afterFailedAttempts: attempt, createdAt: delivery.createdAt, now: at)
            if retryAt == nil {
                outcome = .gaveUp
                let window = configuration.webhookRetry.window.seconds
                let span = window >= 3600 ? "\(Int(window / 3600)) h" : "\(Int(window.rounded(.up))) s"
                error = "every attempt failed for \(span) (\(attempt) attempts; the last: \(result.error ?? "no answer")); the endpoint is disabled"
            } else {
                outcome = .retrying
            }
        }
        let record = WebhookAttempt(
            eventID: delivery.eventID, endpointID: delivery.endpointID, type: delivery.type, attempt: attempt, at: at,
            statusCode: result.statusCode, error: error, durationMilliseconds: Int(result.duration.wholeMilliseconds), outcome: outcome
        )
        var logger = self.logger
        logger[metadataKey: "herald.webhook.endpoint"] = "\(delivery.endpointID)"
        logger[metadataKey: "herald.webhook.event"] = "\(delivery.eventID)"
        do {
            try await store.recordWebhookAttempt(record, owner: leaseOwner, retryAt: retryAt)
        } catch {
            logger.warning("Could not record a webhook attempt; the event is sent again when its lease ends", metadata: ["error": "\(error)"])
            return
        }
        switch outcome {
        case .delivered:
            logger.debug("Webhook event delivered", metadata: ["herald.attempt": "\(attempt)"])
        case .retrying:
            logger.info("Webhook event failed; it is tried again", metadata: ["herald.attempt": "\(attempt)", "error": "\(result.error ?? "")"])
        case .gaveUp:
            webhookEndpointsChanged()
            logger.warning("Webhook endpoint disabled: every attempt failed for the retry window", metadata: ["herald.attempt": "\(attempt)"])
        }
    }

    /// Deletes the delivery log's attempts older than ``Configuration/webhookLogRetention``.
    func purgeWebhookLog(now: Date = Date()) async throws {
        try await store.purgeWebhookAttempts(before: now.addingTimeInterval(-configuration.webhookLogRetention.seconds))
    }

    /// Waits until an event is recorded on this node or ``Configuration/webhookPollInterval``
    /// passed (events recorded by other nodes are found by polling).
    func waitForWebhooks() async {
        await signal.wait(Self.webhookKey, timeout: configuration.webhookPollInterval)
    }
}

/// What a hub's enabled endpoints want, as a node last read it.
struct WebhookSubscriptions: Sendable {
    /// Whether any endpoint is enabled (a test event goes to one whatever it wants).
    var anyEnabled: Bool
    /// The event types some enabled endpoint wants.
    var events: Set<WebhookEventType>
    var readAt: ContinuousClock.Instant
}
