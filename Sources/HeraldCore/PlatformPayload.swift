public import Foundation

/// A notification rendered for one platform: the body and the push-service headers.
///
/// For ``Platform/fcm`` the body is the JSON of an FCM v1 `message` object without its
/// `token`, which the FCM provider adds per device. For the others it is sent as it is.
public struct PlatformPayload: Sendable, Hashable, Codable {
    public struct Header: Sendable, Hashable, Codable {
        public var name: String
        public var value: String
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    public var platform: Platform
    public var body: Data
    public var headers: [Header]

    public init(platform: Platform, body: Data, headers: [Header] = []) {
        self.platform = platform
        self.body = body
        self.headers = headers
    }
}

/// Outcome counts of one notification, per platform and outcome.
public struct OutcomeCounts: Sendable, Hashable, Codable {
    public var counts: [Platform: [DeliveryOutcome: Int]]

    public init(_ counts: [Platform: [DeliveryOutcome: Int]] = [:]) { self.counts = counts }

    public mutating func add(_ outcome: DeliveryOutcome, platform: Platform, count: Int = 1) {
        counts[platform, default: [:]][outcome, default: 0] += count
    }

    public mutating func merge(_ other: OutcomeCounts) {
        for (platform, outcomes) in other.counts {
            for (outcome, n) in outcomes { add(outcome, platform: platform, count: n) }
        }
    }

    /// Total of one outcome over every platform.
    public func total(_ outcome: DeliveryOutcome) -> Int {
        counts.values.reduce(0) { $0 + ($1[outcome] ?? 0) }
    }

    /// Total of every outcome over every platform.
    public var total: Int { counts.values.reduce(0) { $0 + $1.values.reduce(0, +) } }

    // Encoded as {"apns": {"Success": 2}}: readable, and stable across versions.
    public init(from decoder: any Decoder) throws {
        let raw = try decoder.singleValueContainer().decode([String: [String: Int]].self)
        var counts: [Platform: [DeliveryOutcome: Int]] = [:]
        for (p, outcomes) in raw {
            guard let platform = Platform(rawValue: p) else { continue }
            for (o, n) in outcomes { counts[platform, default: [:]][DeliveryOutcome(rawValue: o)] = n }
        }
        self.counts = counts
    }

    public func encode(to encoder: any Encoder) throws {
        var raw: [String: [String: Int]] = [:]
        for (platform, outcomes) in counts {
            for (o, n) in outcomes { raw[platform.rawValue, default: [:]][o.rawValue] = n }
        }
        var c = encoder.singleValueContainer()
        try c.encode(raw)
    }
}

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
        self.enqueuedAt = enqueuedAt
        self.startedAt = startedAt
        self.endedAt = endedAt
    }

    public var platforms: Set<Platform> { Set(payloads.map(\.platform)) }
}

/// What a template send carries: the properties, and optionally the one template to use.
public struct TemplateSend: Sendable, Hashable, Codable {
    /// Property values by name; names match case-insensitively.
    public var properties: [String: String]
    /// Only template registrations whose template has this name are reached; `nil` for all.
    public var templateName: String?

    public init(properties: [String: String], templateName: String? = nil) {
        self.properties = properties
        self.templateName = templateName
    }
}

/// One device of a direct send: a handle that no registration needs to hold.
public struct DirectTarget: Sendable, Hashable, Codable {
    public var platform: Platform
    public var handle: String
    public var webPushKeys: WebPushKeys?

    public init(platform: Platform, handle: String, webPushKeys: WebPushKeys? = nil) {
        self.platform = platform
        self.handle = handle
        self.webPushKeys = webPushKeys
    }
}
