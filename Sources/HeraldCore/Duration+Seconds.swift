extension Duration {
    /// This duration in seconds, with its fraction: what `Date` and `TimeInterval`
    /// arithmetic take.
    public var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) * 1e-18
    }

    /// Whole milliseconds, truncated toward zero; `Int64.min` or `Int64.max` when the
    /// duration does not fit.
    public var wholeMilliseconds: Int64 {
        Self.whole(components, per: 1_000)
    }

    /// Whole nanoseconds, truncated toward zero; `Int64.min` or `Int64.max` when the
    /// duration does not fit.
    public var wholeNanoseconds: Int64 {
        Self.whole(components, per: 1_000_000_000)
    }

    /// `seconds * unitsPerSecond + attoseconds / attosecondsPerUnit`, saturating.
    private static func whole(_ components: (seconds: Int64, attoseconds: Int64), per unitsPerSecond: Int64) -> Int64 {
        let attosecondsPerUnit = 1_000_000_000_000_000_000 / unitsPerSecond
        let (scaled, overflow) = components.seconds.multipliedReportingOverflow(by: unitsPerSecond)
        guard !overflow else { return components.seconds < 0 ? .min : .max }
        let (sum, sumOverflow) = scaled.addingReportingOverflow(components.attoseconds / attosecondsPerUnit)
        guard !sumOverflow else { return scaled < 0 ? .min : .max }
        return sum
    }
}
