public import Foundation
public import HeraldCore
public import HeraldStore

/// What an operator's console reads of a hub: the notifications accepted, the delivery queue
/// and the devices. Reads only; every page is read through an index, a page at a time, so a hub
/// of a million devices pages as fast as a small one.
extension HubEngine {
    /// The most rows one page of the console's reads returns; larger limits are cut to it.
    public static let maxConsolePageSize = 1000

    /// One page of the notifications accepted, newest first, whole notifications with their
    /// partitions' counts added, only those in `states` (all when `nil`), strictly older than
    /// `cursor` (made from the last of the previous page with
    /// ``NotificationHistoryCursor/init(after:)``). See
    /// ``NotificationStore/notificationHistory(states:before:limit:)``.
    public func notificationHistory(
        states: Set<NotificationState>? = nil, before cursor: NotificationHistoryCursor? = nil, limit: Int
    ) async throws -> [NotificationListing] {
        try await store.notificationHistory(states: states, before: cursor, limit: Self.consolePageSize(limit))
    }

    /// The rows waiting for a worker or held by one, oldest first, each partition on its own
    /// with its own counts, cursor and lease (see ``NotificationStore/queueEntries(limit:)``).
    public func queueEntries(limit: Int) async throws -> [NotificationListing] {
        try await store.queueEntries(limit: Self.consolePageSize(limit))
    }

    /// The delivery queue's totals at `now` (see ``NotificationStore/queueStatistics(now:)``).
    public func queueStatistics(now: Date = Date()) async throws -> QueueStatistics {
        try await store.queueStatistics(now: now)
    }

    /// One page of the devices `query` selects, ordered by id, strictly after `cursor`, expired
    /// ones included (see ``RegistrationStore/browseRegistrations(_:after:limit:)``).
    ///
    /// - Throws: `badRequest` for a tag expression too long to resolve.
    public func browseRegistrations(_ query: RegistrationQuery, after cursor: String? = nil, limit: Int) async throws -> [Registration] {
        try await store.browseRegistrations(query, after: cursor, limit: Self.consolePageSize(limit))
    }

    /// How many devices `query` selects (see ``RegistrationStore/countRegistrations(_:)``).
    ///
    /// - Throws: `badRequest` for a tag expression too long to resolve.
    public func countRegistrations(_ query: RegistrationQuery) async throws -> Int {
        try await store.countRegistrations(query)
    }

    /// The number of registrations per platform (platforms with none are left out).
    public func registrationCountsByPlatform() async throws -> [Platform: Int] {
        try await store.registrationCountsByPlatform()
    }

    static func consolePageSize(_ limit: Int) -> Int {
        min(max(limit, 0), maxConsolePageSize)
    }
}
