/// How many sends a push credential may make per minute: the budget every hub that shares the
/// credential, and every node, respects together.
///
/// Written as `N/min`, `N/s` or `N/h` (`600000/min`, `10000/s`); a bare number is per minute.
public struct SendRate: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Sends per minute: 1 to ``maxPerMinute``.
    public let perMinute: Int

    /// The highest rate that can be set: a billion sends a minute.
    public static let maxPerMinute = 1_000_000_000

    /// FCM's default quota: 600,000 messages a minute per Firebase project.
    public static let fcmDefault = SendRate(validPerMinute: 600_000)

    /// - Throws: ``HeraldError/badRequest(_:)`` for a rate outside 1 to ``maxPerMinute``.
    public init(perMinute: Int) throws(HeraldError) {
        guard (1...Self.maxPerMinute).contains(perMinute) else {
            throw .badRequest("a send rate is 1 to \(Self.maxPerMinute) sends a minute, not \(perMinute)")
        }
        self.perMinute = perMinute
    }

    private init(validPerMinute: Int) {
        self.perMinute = validPerMinute
    }

    /// Parses `N/min`, `N/s`, `N/h` or `N` (per minute).
    ///
    /// - Throws: ``HeraldError/badRequest(_:)`` naming what is wrong.
    public init(parsing text: String) throws(HeraldError) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        let unit = parts.count == 2 ? parts[1].lowercased() : "min"
        guard let count = Int(parts[0]), count > 0 else {
            throw .badRequest("'\(text)' is not a send rate: write it as N/min, N/s or N/h, such as 600000/min")
        }
        let (perMinute, overflow): (Int, Bool)
        switch unit {
        case "min", "m", "minute": (perMinute, overflow) = (count, false)
        case "s", "sec", "second": (perMinute, overflow) = count.multipliedReportingOverflow(by: 60)
        case "h", "hour":
            guard count >= 60 else {
                throw .badRequest("'\(text)' is less than one send a minute: the budget counts whole sends per minute")
            }
            (perMinute, overflow) = (count / 60, false)
        default:
            throw .badRequest("'\(text)' has no unit Herald knows: write it as N/min, N/s or N/h, such as 600000/min")
        }
        guard !overflow, perMinute <= Self.maxPerMinute else {
            throw .badRequest("'\(text)' is more than a send rate can be: at most \(Self.maxPerMinute) sends a minute")
        }
        try self.init(perMinute: perMinute)
    }

    /// Sends per second.
    public var perSecond: Double { Double(perMinute) / 60 }

    public var description: String { "\(perMinute)/min" }

    public init(from decoder: any Decoder) throws {
        let perMinute = try decoder.singleValueContainer().decode(Int.self)
        do {
            try self.init(perMinute: perMinute)
        } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: error.message))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(perMinute)
    }
}
