import Foundation
import HeraldCore
import HeraldPush
import HeraldStore
import Logging

/// The delivery of one notification (or one partition of it), whatever its target: a tag
/// expression or broadcast, a direct send's devices, a test send's registrations. It sends
/// page by page and keeps the books of what it sent in one place: the outcome counts, the
/// registrations whose channel expired (removed and counted), the delivery log's outcomes and
/// progress (the console's per-platform progress chart). The metrics of the outcomes and each
/// page's span are the fan-out's (``HubEngine/fanOut(count:staleAt:logger:step:done:)``).
struct DeliveryRun {
    let engine: HubEngine
    /// The notification the delivery log knows: the whole one, for a partition.
    let notification: String
    /// The record delivered: the notification, or one of its partitions.
    let part: String
    /// When a device still waiting for a paused provider counts as abandoned.
    let staleAt: Date
    let logger: Logger
    /// The outcomes so far, those of earlier runs of the record included.
    private(set) var counts: OutcomeCounts
    /// The pace of a notification spread over a time; `nil` for as fast as its budgets allow.
    private var spread: SendSpread?

    init(engine: HubEngine, record: NotificationRecord, staleAt: Date, logger: Logger) {
        self.engine = engine
        self.notification = record.partOf ?? record.id
        self.part = record.id
        self.staleAt = staleAt
        self.logger = logger
        self.counts = record.counts
        engine.deliveryLog.recordProgress(notification: notification, part: part, counts: counts)
    }

    /// Pages read at a time: a read's own cost (a round trip; on PostgreSQL, a transaction of
    /// four statements) is shared by more devices, while progress is still saved after every
    /// page, so a node killed mid-broadcast sends no more devices twice.
    static let pagesPerRead = 4

    /// Delivers a claimed record from its cursor to the end, saving the counts and the cursor
    /// after every page; returns the counts.
    ///
    /// Registrations are read up to the record's upper bound (the store reads no further),
    /// ``pagesPerRead`` pages at a time, and the next read is made while the pages of the
    /// current one are sent. A notification to registrations whose first page is full is split
    /// before it is sent (``HubEngine/split(_:after:logger:)``), so that the workers of every
    /// node share it; one spread over a time is not split (it asks for less than a worker
    /// sends), and its pages go at its pace (``SendSpread``). Interrupted (shutdown), it hands
    /// the record back from its cursor.
    mutating func run(_ claimed: NotificationRecord, plan: DeliveryPlan) async throws -> OutcomeCounts {
        let engine = self.engine, part = self.part
        let pageSize = max(1, engine.configuration.pageSize)
        let readSize = pageSize * Self.pagesPerRead
        var cursor = claimed.cursor
        var upperBound = claimed.upperBound
        var splitTried = !plan.isPartitionable || claimed.partOf != nil || upperBound != nil || claimed.spread != nil
        if let length = claimed.spread {
            let devices = try await engine.retryingWhileUnavailable("count the devices of a spread notification", id: part) {
                try await plan.deviceCount(store: engine.store)
            }
            spread = SendSpread(startedAt: claimed.startedAt ?? Date(), length: length, devices: devices)
            logger.debug(
                "Spreading a notification's sends", metadata: ["herald.spread.seconds": "\(length.components.seconds)", "herald.devices": "\(devices)"])
        }
        var selection = Selection()
        var read = try await Self.readPage(plan, after: cursor, through: upperBound, pageSize: readSize, engine: engine, part: part)
        while true {
            var more = read.count == readSize
            if read.count >= pageSize, !splitTried {
                splitTried = true
                upperBound = try await engine.split(claimed, after: cursor, logger: logger)
            }
            // A partition ends at its upper bound (the next one starts after it): the store reads
            // no further, but the first read was made before the split set it.
            if let upperBound, let end = read.firstIndex(where: { HubEngine.id($0.cursor, isAfter: upperBound) }) {
                read.removeSubrange(end...)
                more = false
            }
            guard let last = read.last?.cursor else { break }
            // Read on while this read's pages are being sent (a child task, cancelled if a page
            // fails).
            let readNext = more, bound = upperBound
            async let next =
                readNext ? Self.readPage(plan, after: last, through: bound, pageSize: readSize, engine: engine, part: part) : []

            let providers = engine.providers
            for start in stride(from: read.startIndex, to: read.endIndex, by: pageSize) {
                let page = read[start..<min(start + pageSize, read.endIndex)]
                let steps = page.map { plan.step(for: $0, providers: providers, selection: &selection) }
                let delivered = try await deliver(Array(page), steps: steps)
                guard delivered.complete else {
                    // Shutdown came while sends waited (for a paused push service, or for their
                    // credential's budget): what the page had finished in order is booked, and
                    // the rest of it is sent again by whoever resumes the notification.
                    if delivered.booked > 0 { cursor = page[page.startIndex + delivered.booked - 1].cursor }
                    try await engine.saveProgress(of: claimed.id, cursor: cursor, counts: counts, handBack: true)
                    logger.info(
                        "Delivery interrupted by shutdown while sends waited; the rest of the page is handed back",
                        metadata: ["herald.booked": "\(delivered.booked)", "herald.page": "\(page.count)"])
                    throw CancellationError()
                }
                cursor = page.last?.cursor ?? cursor
                // Interrupted with devices left: hand the notification back (its lease ends now).
                let handBack = engine.isInterrupted && (more || page.endIndex < read.endIndex)
                try await engine.saveProgress(of: claimed.id, cursor: cursor, counts: counts, handBack: handBack)
                if handBack {
                    logger.info("Delivery interrupted by shutdown; the notification is handed back from its cursor")
                    throw CancellationError()
                }
            }
            read = try await next
        }
        return counts
    }

    /// A page of the plan's devices, read again while the store is unavailable for a moment.
    private static func readPage(
        _ plan: DeliveryPlan, after cursor: String?, through bound: String?, pageSize: Int, engine: HubEngine, part: String
    ) async throws -> [DeliveryDevice] {
        try await engine.retryingWhileUnavailable("read a page of devices", id: part) {
            try await plan.page(after: cursor, through: bound, pageSize: pageSize, store: engine.store)
        }
    }

    /// Sends one page and books it.
    ///
    /// - Parameters:
    ///   - steps: what each device gets, in the order of `devices`.
    ///   - handsBack: whether a page interrupted while sends waited goes back for whoever
    ///     resumes the notification to send again (a delivery through the queue): then only
    ///     the devices before the first one without a final outcome are booked. A test send
    ///     books what it has.
    /// - Returns: each booked device's outcome (`nil` for a device the notification does not
    ///   target or one not booked), whether they are all final (`false` when delivery was
    ///   interrupted while a device waited), and how many devices from the page's start are
    ///   booked (all of them unless the page goes back).
    mutating func deliver(
        _ devices: [DeliveryDevice],
        steps: [DeliveryStep],
        handsBack: Bool = true
    ) async throws -> (outcomes: [DeliveryOutcome?], complete: Bool, booked: Int) {
        var results = [(platform: Platform, result: PushResult)?](repeating: nil, count: devices.count)
        let sentBefore = self.counts.total
        let position = spread.map { SendSpread.Position(spread: $0, sent: sentBefore) }
        let sent = await engine.fanOut(
            count: devices.count,
            staleAt: staleAt,
            spread: position,
            logger: logger,
            step: { steps[$0] },
            done: { index, platform, result in results[index] = (platform, result) }
        )
        // Interrupted: the devices before the first one still waiting are booked (a device
        // the notification does not target waits for nothing).
        let booked =
            sent || !handsBack
            ? devices.count
            : results.indices.first { index in
                if case .ignore = steps[index] { return false }
                return results[index]?.result.isFinal != true
            } ?? devices.count
        var outcomes = [DeliveryOutcome?](repeating: nil, count: devices.count)
        var counts = self.counts
        var expired: [String] = []
        var expiredPlatforms: [Platform] = []
        var expiredPerPlatform: [Platform: Int] = [:]
        for index in 0..<booked {
            guard let (platform, result) = results[index] else { continue }
            outcomes[index] = result.outcome
            counts.add(result.outcome, platform: platform)
            // A direct send's device has no registration to remove.
            if result.disposition == .channelExpired, let id = devices[index].registrationID {
                expired.append(id)
                expiredPlatforms.append(platform)
                expiredPerPlatform[platform, default: 0] += 1
            }
        }
        self.counts = counts
        if !expired.isEmpty {
            // Their events before the registrations go: a node killed in between sends the page
            // again when the notification resumes, and the same events (by their ids) are
            // recorded once more rather than never.
            await engine.recordExpiredChannelEvents(zip(expired, expiredPlatforms).map { (id: $0, platform: $1) }, notification: notification)
            try await engine.retryingWhileUnavailable("remove expired registrations", id: part) {
                try await engine.store.deleteRegistrations(ids: expired)
            }
            engine.recordExpired(expiredPerPlatform)
            logger.debug("Removed registrations whose channel expired", metadata: ["herald.count": "\(expired.count)"])
        }
        engine.deliveryLog.record(
            notification: notification,
            outcomes: devices.indices.compactMap { index in
                guard let id = devices[index].registrationID, let outcome = outcomes[index] else { return nil }
                return (id, outcome)
            }
        )
        engine.deliveryLog.recordProgress(notification: notification, part: part, counts: counts)
        return (outcomes, sent, booked)
    }
}
