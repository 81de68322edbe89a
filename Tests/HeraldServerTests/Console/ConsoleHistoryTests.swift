import Foundation
import HeraldCore
import HeraldMetrics
import Testing

@testable import HeraldServer

/// The console's charts read the counters of `/metrics`: parsing the text format, per-minute
/// differences, quantiles from histogram buckets, and the SVG they make.
@Suite struct ConsoleHistoryTests {
    @Test func linesOfTheTextFormatAreParsed() throws {
        let (name, labels, value) = try #require(ConsoleHistory.parseLine(#"herald_deliveries_total{hub="shop",platform="apns",outcome="Success"} 42"#))
        #expect(name == "herald_deliveries_total")
        #expect(labels == ["hub": "shop", "platform": "apns", "outcome": "Success"])
        #expect(value == 42)
        let bare = try #require(ConsoleHistory.parseLine("herald_up 1"))
        #expect(bare.0 == "herald_up" && bare.1.isEmpty && bare.2 == 1)
        #expect(ConsoleHistory.parseLine("garbage") == nil)
    }

    @Test func quantilesInterpolateWithinTheirBucket() {
        // 100 requests: 50 at most 10 ms, 90 at most 20 ms, all at most 50 ms.
        let buckets: [(Double, Double)] = [(0.01, 50), (0.02, 90), (0.05, 100), (.infinity, 100)]
        #expect(ConsoleHistory.quantile(0.5, buckets) == 0.01)
        #expect(abs(ConsoleHistory.quantile(0.95, buckets)! - 0.035) < 1e-9)
        #expect(ConsoleHistory.quantile(0.5, [(0.01, 0), (.infinity, 0)]) == nil)
        // Beyond the last finite bound: that bound.
        #expect(ConsoleHistory.quantile(0.99, [(0.01, 1), (.infinity, 100)]) == 0.01)
    }

    @Test func deliveriesPerMinuteComeFromTheCounters() async throws {
        let metrics = HeraldMetrics()
        let history = ConsoleHistory(metrics: metrics, interval: .seconds(60))
        let start = Date()
        history.sample(at: start.addingTimeInterval(-120))
        var counts = OutcomeCounts()
        for _ in 0..<30 { counts.add(.success, platform: .apns) }
        for _ in 0..<6 { counts.add(.expiredChannel, platform: .apns) }
        metrics.hub("shop").deliveries(counts)
        metrics.hub("other").deliveries(counts)
        history.sample(at: start.addingTimeInterval(-60))
        let chart = history.deliveriesChart(hub: "shop")
        #expect(chart.lines.map(\.name) == ["Success", "ExpiredChannel"])
        #expect(chart.lines[0].values.compactMap { $0 }.contains(30))
        #expect(chart.lines[1].values.compactMap { $0 }.contains(6))
        let all = history.deliveriesChart(hub: nil)
        #expect(all.lines[0].values.compactMap { $0 }.contains(60))
        let svg = chart.svg()
        #expect(svg.hasPrefix("<svg") && svg.contains("polyline") && svg.contains("Success"))
        #expect(!svg.contains("style="), "the console's policy forbids inline styles")
    }

    @Test func niceScales() {
        #expect(ConsoleChart.niceCeiling(0) == 1)
        #expect(ConsoleChart.niceCeiling(7) == 10)
        #expect(ConsoleChart.niceCeiling(13) == 20)
        #expect(ConsoleChart.niceCeiling(4100) == 5000)
    }
}
