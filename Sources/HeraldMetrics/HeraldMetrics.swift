public import Foundation
public import HeraldCore
public import Prometheus
import Synchronization

/// Every metric Herald records, defined in this one place, on one Prometheus registry that
/// `GET /metrics` serves.
///
/// The engine, the push providers and the HTTP server record through an instance of this
/// type handed to them (never a process-wide one), so a test builds a Herald on a fresh
/// registry and counts exact changes. Labels are bounded sets only: hub names, platforms,
/// outcome names, HTTP status codes, route patterns and methods. No device token, tag, user
/// name or payload ever becomes a label.
///
/// The registry stops the process when one name is registered with two help texts or types,
/// or with and without labels: every family is declared once, in ``families``, and the
/// recording methods below are the only callers of the registry's `make…` functions.
public final class HeraldMetrics: Sendable {
    /// What `GET /metrics` emits.
    public let registry: PrometheusCollectorRegistry
    /// The push-request latency histogram of each platform, made once: it is recorded on
    /// every send.
    private let pushDurations: [Platform: DurationHistogram]
    /// The push-request counters by platform and status, once found in the registry: finding
    /// one there (a lock, the name and labels checked and hashed) costs about 0.5 µs, this
    /// about 0.05 µs, on every send.
    private let pushRequestCounters = Mutex<[PushRequestKey: Counter]>([:])

    private struct PushRequestKey: Hashable {
        var platform: Platform
        var status: Int?
    }

    /// The series of each answered route, method and status, found once: every request records
    /// in them, and a lookup in the registry hashes its labels under the registry's lock.
    private let httpRequestSeries = Mutex<[HTTPRequestKey: (requests: Counter, duration: DurationHistogram)]>([:])

    private struct HTTPRequestKey: Hashable {
        var route: String
        var method: String
        var status: Int
    }

    public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
        var pushDurations: [Platform: DurationHistogram] = [:]
        for platform in Platform.allCases {
            pushDurations[platform] = registry.makeDurationHistogram(
                descriptor: Self.pushRequestDuration.descriptor,
                labels: [("platform", platform.rawValue)],
                buckets: Self.pushRequestBuckets
            )
        }
        self.pushDurations = pushDurations
    }

    /// The Prometheus text of every family.
    public func emit() -> [UInt8] { registry.emitToBuffer() }

    // MARK: The families

    /// A metric family: its name, what it means, and its labels (in the order they are set).
    public struct Family: Sendable, Hashable {
        public enum Kind: String, Sendable { case counter, gauge, histogram }
        public var name: String
        public var kind: Kind
        public var labels: [String]
        public var help: String

        /// The registry's description of the family (its full name, and its help).
        var descriptor: MetricNameDescriptor { MetricNameDescriptor(metricName: name, unitName: "", helpText: help) }
    }

    public static let httpRequests = Family(
        name: "herald_http_requests_total", kind: .counter, labels: ["route", "method", "status"],
        help: "HTTP requests answered, by route pattern (never the path), method and status code."
    )
    public static let httpRequestDuration = Family(
        name: "herald_http_request_duration_seconds", kind: .histogram, labels: ["route", "method"],
        help: "Time from a request's head to its response, by route pattern and method."
    )
    public static let notificationsAccepted = Family(
        name: "herald_notifications_accepted_total", kind: .counter, labels: ["hub"],
        help: "Notifications accepted (stored for delivery, scheduled ones included) per hub."
    )
    public static let notificationsFinished = Family(
        name: "herald_notifications_finished_total", kind: .counter, labels: ["hub", "state"],
        help:
            "Notifications whose delivery ended, per hub and final state (Completed, Abandoned, NoTargetFound); partitions of a large notification are not counted apart."
    )
    public static let deliveries = Family(
        name: "herald_deliveries_total", kind: .counter, labels: ["hub", "platform", "outcome"],
        help: "Deliveries to one device that ended, per hub, platform and outcome (the hub's outcome names: Success, ExpiredChannel, Throttled, ...)."
    )
    public static let channelsExpired = Family(
        name: "herald_channels_expired_total", kind: .counter, labels: ["hub", "platform"],
        help: "Registrations removed because the push service reported their channel dead."
    )
    public static let receipts = Family(
        name: "herald_receipts_total", kind: .counter, labels: ["hub", "platform"],
        help: "Devices that confirmed a notification, per hub and platform: each device counted once per notification, however often it confirms."
    )
    public static let pushRetries = Family(
        name: "herald_push_retries_total", kind: .counter, labels: ["hub", "platform", "cause"],
        help: "Sends to one device made again, by the outcome of the attempt that failed (Throttled, PnsServerError, PnsUnavailable, PnsUnreachable)."
    )
    public static let pushRequests = Family(
        name: "herald_push_requests_total", kind: .counter, labels: ["platform", "status"],
        help: "Requests to the push services, by platform and HTTP status; status none: no answer (connection failure or timeout)."
    )
    public static let pushRequestDuration = Family(
        name: "herald_push_request_duration_seconds", kind: .histogram, labels: ["platform"],
        help: "Time from sending a request to a push service to its answer (or failure), per platform."
    )
    public static let tokenRefreshes = Family(
        name: "herald_push_token_refreshes_total", kind: .counter, labels: ["platform", "result"],
        help: "Provider tokens made (APNs: signed; FCM and WNS: OAuth exchanges), per platform; result success or failure."
    )
    public static let queueWaiting = Family(
        name: "herald_queue_waiting_notifications", kind: .gauge, labels: ["hub"],
        help: "Notifications (and partitions of large ones) accepted and due but not yet taken by a delivery worker, per hub, at scrape time."
    )
    public static let queueProcessing = Family(
        name: "herald_queue_processing_notifications", kind: .gauge, labels: ["hub"],
        help: "Notifications (and partitions) a delivery worker holds now, per hub, at scrape time."
    )
    public static let queueOldestAge = Family(
        name: "herald_queue_oldest_waiting_age_seconds", kind: .gauge, labels: ["hub"],
        help: "How long the oldest waiting notification has been due, per hub, at scrape time; 0 when none waits."
    )
    public static let registrations = Family(
        name: "herald_registrations", kind: .gauge, labels: ["hub", "platform"],
        help: "Registrations per hub and platform, counted at scrape time (at most every 30 seconds)."
    )
    public static let pushConnections = Family(
        name: "herald_push_connections", kind: .gauge, labels: ["platform"],
        help:
            "Connections open to a push service per platform, at scrape time, over every provider of the platform; FCM and WNS include those to their OAuth token endpoint."
    )
    public static let credentialExpiry = Family(
        name: "herald_push_credential_expiry_timestamp_seconds", kind: .gauge, labels: ["platform", "hub"],
        help:
            "When a push credential expires (an APNs client certificate's notAfter), Unix seconds, per platform and hub; hub * is the server's own credentials, used by every hub without its own."
    )
    public static let credentialFailing = Family(
        name: "herald_push_credential_failing", kind: .gauge, labels: ["platform", "hub"],
        help:
            "1 while the last use of a push credential failed (the push service refused it, or no token could be had with it), 0 otherwise, per platform and hub; hub * is the server's own credentials, used by every hub without its own."
    )
    public static let sendBudgetRate = Family(
        name: "herald_send_budget_per_minute", kind: .gauge, labels: ["platform", "credential"],
        help:
            "The send budget of a push credential, sends a minute for every node together (each node spends its share), per platform and credential (a key id, a project id); absent for credentials without a limit."
    )
    public static let sendBudgetAvailable = Family(
        name: "herald_send_budget_available", kind: .gauge, labels: ["platform", "credential"],
        help: "Sends this node's share of a credential's budget allows at once (at most one second's worth); negative while sends wait for it."
    )
    public static let sendBudgetPaused = Family(
        name: "herald_send_budget_paused_seconds", kind: .gauge, labels: ["platform", "credential"],
        help:
            "How long every send of a credential still waits because its push service throttled it (a 429 with Retry-After), at scrape time; 0 when not paused."
    )
    public static let sendBudgetWaited = Family(
        name: "herald_send_budget_wait_seconds_total", kind: .counter, labels: ["platform", "credential"],
        help: "Time sends waited for a credential's budget or throttling pause (each batch's wait counted once)."
    )
    public static let scrapeErrors = Family(
        name: "herald_metrics_store_errors_total", kind: .counter, labels: ["hub"],
        help: "Scrapes whose figures from a hub's store could not be read (its gauges keep their last values)."
    )

    /// Every family, in the order docs/operations.md lists them.
    public static let families: [Family] = [
        httpRequests, httpRequestDuration, notificationsAccepted, notificationsFinished, deliveries, channelsExpired, receipts, pushRetries,
        pushRequests, pushRequestDuration, tokenRefreshes, queueWaiting, queueProcessing, queueOldestAge,
        registrations, pushConnections, credentialExpiry, credentialFailing, sendBudgetRate, sendBudgetAvailable, sendBudgetPaused,
        sendBudgetWaited, scrapeErrors,
    ]

    /// The `hub` label of the server's own credentials in ``credentialExpiry`` and
    /// ``credentialFailing``: no hub name
    /// can be `*`.
    public static let serverCredentialsHub = "*"

    /// 1 ms to 10 s: Herald's own answers.
    static let httpBuckets: [Duration] = [
        .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
        .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10),
    ]
    /// 1 ms to 30 s: a push service's answers, up to the providers' timeouts.
    static let pushRequestBuckets: [Duration] = [
        .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
        .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10),
        .seconds(30),
    ]

    // MARK: Recording

    private func counter(_ family: Family, _ values: [String]) -> Counter {
        registry.makeCounter(descriptor: family.descriptor, labels: Array(zip(family.labels, values)))
    }

    private func gauge(_ family: Family, _ values: [String]) -> Gauge {
        registry.makeGauge(descriptor: family.descriptor, labels: Array(zip(family.labels, values)))
    }

    /// An HTTP request answered. `route` is the matched route's pattern (`/{hub}/messages`),
    /// or `NotFound` when no route matched.
    public func httpRequest(route: String, method: String, status: Int, duration: Duration) {
        let key = HTTPRequestKey(route: route, method: method, status: status)
        let series = httpRequestSeries.withLock { known in
            if let series = known[key] { return series }
            let series = (
                requests: counter(Self.httpRequests, [route, method, String(status)]),
                duration: registry.makeDurationHistogram(
                    descriptor: Self.httpRequestDuration.descriptor,
                    labels: [("route", route), ("method", method)],
                    buckets: Self.httpBuckets
                )
            )
            known[key] = series
            return series
        }
        series.requests.increment()
        series.duration.record(duration)
    }

    /// One request to a push service: its HTTP status (`nil`: no answer) and how long it took.
    public func pushRequest(platform: Platform, status: Int?, duration: Duration) {
        let key = PushRequestKey(platform: platform, status: status)
        let counter = pushRequestCounters.withLock { counters in
            if let counter = counters[key] { return counter }
            let counter = self.counter(Self.pushRequests, [platform.rawValue, status.map { String($0) } ?? "none"])
            counters[key] = counter
            return counter
        }
        counter.increment()
        pushDurations[platform]?.record(duration)
    }

    /// A provider token was made (or making it failed).
    public func tokenRefresh(platform: Platform, succeeded: Bool) {
        counter(Self.tokenRefreshes, [platform.rawValue, succeeded ? "success" : "failure"]).increment()
    }

    /// What one hub records: the same families, with the hub's name as a label.
    public func hub(_ name: String) -> HubMetrics { HubMetrics(metrics: self, hub: name) }

    /// A hub's recorder (see ``HeraldMetrics/hub(_:)``).
    public struct HubMetrics: Sendable {
        public let metrics: HeraldMetrics
        public let hub: String

        public func notificationAccepted() {
            metrics.counter(HeraldMetrics.notificationsAccepted, [hub]).increment()
        }

        /// A notification's delivery ended in `state`.
        public func notificationFinished(state: String) {
            metrics.counter(HeraldMetrics.notificationsFinished, [hub, state]).increment()
        }

        /// Outcomes of deliveries to devices, added up (once per page, not once per device).
        public func deliveries(_ counts: OutcomeCounts) {
            for (platform, outcomes) in counts.counts {
                for (outcome, count) in outcomes where count > 0 {
                    metrics.counter(HeraldMetrics.deliveries, [hub, platform.rawValue, outcome.rawValue]).increment(by: Int64(count))
                }
            }
        }

        public func channelsExpired(platform: Platform, count: Int) {
            guard count > 0 else { return }
            metrics.counter(HeraldMetrics.channelsExpired, [hub, platform.rawValue]).increment(by: Int64(count))
        }

        /// `count` devices confirmed a notification for the first time on `platform`.
        public func receipts(platform: Platform, count: Int) {
            guard count > 0 else { return }
            metrics.counter(HeraldMetrics.receipts, [hub, platform.rawValue]).increment(by: Int64(count))
        }

        /// A send is made again after an attempt whose outcome was `cause`.
        public func retry(platform: Platform, cause: DeliveryOutcome) {
            metrics.counter(HeraldMetrics.pushRetries, [hub, platform.rawValue, cause.rawValue]).increment()
        }
    }

    // MARK: Scrape-time gauges

    /// Sets a hub's queue gauges.
    public func setQueue(hub: String, waiting: Int, processing: Int, oldestWaitingAge: Duration) {
        gauge(Self.queueWaiting, [hub]).set(Double(waiting))
        gauge(Self.queueProcessing, [hub]).set(Double(processing))
        let components = oldestWaitingAge.components
        let seconds = Double(components.seconds) + Double(components.attoseconds) * 1e-18
        gauge(Self.queueOldestAge, [hub]).set(max(0, seconds))
    }

    /// Sets a hub's registration gauges, one per platform (0 for a platform it has none of).
    public func setRegistrations(hub: String, counts: [Platform: Int]) {
        for platform in Platform.allCases {
            gauge(Self.registrations, [hub, platform.rawValue]).set(Double(counts[platform] ?? 0))
        }
    }

    /// Sets the open connections to each platform's push service, for the platforms whose
    /// providers can tell (all of Herald's).
    public func setPushConnections(_ counts: [Platform: Int]) {
        for (platform, count) in counts {
            gauge(Self.pushConnections, [platform.rawValue]).set(Double(count))
        }
    }

    /// Sets when a credential of `hub` (``serverCredentialsHub`` for the server's own) on
    /// `platform` expires, or removes the gauge when `expiry` is `nil` (no expiring credential).
    public func setCredentialExpiry(platform: Platform, hub: String, expiry: Date?) {
        let gauge = gauge(Self.credentialExpiry, [platform.rawValue, hub])
        if let expiry {
            gauge.set(expiry.timeIntervalSince1970.rounded())
        } else {
            registry.unregisterGauge(gauge)
        }
    }

    /// Sets whether the last use of the credential of `hub` (``serverCredentialsHub`` for the
    /// server's own) on `platform` failed, or removes the gauge when `failing` is `nil` (no
    /// such credential).
    public func setCredentialFailing(platform: Platform, hub: String, failing: Bool?) {
        let gauge = gauge(Self.credentialFailing, [platform.rawValue, hub])
        if let failing {
            gauge.set(failing ? 1.0 : 0.0)
        } else {
            registry.unregisterGauge(gauge)
        }
    }

    /// Sets a credential's send budget gauges: its rate (`nil`: no limit), the sends this
    /// node may make at once and how long sends are paused for; counts `newlyWaited`, the
    /// time sends waited for it since the last call.
    public func setSendBudget(
        platform: Platform, credential: String, perMinute: Int?, available: Double?, pausedFor: Duration, newlyWaited: Duration
    ) {
        let labels = [platform.rawValue, credential]
        for (family, value) in [(Self.sendBudgetRate, perMinute.map(Double.init)), (Self.sendBudgetAvailable, available)] {
            if let value { gauge(family, labels).set(value) } else { registry.unregisterGauge(gauge(family, labels)) }
        }
        gauge(Self.sendBudgetPaused, labels).set(max(0, pausedFor.seconds))
        let waited = counter(Self.sendBudgetWaited, labels)
        if newlyWaited > .zero { waited.increment(by: newlyWaited.seconds) }
    }

    /// A scrape could not read a hub's store.
    public func storeError(hub: String) {
        counter(Self.scrapeErrors, [hub]).increment()
    }

    /// Removes the gauges of a hub that is no longer served (deleted), so that its last
    /// figures do not linger on the page.
    public func removeGauges(hub: String) {
        for family in [Self.queueWaiting, Self.queueProcessing, Self.queueOldestAge] {
            registry.unregisterGauge(gauge(family, [hub]))
        }
        for platform in Platform.allCases {
            registry.unregisterGauge(gauge(Self.registrations, [hub, platform.rawValue]))
            registry.unregisterGauge(gauge(Self.credentialExpiry, [platform.rawValue, hub]))
            registry.unregisterGauge(gauge(Self.credentialFailing, [platform.rawValue, hub]))
        }
    }
}
