public import Foundation

/// A notification's outcome as Herald reports it over HTTP: its id, state, and counts per
/// platform and outcome. The server encodes it; the client SDK decodes it.
public struct NotificationSummary: Sendable, Hashable, Codable {
    public var id: String
    /// `Enqueued`, `Processing`, `Completed`, `Abandoned` or `NoTargetFound`.
    public var state: String
    public var tagExpression: String?
    public var platforms: [String]
    /// Devices tried: every outcome except skipped duplicates.
    public var targets: Int
    public var success: Int
    public var failure: Int
    public var outcomes: OutcomeCounts
    public var enqueuedAt: Date
    public var startedAt: Date?
    public var endedAt: Date?

    public init(_ record: NotificationRecord) {
        id = record.id
        state = record.state.rawValue
        tagExpression = record.tagExpression
        platforms = record.payloads.map(\.platform.rawValue)
        targets = record.counts.total - record.counts.total(.skipped)
        success = record.counts.total(.success)
        failure = targets - success
        outcomes = record.counts
        enqueuedAt = record.enqueuedAt
        startedAt = record.startedAt
        endedAt = record.endedAt
    }
}
