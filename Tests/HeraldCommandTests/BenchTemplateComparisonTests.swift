import HeraldCore
import Testing

@testable import herald

/// The bench's template sends against native ones: each pair gives a ratio, and the pair with
/// the median ratio is the one its table shows.
@Suite struct BenchTemplateComparisonTests {
    /// A run of `kind` to 1,000 devices that cost the node `microseconds` per device.
    static func run(_ kind: String, _ microseconds: Double) -> Bench.NodeRun {
        Bench.NodeRun(
            platform: .apns, kind: kind, devices: 1_000, state: "Completed", seconds: 1, reached: 1_000,
            nodeCPUSeconds: microseconds * 1_000 / 1_000_000, emulatorCPUSeconds: 0, peakMegabytes: 0, firstDevice: nil, lastDevice: nil
        )
    }

    @Test func theMedianPairIsShownAndEveryRatioKept() {
        let comparison = Bench.TemplateComparison(pairs: [
            (Self.run("native send", 20), Self.run("template send", 26)),  // 1.3×
            (Self.run("native send", 25), Self.run("template send", 25)),  // 1.0×
            (Self.run("native send", 20), Self.run("template send", 22)),  // 1.1×
        ])
        let ratios = comparison.ratios
        #expect(ratios.count == 3)
        #expect(abs(ratios[0] - 1.3) < 1e-9 && abs(ratios[1] - 1.0) < 1e-9 && abs(ratios[2] - 1.1) < 1e-9)
        let median = comparison.median
        #expect(abs(median.ratio - 1.1) < 1e-9)
        #expect(median.native.nodeMicroseconds == 20 && median.template.nodeMicroseconds == 22)
    }

    @Test func ofTwoPairsTheLowerMiddleOneIsShown() {
        let comparison = Bench.TemplateComparison(pairs: [
            (Self.run("native send", 20), Self.run("template send", 30)),  // 1.5×
            (Self.run("native send", 20), Self.run("template send", 24)),  // 1.2×
        ])
        #expect(abs(comparison.median.ratio - 1.2) < 1e-9)
    }
}
