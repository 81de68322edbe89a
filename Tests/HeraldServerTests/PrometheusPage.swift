import Foundation

/// A page in the Prometheus text format, read back for tests: every sample by its metric
/// name and labels, and the `# TYPE` of every family.
struct PrometheusPage: CustomStringConvertible {
    struct Sample: Hashable {
        var name: String
        var labels: [String: String]
        var value: Double
    }

    let text: String
    private(set) var samples: [Sample] = []
    private(set) var types: [String: String] = [:]

    init(_ text: String) throws {
        self.text = text
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            if line.hasPrefix("# TYPE ") {
                let parts = line.dropFirst("# TYPE ".count).split(separator: " ")
                guard parts.count == 2 else { throw TestFailure("bad TYPE line: \(line)") }
                types[String(parts[0])] = String(parts[1])
                continue
            }
            if line.hasPrefix("#") { continue }
            samples.append(try Self.sample(line))
        }
    }

    /// `name{a="x",b="y"} 1.5` (label values here never hold an escaped quote or a comma).
    private static func sample(_ line: Substring) throws -> Sample {
        guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else {
            throw TestFailure("bad sample line: \(line)")
        }
        let series = line[..<space]
        guard let brace = series.firstIndex(of: "{") else { return Sample(name: String(series), labels: [:], value: value) }
        guard series.hasSuffix("}") else { throw TestFailure("bad sample line: \(line)") }
        var labels: [String: String] = [:]
        for pair in series[series.index(after: brace)..<series.index(before: series.endIndex)].split(separator: ",") {
            guard let equals = pair.firstIndex(of: "=") else { throw TestFailure("bad label in: \(line)") }
            var value = pair[pair.index(after: equals)...]
            guard value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 else { throw TestFailure("bad label in: \(line)") }
            value = value.dropFirst().dropLast()
            labels[String(pair[..<equals])] = String(value)
        }
        return Sample(name: String(series[..<brace]), labels: labels, value: value)
    }

    /// The value of the one sample with exactly these labels; 0 when there is none (a series
    /// that was never recorded).
    func value(_ name: String, _ labels: [String: String] = [:]) -> Double {
        samples.first { $0.name == name && $0.labels == labels }?.value ?? 0
    }

    /// Every sample of a metric name.
    func samples(named name: String) -> [Sample] { samples.filter { $0.name == name } }

    var description: String { text }
}
