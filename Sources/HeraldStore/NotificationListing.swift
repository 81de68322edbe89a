public import Foundation
public import HeraldCore

/// A notification as an operator sees it: the record (a whole notification's counts combined
/// with its partitions', as ``NotificationStore/notification(id:)`` does, in
/// ``NotificationStore/notificationHistory(states:before:limit:)``; a row's own in
/// ``NotificationStore/queueEntries(limit:)``) and, while a worker holds it, the lease.
public struct NotificationListing: Sendable, Hashable {
    public var record: NotificationRecord
    /// Who holds the lease, while the record is ``NotificationState/processing``; `nil` otherwise.
    public var leaseOwner: String?
    /// When the lease runs out, while the record is ``NotificationState/processing`` (it may
    /// be past: the worker died, and the next claim takes it over); `nil` otherwise.
    public var leaseUntil: Date?

    public init(record: NotificationRecord, leaseOwner: String? = nil, leaseUntil: Date? = nil) {
        self.record = record
        self.leaseOwner = leaseOwner
        self.leaseUntil = leaseUntil
    }
}

extension NotificationListing {
    /// A row of the queue as a store reads it: the lease is shown only while the row is
    /// processing (a finished row may keep its last owner's name).
    package init(row record: NotificationRecord, leaseOwner: String?, leaseUntil: Date?) {
        let held = record.state == .processing
        self.init(record: record, leaseOwner: held ? leaseOwner : nil, leaseUntil: held ? leaseUntil : nil)
    }

    /// The whole notifications among `rows`, in the order given, each combined with the
    /// partitions among `rows` that are part of it (see
    /// ``NotificationRecord/combined(withPartitions:)``).
    package static func wholes(combining rows: [NotificationListing]) -> [NotificationListing] {
        var partitions: [String: [NotificationRecord]] = [:]
        for row in rows {
            if let partOf = row.record.partOf { partitions[partOf, default: []].append(row.record) }
        }
        return rows.compactMap { row in
            guard row.record.partOf == nil else { return nil }
            var whole = row
            if let parts = partitions[row.record.id] { whole.record = row.record.combined(withPartitions: parts) }
            return whole
        }
    }
}
