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
    /// - Returns: `false` when delivery was interrupted while a device waited for its paused
    ///   provider: that device was not sent to, and the outcomes told are not all final.
    @discardableResult
    func fanOut(
        count: Int,
        staleAt: Date,
        logger: Logger,
        step: (Int) -> DeliveryStep,
        done: (Int, Platform, PushResult) -> Void
    ) async -> Bool {
        var sentToAll = true
        let concurrency = max(1, configuration.concurrency)
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
        await withTaskGroup(of: (Int, Platform, PushResult).self) { group in
            var inFlight = 0
            for index in 0..<count {
                switch step(index) {
                case .ignore:
                    continue
                case .outcome(let platform, let outcome):
                    finish(index, platform, PushResult(disposition: .permanentFailure, outcome: outcome))
                case .send(let platform, let provider, let target, let delivery):
                    if inFlight >= concurrency, let finished = await group.next() {
                        finish(finished.0, finished.1, finished.2)
                        inFlight -= 1
                    }
                    group.addTask {
                        (index, platform, await self.send(delivery, to: target, via: provider, staleAt: staleAt, trace: sendContext, logger: logger))
                    }
                    inFlight += 1
                }
            }
            for await finished in group { finish(finished.0, finished.1, finished.2) }
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

    /// One device: renders its notification if it has a template, then sends.
    func send(
        _ delivery: DeliveryStep.Delivery,
        to target: PushTarget,
        via provider: any PushProvider,
        staleAt: Date,
        trace: ServiceContext?,
        logger: Logger
    ) async -> PushResult {
        switch delivery {
        case .ready(let notification):
            return await sendWithRetries(notification, to: target, via: provider, staleAt: staleAt, trace: trace, logger: logger)
        case .template(let rendering):
            switch rendering.notification() {
            case .success(let notification):
                return await sendWithRetries(notification, to: target, via: provider, staleAt: staleAt, trace: trace, logger: logger)
            case .failure(let error):
                logger.debug(
                    "A template did not render into a valid notification for a device",
                    metadata: ["herald.platform": "\(provider.platform)", "herald.error": "\(error.code)"]
                )
                let outcome: DeliveryOutcome = error.code == .payloadTooLarge ? .invalidNotificationSize : .invalidNotificationFormat
                return PushResult(disposition: .permanentFailure, outcome: outcome, reason: "template")
            }
        }
    }

    /// One device: the first attempt and the retries the policy allows.
    ///
    /// While the provider is paused (``PushResult/Disposition/providerPaused(retryAfter:)``),
    /// the device waits for it without using up attempts, until `staleAt` (then the outcome is
    /// ``DeliveryOutcome/abandoned``) or until delivery is interrupted (then the paused result
    /// is returned, and the caller hands the page back).
    func sendWithRetries(
        _ notification: PushNotification,
        to target: PushTarget,
        via provider: any PushProvider,
        staleAt: Date,
        trace: ServiceContext? = nil,
        logger: Logger
    ) async -> PushResult {
        var attempt = 1
        while true {
            let span = Self.startPushSpan(in: trace, platform: provider.platform, attempt: attempt)
            let result = await provider.send(notification, to: target)
            Self.endPushSpan(span, result: result)
            switch result.disposition {
            case .providerPaused(let retryAfter):
                if Date() >= staleAt {
                    return PushResult(disposition: .permanentFailure, outcome: .abandoned, status: result.status, reason: result.reason)
                }
                // Waits in short steps, so that shutdown and staleness are noticed at once.
                let wait = min(Duration.milliseconds(Int64(max(0, retryAfter) * 1000)), .milliseconds(500), Duration.seconds(max(0, staleAt.timeIntervalSinceNow)))
                if isInterrupted { return result }
                do {
                    try await Task.sleep(for: wait)
                } catch {
                    return result
                }
                if isInterrupted { return result }
            case .retryable(let retryAfter):
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
                return result
            }
        }
    }
}
