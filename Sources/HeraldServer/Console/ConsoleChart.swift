import Foundation

/// Line charts as inline SVG, drawn on the server: no script library, nothing fetched. Each
/// chart has a text alternative and a legend.
struct ConsoleChart {
    struct Line {
        var name: String
        var values: [Double?]
        var dashed = false
    }

    /// Colours a reader can tell apart in both themes.
    static let palette = ["#2e9d5b", "#d94f3d", "#3b73d9", "#d9a23b", "#8e5bd9", "#3bb5c4", "#c44f9a", "#7a8a3b"]

    var lines: [Line]
    /// Labels of the first and last points (`60 min ago`, `now`).
    var from: String
    var to: String
    var unit: String
    var summary: String

    func svg() -> String {
        let width = 600.0, height = 200.0, left = 48.0, right = 8.0, top = 10.0, bottom = 22.0
        let count = lines.map(\.values.count).max() ?? 0
        let highest = lines.flatMap { $0.values.compactMap { $0 } }.max() ?? 0
        let top_ = Self.niceCeiling(highest)
        let x: (Int) -> Double = { index in
            left + (count > 1 ? Double(index) / Double(count - 1) : 0) * (width - left - right)
        }
        let y: (Double) -> Double = { value in
            top + (1 - value / top_) * (height - top - bottom)
        }
        var svg = #"<svg class="chart" viewBox="0 0 600 200" role="img" aria-label="\#(Self.escape(summary))" xmlns="http://www.w3.org/2000/svg">"#
        svg += "<title>\(Self.escape(summary))</title>"
        for fraction in [0.0, 0.5, 1.0] {
            let value = top_ * fraction
            let at = y(value)
            svg += #"<line class="grid" x1="\#(left)" x2="\#(width - right)" y1="\#(at)" y2="\#(at)"/>"#
            svg += #"<text x="\#(left - 6)" y="\#(at + 4)" text-anchor="end">\#(Self.format(value))</text>"#
        }
        svg += #"<text x="\#(left)" y="\#(height - 6)">\#(Self.escape(from))</text>"#
        svg += #"<text x="\#(width - right)" y="\#(height - 6)" text-anchor="end">\#(Self.escape(to))</text>"#
        for (index, line) in lines.enumerated() {
            let colour = Self.palette[index % Self.palette.count]
            // A run of points without gaps is one polyline.
            var runs: [[String]] = [[]]
            for (i, value) in line.values.enumerated() {
                if let value {
                    runs[runs.count - 1].append("\(Self.round(x(i))),\(Self.round(y(value)))")
                } else if !runs[runs.count - 1].isEmpty {
                    runs.append([])
                }
            }
            for run in runs where !run.isEmpty {
                let dash = line.dashed ? #" stroke-dasharray="5 4""# : ""
                if run.count == 1 {
                    let point = run[0].split(separator: ",")
                    svg += #"<circle cx="\#(point[0])" cy="\#(point[1])" r="2.5" fill="\#(colour)"/>"#
                } else {
                    svg += #"<polyline fill="none" stroke="\#(colour)" stroke-width="2"\#(dash) points="\#(run.joined(separator: " "))"/>"#
                }
            }
        }
        svg += "</svg>"
        if lines.isEmpty {
            return svg + #"<p class="muted small">No data yet.</p>"#
        }
        svg += #"<ul class="legend">"#
        for (index, line) in lines.enumerated() {
            svg += #"<li><span class="swatch c\#(index % Self.palette.count)"></span>\#(Self.escape(line.name))\#(line.dashed ? " (dashed)" : "")</li>"#
        }
        return svg + "</ul>"
    }

    /// 1, 2 or 5 times a power of ten, at least `value` (and at least 1).
    static func niceCeiling(_ value: Double) -> Double {
        guard value > 1 else { return 1 }
        let power = pow(10, floor(log10(value)))
        for step in [1.0, 2.0, 5.0, 10.0] where step * power >= value { return step * power }
        return 10 * power
    }

    static func format(_ value: Double) -> String {
        if value >= 1000 { return "\(Int(value / 1000))k" }
        if value == value.rounded() { return "\(Int(value))" }
        return String(format: "%.1f", value)
    }

    private static func round(_ value: Double) -> String { String(format: "%.1f", value) }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}

extension ConsoleHistory {
    /// Deliveries per minute by outcome over the last hour, of one hub or of all.
    func deliveriesChart(hub: String?) -> ConsoleChart {
        let points = series()
        func totals(_ sample: Sample) -> [String: Double] {
            var sum: [String: Double] = [:]
            for (name, outcomes) in sample.deliveries where hub == nil || name == hub {
                for (outcome, value) in outcomes { sum[outcome, default: 0] += value }
            }
            return sum
        }
        let cumulative = points.map(totals)
        let outcomes = Set(cumulative.flatMap(\.keys)).sorted { ($0 == "Success" ? 0 : 1, $0) < ($1 == "Success" ? 0 : 1, $1) }
        var lines: [ConsoleChart.Line] = []
        var sent = 0.0
        for outcome in outcomes {
            var values: [Double?] = []
            for index in cumulative.indices.dropFirst() {
                let delta = max(0, (cumulative[index][outcome] ?? 0) - (cumulative[index - 1][outcome] ?? 0))
                let minutes = max(1.0 / 60, points[index].at.timeIntervalSince(points[index - 1].at) / 60)
                values.append(delta / minutes)
                sent += delta
            }
            lines.append(.init(name: outcome, values: values))
        }
        let summary = "Deliveries per minute by outcome over the last hour: \(Int(sent)) in all"
        return ConsoleChart(lines: lines, from: Self.label(points.first?.at), to: "now", unit: "per minute", summary: summary)
    }

    /// Median and 95th percentile of push-service requests per minute, per platform, in ms.
    func latencyChart() -> ConsoleChart {
        let points = series()
        let platforms = Set(points.flatMap { $0.latency.keys }).sorted()
        var lines: [ConsoleChart.Line] = []
        for platform in platforms {
            var medians: [Double?] = [], highs: [Double?] = []
            for index in points.indices.dropFirst() {
                let now = points[index].latency[platform] ?? [:], before = points[index - 1].latency[platform] ?? [:]
                let buckets = now.keys.sorted().map { bound in (bound, max(0, (now[bound] ?? 0) - (before[bound] ?? 0))) }
                medians.append(Self.quantile(0.5, buckets).map { $0 * 1000 })
                highs.append(Self.quantile(0.95, buckets).map { $0 * 1000 })
            }
            // Platforms with no request in the hour are left out.
            guard medians.contains(where: { $0 != nil }) else { continue }
            lines.append(.init(name: "\(platform) median", values: medians))
            lines.append(.init(name: "\(platform) p95", values: highs, dashed: true))
        }
        return ConsoleChart(
            lines: lines, from: Self.label(points.first?.at), to: "now", unit: "ms",
            summary: "Push-service latency per platform over the last hour, in milliseconds"
        )
    }

    /// The `q` quantile of cumulative histogram buckets (upper bound, count at most it),
    /// interpolated within its bucket; `nil` without requests.
    static func quantile(_ q: Double, _ buckets: [(Double, Double)]) -> Double? {
        guard let total = buckets.last?.1, total > 0 else { return nil }
        let rank = q * total
        var lower = 0.0, below = 0.0
        for (bound, count) in buckets {
            if count >= rank {
                guard bound.isFinite else { return lower }
                let inBucket = count - below
                return inBucket > 0 ? lower + (bound - lower) * (rank - below) / inBucket : bound
            }
            lower = bound.isFinite ? bound : lower
            below = count
        }
        return lower
    }

    private static func label(_ date: Date?) -> String {
        guard let date else { return "" }
        let seconds = Int(Date().timeIntervalSince(date).rounded())
        return seconds >= 60 ? "\(seconds / 60) min ago" : "\(seconds) s ago"
    }
}
