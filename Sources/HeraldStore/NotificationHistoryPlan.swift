package import HeraldCore

/// How a store reads a page of ``NotificationStore/notificationHistory(states:before:limit:)``
/// when it filters by state; each store turns it into its own SQL.
///
/// The state filter applies to a notification as its senders see it, partitions combined
/// (``NotificationRecord/combined(withPartitions:)``), while the index holds each whole row's
/// own state. The two differ only for a split notification (its whole row has an
/// ``NotificationRecord/upperBound``): its row may be finished while partitions still run, or
/// completed while one was abandoned. So the store reads, newest first, the index ranges of the
/// states asked for and, when one of them is a state a split notification can combine to, the
/// range of split notifications; it combines them, keeps those in the states asked for, and reads
/// further until the page is full. Unsplit notifications are never read and then dropped.
package struct NotificationHistoryPlan: Sendable {
    /// The whole rows' states to read, as stored (sorted raw values).
    package var storedStates: [String]
    /// Whether to read the split notifications whatever their row's state.
    package var readsSplitNotifications: Bool
    /// The states a notification must have once combined; `nil` for any.
    package var states: Set<NotificationState>?

    /// The states a split notification combines to: processing until every part is final, then
    /// abandoned, completed or no target found.
    static let splitStates: Set<NotificationState> = [.processing, .completed, .abandoned, .noTargetFound]

    package init(states: Set<NotificationState>?) {
        self.states = states
        let read = states ?? Set(NotificationState.allCases)
        storedStates = read.map(\.rawValue).sorted()
        readsSplitNotifications = states != nil && !read.isDisjoint(with: Self.splitStates)
    }

    /// Whether a combined listing belongs on the page.
    package func keeps(_ listing: NotificationListing) -> Bool {
        states?.contains(listing.record.state) ?? true
    }

    /// A page of the history, read a batch at a time until `limit` listings are kept.
    ///
    /// `read(wanted, after)` reads one batch: the positions (enqueued at, in the stores'
    /// milliseconds, and id) of at most `wanted` whole rows older than `after`, newest first,
    /// from the plan's ranges; and those rows and their partitions. The listings are combined,
    /// put in the positions' order and filtered; a short batch ends the history.
    package func page(
        limit: Int,
        before cursor: NotificationHistoryCursor?,
        read: (_ wanted: Int, _ after: (enqueuedAt: Int, id: String)?) async throws -> (positions: [(enqueuedAt: Int, id: String)], rows: [NotificationListing])
    ) async throws -> [NotificationListing] {
        guard limit > 0, !storedStates.isEmpty else { return [] }
        var result: [NotificationListing] = []
        var after = cursor.map { (enqueuedAt: $0.enqueuedAt.storeMilliseconds, id: $0.id) }
        while result.count < limit {
            let wanted = limit - result.count
            let batch = try await read(wanted, after)
            guard let last = batch.positions.last else { break }
            let order = Dictionary(batch.positions.enumerated().map { ($1.id, $0) }, uniquingKeysWith: { first, _ in first })
            let wholes = NotificationListing.wholes(combining: batch.rows)
                .filter { order[$0.record.id] != nil }
                .sorted { (order[$0.record.id] ?? 0) < (order[$1.record.id] ?? 0) }
            result += wholes.filter(keeps).prefix(wanted)
            if batch.positions.count < wanted { break }
            after = last
        }
        return result
    }
}
