import Foundation
import HeraldCore
import HeraldMetrics
import Logging
public import ServiceLifecycle
import Synchronization

/// The last hour of this node's delivery counters, for the console's charts: a service that
/// reads the same families `GET /metrics` serves, every `interval`, and keeps the samples.
///
/// It keeps cumulative values only (deliveries per hub and outcome, the push-service latency
/// histogram's buckets per platform); a chart takes differences between samples a minute apart.
public final class ConsoleHistory: Service, Sendable {
    struct Sample: Sendable {
        var at: Date
        /// hub → outcome → deliveries so far.
        var deliveries: [String: [String: Double]]
        /// platform → upper bound → requests at most that long so far (cumulative buckets).
        var latency: [String: [Double: Double]]
    }

    let metrics: HeraldMetrics
    let interval: Duration
    let started = Date()
    private let samples = Mutex<[Sample]>([])
    /// Samples kept: an hour and a minute.
    private var capacity: Int { Int((3660.0 / interval.seconds).rounded(.up)) + 1 }

    init(metrics: HeraldMetrics, interval: Duration = .seconds(15)) {
        self.metrics = metrics
        self.interval = interval
    }

    public func run() async throws {
        // Ends at graceful shutdown (the sleep is cancelled then).
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                self.sample()
                try await Task.sleep(for: self.interval)
            }
        }
    }

    /// Reads the counters now.
    func sample(at now: Date = Date()) {
        let parsed = Self.parse(String(decoding: metrics.emit(), as: UTF8.self), at: now)
        let capacity = self.capacity
        samples.withLock { samples in
            samples.append(parsed)
            if samples.count > capacity { samples.removeFirst(samples.count - capacity) }
        }
    }

    /// About 60 evenly spaced samples from an hour ago (or from the first sample, when this
    /// node started less than an hour ago) until now: the latest sample at or before each
    /// moment, dated at that moment; oldest first.
    func series(minutes: Int = 60, now: Date = Date()) -> [Sample] {
        let all = samples.withLock { $0 }
        guard let first = all.first else { return [] }
        let start = max(now.addingTimeInterval(-Double(minutes) * 60), first.at)
        let span = now.timeIntervalSince(start)
        let step = max(interval.seconds, span / Double(minutes))
        var picked: [Sample] = []
        var moment = start
        while true {
            if let sample = all.last(where: { $0.at <= moment }) {
                var pinned = sample
                pinned.at = moment
                picked.append(pinned)
            }
            if moment >= now { break }
            moment = min(now, moment.addingTimeInterval(step))
        }
        return picked
    }

    /// The families the charts read, out of the Prometheus text format.
    static func parse(_ text: String, at: Date) -> Sample {
        var sample = Sample(at: at, deliveries: [:], latency: [:])
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let (name, labels, value) = parseLine(line) else { continue }
            switch name {
            case "herald_deliveries_total":
                guard let hub = labels["hub"], let outcome = labels["outcome"] else { continue }
                sample.deliveries[hub, default: [:]][outcome, default: 0] += value
            case "herald_push_request_duration_seconds_bucket":
                guard let platform = labels["platform"], let le = labels["le"] else { continue }
                let bound = le == "+Inf" ? Double.infinity : Double(le) ?? .nan
                guard !bound.isNaN else { continue }
                sample.latency[platform, default: [:]][bound, default: 0] += value
            default:
                continue
            }
        }
        return sample
    }

    /// `name{a="x",b="y"} value`, with label values as Herald's families have them (no
    /// escaped quotes).
    static func parseLine(_ line: Substring) -> (String, [String: String], Double)? {
        guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { return nil }
        let series = line[..<space]
        guard let brace = series.firstIndex(of: "{") else { return (String(series), [:], value) }
        var labels: [String: String] = [:]
        let body = series[series.index(after: brace)...].dropLast()
        var rest = body[...]
        while let equals = rest.firstIndex(of: "=") {
            let key = rest[..<equals].trimmingCharacters(in: CharacterSet(charactersIn: ", "))
            let afterQuote = rest.index(equals, offsetBy: 2, limitedBy: rest.endIndex) ?? rest.endIndex
            guard afterQuote <= rest.endIndex, let close = rest[afterQuote...].firstIndex(of: "\"") else { break }
            labels[key] = String(rest[afterQuote..<close])
            rest = rest[rest.index(after: close)...]
        }
        return (String(series[..<brace]), labels, value)
    }
}
