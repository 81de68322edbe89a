import Foundation
import HeraldCore
import HeraldMetrics
import HeraldPush
import Logging
import ServiceContextModule
import Tracing

/// Sending to the devices of one page: bounded concurrency, retries, a paused provider.
extension HubEngine {
    /// Sends to `count` devices with at most `concurrency` sends in flight.
    ///
    /// `step` says, for each index in order, what that device gets; `done` is told every
    /// outcome (also those decided without a send, such as duplicates), on this task, in the
    /// order the sends end. A device whose provider is paused waits for it until `staleAt`
    /// (then it counts as ``DeliveryOutcome/abandoned``) or until delivery is interrupted.
    ///
    /// The sends of each platform go to its provider in batches of a quarter of the
    /// concurrency (``PushProvider/send(_:)``), up to four batches in flight: a task per batch,
    /// not per device. A device whose first answer is not final (retryable, or its provider
    /// paused) goes on with its retries on its own.
    ///
    /// - Returns: `false` when delivery was interrupted while a device waited for its paused
    ///   provider: that device was not sent to, and the outcomes told are not all final.
    @discardableResult
    func fanOut(
        count: Int,
        staleAt: Date,
        spread: SendSpread.Position? = nil,
        logger: Logger,
        step: (Int) -> DeliveryStep,
        done: (Int, Platform, PushResult) -> Void
    ) async -> Bool {
        var sentToAll = true
        let concurrency = max(1, configuration.concurrency)
        let batchSize = max(1, concurrency / 4)
        let batchesInFlight = max(1, concurrency / batchSize)
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
        // A credential with a budget sends in batches of at most one second's worth of it, so
        // that its sends are spread over each second rather than go in bursts of a batch.
        var batchSizes: [Platform: Int] = [:]
        func batchLimit(of platform: Platform) -> Int {
            if let size = batchSizes[platform] { return size }
            let size = min(batchSize, budget(for: platform)?.batchLimit ?? batchSize, spread?.spread.batchLimit ?? batchSize)
            batchSizes[platform] = size
            return size
        }
        await withTaskGroup(of: SendBatch.self) { group in
            var inFlight = 0
            var filling: [Platform: SendBatch] = [:]
            // The notification's sends launched before this page's next batch, for its spread.
            var launched = spread?.sent ?? 0
            // Sends `batch` once its turn in the notification's spread has come, fewer than
            // `batchesInFlight` are out and its credential's budget lets it go.
            func launch(_ batch: SendBatch) async {
                func stop(_ result: PushResult) {
                    var unsent = batch
                    unsent.results = Array(repeating: result, count: batch.sends.count)
                    unsent.forEachResult(finish)
                }
                if let spread, let stopped = await waitForTurn(until: spread.spread.due(launched), staleAt: staleAt, reason: SendSpread.waitReason) {
                    return stop(stopped)
                }
                launched += batch.sends.count
                if let budget = budget(for: batch.platform),
                    let stopped = await waitForBudget(budget, sends: batch.sends.count, staleAt: staleAt)
                {
                    return stop(stopped)
                }
                if inFlight >= batchesInFlight, let sent = await group.next() {
                    sent.forEachResult(finish)
                    inFlight -= 1
                }
                group.addTask { await self.send(batch, staleAt: staleAt, trace: sendContext, logger: logger) }
                inFlight += 1
            }
            for index in 0..<count {
                switch step(index) {
                case .ignore:
                    continue
                case .outcome(let platform, let outcome):
                    finish(index, platform, PushResult(disposition: .permanentFailure, outcome: outcome))
                case .send(let platform, let provider, let target, let delivery):
                    let notification: PushNotification
                    switch Self.notification(of: delivery, platform: platform, logger: logger) {
                    case .send(let ready):
                        notification = ready
                    case .refused(let result):
                        finish(index, platform, result)
                        continue
                    }
                    // One hash per device; a second only when the batch is full.
                    let size = batchLimit(of: platform)
                    let filled = filling[platform, default: SendBatch(platform: platform, provider: provider, capacity: size)]
                        .append(index, PushSend(notification, to: target))
                    guard filled >= size, let batch = filling.removeValue(forKey: platform) else { continue }
                    await launch(batch)
                }
            }
            for batch in filling.values { await launch(batch) }
            for await sent in group { sent.forEachResult(finish) }
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

    /// A device's notification: the shared one, or rendered from its template (a template that
    /// does not render into a valid notification is the device's final result).
    static func notification(
        of delivery: DeliveryStep.Delivery,
        platform: Platform,
        logger: Logger
    ) -> DeviceNotification {
        switch delivery {
        case .ready(let notification):
            return .send(notification)
        case .template(let rendering):
            switch rendering.notification() {
            case .success(let notification):
                return .send(notification)
            case .failure(let error):
                logger.debug(
                    "A template did not render into a valid notification for a device",
                    metadata: ["herald.platform": "\(platform)", "herald.error": "\(error.code)"]
                )
                let outcome: DeliveryOutcome = error.code == .payloadTooLarge ? .invalidNotificationSize : .invalidNotificationFormat
                return .refused(PushResult(disposition: .permanentFailure, outcome: outcome, reason: "template"))
            }
        }
    }

    enum DeviceNotification {
        case send(PushNotification)
        /// The device's final result, without a send.
        case refused(PushResult)
    }

    /// Reserves `sends` of `budget` and waits until they may go (``waitForTurn(until:staleAt:reason:)``):
    /// `nil` when they may go, else the result every one of them gets, unsent. The sends not
    /// made are given back to the budget.
    func waitForBudget(_ budget: SendBudget, sends: Int, staleAt: Date) async -> PushResult? {
        let wait = budget.reserve(sends)
        guard wait > .zero else { return nil }
        let stopped = await waitForTurn(until: .now + wait, staleAt: staleAt, reason: SendBudget.waitReason)
        if stopped != nil { budget.refund(sends) }
        return stopped
    }

    /// Waits until `until`, in short steps, so that shutdown and staleness are noticed at once.
    /// Returns `nil` once sends may go; otherwise the result their devices get, unsent, with
    /// `reason`: paused (delivery was interrupted: the page is handed back) or abandoned (the
    /// notification went stale while they waited).
    func waitForTurn(until: ContinuousClock.Instant, staleAt: Date, reason: String) async -> PushResult? {
        while true {
            let left = until - .now
            if left <= .zero { return nil }
            if Date() >= staleAt {
                return PushResult(disposition: .permanentFailure, outcome: .abandoned, reason: reason)
            }
            if isInterrupted || Task.isCancelled {
                return PushResult(disposition: .providerPaused(retryAfter: left.seconds), outcome: .throttled, reason: reason)
            }
            try? await Task.sleep(for: min(left, .milliseconds(500)))
        }
    }

    /// One batch: sent together, then each device whose answer is not final goes on with its
    /// retries (concurrently with the others').
    func send(_ batch: SendBatch, staleAt: Date, trace: ServiceContext?, logger: Logger) async -> SendBatch {
        var batch = batch
        let provider = batch.provider
        let spans = trace.map { trace in
            batch.sends.map { _ in Self.startPushSpan(in: trace, platform: provider.platform, attempt: 1) }
        }
        batch.results = await provider.send(batch.sends)
        if let spans {
            for (span, result) in zip(spans, batch.results) { Self.endPushSpan(span, result: result) }
        }
        let unfinished = batch.results.indices.filter { !batch.results[$0].isFinal }
        guard !unfinished.isEmpty else { return batch }
        let sends = batch.sends, first = batch.results
        await withTaskGroup(of: (Int, PushResult).self) { group in
            for index in unfinished {
                group.addTask {
                    let result = await self.sendWithRetries(
                        sends[index].notification, to: sends[index].target, via: provider, staleAt: staleAt, trace: trace,
                        logger: logger, firstAnswer: first[index])
                    return (index, result)
                }
            }
            for await (index, result) in group { batch.results[index] = result }
        }
        return batch
    }

    /// One device: the first attempt and the retries the policy allows.
    ///
    /// While the provider is paused (``PushResult/Disposition/providerPaused(retryAfter:)``),
    /// the device waits for it without using up attempts, until `staleAt` (then the outcome is
    /// ``DeliveryOutcome/abandoned``) or until delivery is interrupted (then the paused result
    /// is returned, and the caller hands the page back).
    ///
    /// - Parameter firstAnswer: the first attempt's result when it was sent already (in a batch).
    func sendWithRetries(
        _ notification: PushNotification,
        to target: PushTarget,
        via provider: any PushProvider,
        staleAt: Date,
        trace: ServiceContext? = nil,
        logger: Logger,
        firstAnswer: PushResult? = nil
    ) async -> PushResult {
        var attempt = 1
        var answered = firstAnswer
        let budget = budget(for: provider.platform)
        var throttled = false
        while true {
            let result: PushResult
            if let answer = answered {
                result = answer
                answered = nil
            } else {
                if let budget, let stopped = await waitForBudget(budget, sends: 1, staleAt: staleAt) { return stopped }
                let span = Self.startPushSpan(in: trace, platform: provider.platform, attempt: attempt)
                result = await provider.send(notification, to: target)
                Self.endPushSpan(span, result: result)
            }
            switch result.disposition {
            case .credentialThrottled(let retryAfter) where budget != nil:
                // The service throttles the credential, not this device: every send of the
                // credential waits, and this one tries again without using up an attempt.
                if Date() >= staleAt {
                    return PushResult(disposition: .permanentFailure, outcome: .abandoned, status: result.status, reason: result.reason)
                }
                throttled = true
                metrics?.retry(platform: provider.platform, cause: result.outcome)
                if budget?.throttled(retryAfter: retryAfter) == true {
                    logger.warning(
                        "The push service throttles a credential: its sends wait",
                        metadata: [
                            "herald.platform": "\(provider.platform)", "herald.credential": "\(provider.credentialID)",
                            "herald.retry_after": "\(retryAfter.map { "\($0)" } ?? "-")",
                        ])
                }
            case .providerPaused(let retryAfter):
                if retryAfter > 0 { budget?.throttled(retryAfter: retryAfter) }
                if Date() >= staleAt {
                    return PushResult(disposition: .permanentFailure, outcome: .abandoned, status: result.status, reason: result.reason)
                }
                // Waits in short steps, so that shutdown and staleness are noticed at once.
                let wait = min(
                    Duration.milliseconds(Int64(max(0, retryAfter) * 1000)), .milliseconds(500), Duration.seconds(max(0, staleAt.timeIntervalSinceNow)))
                if isInterrupted { return result }
                do {
                    try await Task.sleep(for: wait)
                } catch {
                    return result
                }
                if isInterrupted { return result }
            case .retryable(let retryAfter), .credentialThrottled(let retryAfter):
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
                if throttled, result.disposition == .delivered { budget?.accepted() }
                return result
            }
        }
    }
}

/// Sends of one platform that travel together, and (once sent) their results.
struct SendBatch: Sendable {
    let platform: Platform
    let provider: any PushProvider
    /// Each send's index in the page, in the order of ``sends``.
    private(set) var indices: [Int] = []
    private(set) var sends: [PushSend] = []
    /// In the order of ``sends``, once sent.
    var results: [PushResult] = []

    init(platform: Platform, provider: any PushProvider, capacity: Int) {
        self.platform = platform
        self.provider = provider
        indices.reserveCapacity(capacity)
        sends.reserveCapacity(capacity)
    }

    /// Adds a send; returns how many the batch holds now.
    mutating func append(_ index: Int, _ send: PushSend) -> Int {
        indices.append(index)
        sends.append(send)
        return sends.count
    }

    /// Tells `body` each device's index in the page, the platform and the result.
    func forEachResult(_ body: (Int, Platform, PushResult) -> Void) {
        for (index, result) in zip(indices, results) { body(index, platform, result) }
    }
}

extension PushResult {
    /// Whether this is the device's last word: not a retryable failure, nor a paused provider.
    var isFinal: Bool {
        switch disposition {
        case .retryable, .credentialThrottled, .providerPaused: false
        case .delivered, .channelExpired, .permanentFailure: true
        }
    }
}
