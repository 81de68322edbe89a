import Foundation
import HeraldMetrics
import HeraldTestSupport
import Testing

/// The Grafana dashboard (`deploy/grafana/herald.json`) and the Prometheus files
/// (`deploy/prometheus/`) speak of the metrics Herald exposes: every `herald_*` name in a query
/// is a family of ``HeraldMetrics`` (or a histogram's `_bucket`, `_sum` or `_count`), its label
/// matchers name that family's labels, and promtool accepts the configuration, the rules, their
/// unit tests and every query of the dashboard.
@Suite struct MonitoringFilesTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let dashboard = repository.appendingPathComponent("deploy/grafana/herald.json")
    static let prometheusDirectory = repository.appendingPathComponent("deploy/prometheus")

    /// Labels a query may match on beyond a family's own: the ones Prometheus adds at scrape
    /// time, and a histogram bucket's bound.
    static let scrapeLabels: Set<String> = ["job", "instance", "le"]

    @Test func theDashboardQueriesOnlyMetricsHeraldExposes() throws {
        let expressions = try Self.dashboardExpressions()
        #expect(expressions.count >= 20, "the dashboard's queries were not found: \(expressions)")
        let used = try Self.checkSelectors(in: expressions, source: "herald.json")
        // Every family is on the dashboard somewhere.
        let missing = Set(HeraldMetrics.families.map(\.name)).subtracting(used)
        #expect(missing.isEmpty, "families the dashboard does not show: \(missing.sorted())")
    }

    @Test func theDashboardHasItsVariables() throws {
        let json = try #require(
            JSONSerialization.jsonObject(with: Data(contentsOf: Self.dashboard)) as? [String: Any]
        )
        let templating = try #require(json["templating"] as? [String: Any])
        let variables = try #require(templating["list"] as? [[String: Any]])
        let byName = Dictionary(variables.map { ($0["name"] as? String ?? "", $0) }, uniquingKeysWith: { first, _ in first })
        #expect(byName["DS_PROMETHEUS"]?["type"] as? String == "datasource")
        #expect(byName["hub"]?["type"] as? String == "query")
        // Every panel and query reads the chosen data source.
        let text = try String(contentsOf: Self.dashboard, encoding: .utf8)
        #expect(!text.contains("\"uid\": \"prometheus\""), "a panel names a fixed data source")
    }

    @Test func theRulesQueryOnlyMetricsHeraldExposes() throws {
        let rules = try String(contentsOf: Self.prometheusDirectory.appendingPathComponent("herald-rules.yml"), encoding: .utf8)
        let expressions = Self.ruleExpressions(rules)
        #expect(expressions.count >= 3, "the rules' expressions were not found")
        let used = try Self.checkSelectors(in: expressions, source: "herald-rules.yml")
        for name in ["herald_deliveries_total", "herald_queue_oldest_waiting_age_seconds"] {
            #expect(used.contains(name), "no rule on \(name)")
        }
        #expect(expressions.contains { $0.contains("up{") }, "no rule on the nodes being up")
        // The rules' unit tests feed series of the same names.
        let tests = try String(contentsOf: Self.prometheusDirectory.appendingPathComponent("herald-rules.test.yml"), encoding: .utf8)
        let series = tests.split(separator: "\n").filter { $0.contains("series:") }.map(String.init)
        #expect(!series.isEmpty)
        _ = try Self.checkSelectors(in: series, source: "herald-rules.test.yml")
    }

    /// `promtool check config` on the example configuration (which loads the rules) with a
    /// token file in place, `promtool check rules`, `promtool test rules`, and every query of the
    /// dashboard, its Grafana variables replaced, as a recording rule that promtool parses.
    @Test func promtoolAcceptsTheFiles() async throws {
        guard let promtool = MetricsTests.promtool else {
            let ci = ProcessInfo.processInfo.environment["CI"].map { !$0.isEmpty && $0 != "false" } ?? false
            #expect(!ci, "CI must have promtool (Debian's prometheus package; .ci/run installs it)")
            if !ci { print("promtoolAcceptsTheFiles: promtool not found on PATH: skipped (apt-get install prometheus)") }
            return
        }
        let directory = try PythonInterop.temporaryDirectory("herald-prometheus")
        defer { try? FileManager.default.removeItem(at: directory) }
        func promtoolRun(_ arguments: [String]) async throws {
            let output = try await PythonInterop.run(program: URL(fileURLWithPath: promtool), arguments: arguments)
            #expect(output.status == 0, "promtool \(arguments.joined(separator: " ")):\n\(output.transcript)")
        }

        // The configuration names a token file that exists only on a Prometheus server.
        let tokenFile = directory.appendingPathComponent("herald-metrics-token")
        try Data("secret\n".utf8).write(to: tokenFile)
        let configuration = try String(contentsOf: Self.prometheusDirectory.appendingPathComponent("prometheus.yml"), encoding: .utf8)
        #expect(configuration.contains("/etc/prometheus/herald-metrics-token"))
        try configuration.replacingOccurrences(of: "/etc/prometheus/herald-metrics-token", with: tokenFile.path)
            .write(to: directory.appendingPathComponent("prometheus.yml"), atomically: true, encoding: .utf8)
        for file in ["herald-rules.yml", "herald-rules.test.yml"] {
            try FileManager.default.copyItem(
                at: Self.prometheusDirectory.appendingPathComponent(file), to: directory.appendingPathComponent(file)
            )
        }
        try await promtoolRun(["check", "config", directory.appendingPathComponent("prometheus.yml").path])
        try await promtoolRun(["check", "rules", directory.appendingPathComponent("herald-rules.yml").path])
        try await promtoolRun(["test", "rules", directory.appendingPathComponent("herald-rules.test.yml").path])

        // The dashboard's queries as recording rules: JSON strings are YAML strings, but for
        // JSON's escaped slash.
        let encoder = JSONEncoder()
        encoder.outputFormatting = .withoutEscapingSlashes
        var lines = ["groups:", "  - name: dashboard", "    rules:"]
        for (index, expression) in try Self.dashboardExpressions().enumerated() {
            let plain = expression.replacingOccurrences(of: "$__rate_interval", with: "5m")
                .replacingOccurrences(of: "$__range", with: "1h")
                .replacingOccurrences(of: "$hub", with: ".*")
                .replacingOccurrences(of: "$job", with: "herald")
            let quoted = String(decoding: try encoder.encode(plain), as: UTF8.self)
            lines += ["      - record: herald_dashboard:query\(index)", "        expr: \(quoted)"]
        }
        let queries = directory.appendingPathComponent("dashboard-queries.yml")
        try (lines.joined(separator: "\n") + "\n").write(to: queries, atomically: true, encoding: .utf8)
        try await promtoolRun(["check", "rules", queries.path])
    }

    /// The extraction finds names and labels as intended, and refuses what Herald does not expose.
    @Test func theCheckRefusesAnUnknownNameOrLabel() throws {
        #expect(throws: (any Error).self) { try Self.checkSelectors(in: ["rate(herald_deliveries_totals[5m])"], source: "t") }
        #expect(throws: (any Error).self) { try Self.checkSelectors(in: ["herald_registrations_bucket"], source: "t") }
        #expect(throws: (any Error).self) { try Self.checkSelectors(in: [#"herald_push_requests_total{hub="a"}"#], source: "t") }
        let used = try Self.checkSelectors(
            in: [#"histogram_quantile(0.9, sum by (le) (rate(herald_push_request_duration_seconds_bucket{platform=~"apns", instance!=""}[5m])))"#],
            source: "t"
        )
        #expect(used == ["herald_push_request_duration_seconds"])
        #expect(
            Self.ruleExpressions(
                "      - alert: A\n        expr: |\n          sum(x)\n          / 2\n        for: 1m\n      - record: b\n        expr: up == 0\n")
                == ["sum(x)\n/ 2", "up == 0"]
        )
    }

    // MARK: Reading the files

    /// Every `expr` string of the dashboard, panels and rows at any depth.
    static func dashboardExpressions() throws -> [String] {
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: dashboard))
        var found: [String] = []
        func walk(_ value: Any) {
            if let object = value as? [String: Any] {
                for (key, inner) in object {
                    if key == "expr", let text = inner as? String { found.append(text) } else { walk(inner) }
                }
            } else if let array = value as? [Any] {
                array.forEach(walk)
            }
        }
        walk(json)
        return found
    }

    /// The `expr:` values of a rules file: one line, or an indented block after `expr: |`.
    static func ruleExpressions(_ text: String) -> [String] {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var expressions: [String] = []
        var index = 0
        while index < lines.count {
            let line = lines[index]
            index += 1
            guard let range = line.range(of: "expr:"), line[..<range.lowerBound].allSatisfy({ $0 == " " }) else { continue }
            let rest = line[range.upperBound...].trimmingCharacters(in: .whitespaces)
            guard rest.hasPrefix("|") || rest.hasPrefix(">") else {
                expressions.append(rest)
                continue
            }
            let indent = line.prefix { $0 == " " }.count
            var block: [String] = []
            while index < lines.count {
                let next = lines[index]
                let nextIndent = next.prefix { $0 == " " }.count
                guard next.trimmingCharacters(in: .whitespaces).isEmpty || nextIndent > indent else { break }
                block.append(next.trimmingCharacters(in: .whitespaces))
                index += 1
            }
            expressions.append(block.joined(separator: "\n").trimmingCharacters(in: .whitespacesAndNewlines))
        }
        return expressions
    }

    struct UnknownMetric: Error, CustomStringConvertible {
        var description: String
    }

    /// Checks every `herald_*` name in `expressions` against the families (a histogram's may end
    /// in `_bucket`, `_sum` or `_count`) and the labels of its matchers (`name{label="…"}`)
    /// against the family's; returns the families used.
    @discardableResult
    static func checkSelectors(in expressions: [String], source: String) throws -> Set<String> {
        let families = Dictionary(uniqueKeysWithValues: HeraldMetrics.families.map { ($0.name, $0) })
        let name = /\bherald_[A-Za-z0-9_]+/
        let matcher = /([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)\s*"/
        var used: Set<String> = []
        for expression in expressions {
            for match in expression.matches(of: name) {
                let text = String(match.output)
                var family = families[text]
                if family == nil {
                    for suffix in ["_bucket", "_sum", "_count"] where text.hasSuffix(suffix) {
                        if let histogram = families[String(text.dropLast(suffix.count))], histogram.kind == .histogram {
                            family = histogram
                        }
                    }
                }
                guard let family else {
                    throw UnknownMetric(description: "\(source): \(text) is not a metric Herald exposes, in: \(expression)")
                }
                used.insert(family.name)
                // The label matchers right after the name.
                let after = expression[match.range.upperBound...]
                guard after.first == "{", let close = after.firstIndex(of: "}") else { continue }
                let selector = after[after.startIndex..<close]
                for label in selector.matches(of: matcher).map({ String($0.output.1) }) {
                    guard family.labels.contains(label) || scrapeLabels.contains(label) else {
                        throw UnknownMetric(description: "\(source): \(family.name) has no label \(label), in: \(expression)")
                    }
                }
            }
        }
        return used
    }
}
