import Foundation

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
