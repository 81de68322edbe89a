public import Foundation

/// A notification the hub accepted: what to send, to whom, and how far delivery got.
public struct NotificationRecord: Sendable, Hashable, Codable, Identifiable {
    public var id: String
    /// The tag expression as given; `nil` broadcasts to every registration.
    public var tagExpression: String?
    /// Rendered payloads; only registrations on these platforms are targeted. Empty for a
    /// template send.
    public var payloads: [PlatformPayload]
    /// For a template send, the properties each template registration's body is rendered
    /// from; `nil` for a native send.
    public var template: TemplateSend?
    /// For a direct send, the devices it goes to (no registration is consulted); `nil` for a
    /// send to tags or to everyone.
    public var directTargets: [DirectTarget]?
    /// When delivery may start; `nil` for at once. A notification with a future time is
    /// ``NotificationState/scheduled`` until then.
    public var scheduledAt: Date?
    public var state: NotificationState
    public var counts: OutcomeCounts
    /// Registration id after which delivery resumes if it was interrupted.
    public var cursor: String?
    /// For a partition of a large notification: the id of the notification it is part of.
    /// A broadcast is split into partitions that workers on any node deliver in parallel,
    /// each with its own cursor and counts; reading the notification adds them up.
    public var partOf: String?
    /// The last registration id (inclusive) this record delivers to; `nil` for no limit.
    /// A partition covers the ids after its first cursor up to this one.
    public var upperBound: String?
    /// The W3C `traceparent` of the span that accepted the notification, when tracing is on:
    /// the spans of its delivery, which a worker makes later (perhaps on another node), join
    /// that trace. `nil` when no tracer was set up.
    public var traceContext: String?
    /// How long the notification's sends are spread over, from when its delivery is due (its
    /// scheduled time, or its acceptance): each device's send waits for its share of the time,
    /// so that the devices get it evenly over the spread instead of at once. `nil` for as fast
    /// as the budgets allow. A spread notification is not split into partitions.
    public var spread: Duration?
    /// For a broadcast, the APNs broadcast channel it went to (its id as APNs gave it): one
    /// request for every device on the channel, no registration consulted. `nil` otherwise.
    public var broadcastChannel: String?
    public var enqueuedAt: Date
    public var startedAt: Date?
    public var endedAt: Date?

    public init(
        id: String,
        tagExpression: String?,
        payloads: [PlatformPayload],
        template: TemplateSend? = nil,
        directTargets: [DirectTarget]? = nil,
        scheduledAt: Date? = nil,
        state: NotificationState = .enqueued,
        counts: OutcomeCounts = OutcomeCounts(),
        cursor: String? = nil,
        partOf: String? = nil,
        upperBound: String? = nil,
        traceContext: String? = nil,
        spread: Duration? = nil,
        broadcastChannel: String? = nil,
        enqueuedAt: Date = Date(),
        startedAt: Date? = nil,
        endedAt: Date? = nil
    ) {
        self.id = id
        self.tagExpression = tagExpression
        self.payloads = payloads
        self.template = template
        self.directTargets = directTargets
        self.scheduledAt = scheduledAt
        self.state = state
        self.counts = counts
        self.cursor = cursor
        self.partOf = partOf
        self.upperBound = upperBound
        self.traceContext = traceContext
        self.spread = spread
        self.broadcastChannel = broadcastChannel
        self.enqueuedAt = enqueuedAt
        self.startedAt = startedAt
        self.endedAt = endedAt
    }

    public var platforms: Set<Platform> { Set(payloads.map(\.platform)) }

    /// For a broadcast, what APNs answered its one request; `nil` before it answered.
    public var broadcastOutcome: DeliveryOutcome? {
        counts.counts[.apns]?.first { $0.value > 0 }?.key
    }
}
