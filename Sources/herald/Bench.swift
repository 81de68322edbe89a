import ArgumentParser
import Foundation
import HeraldCore
import HeraldHub
import HeraldPostgres
import HeraldStore
import Logging
import ServiceLifecycle

struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure fan-out, CPU per notification, upserts, installation PUTs and broadcasts on this machine, on SQLite and PostgreSQL.",
        discussion: """
            Build with `swift build -c release` and run `.build/release/herald bench`. The fan-out, upsert and \
            installation tests run Herald, its store and the APNs emulator in this process: the SQLite store in a \
            temporary directory and, with --database-url, the PostgreSQL store in a database of its own that the \
            bench creates on that server and drops at the end (the user needs the CREATEDB privilege). Then, for \
            APNs and FCM, a `herald serve` process of this binary on SQLite delivers a fan-out and a broadcast to \
            a `herald emulate` process: the node's own CPU time per notification is read from /proc, beside the \
            emulator's ceiling measured with h2load (Debian's nghttp2-client) in the same run, so the figures \
            read as ratios. With a database, one broadcast is also shared by 1, 2 and 3 node processes.
            Example:  herald bench --database-url postgres://herald@127.0.0.1/postgres
            """
    )

    @Option(help: "A PostgreSQL server (a libpq URL) to measure beside SQLite; the bench makes its own databases on it.")
    var databaseURL: String?

    @Option(help: "Devices holding the tag in the fan-out test.")
    var devices = 100_000

    @Option(help: "Upserts through the app backend's HTTP API.")
    var upserts = 30_000

    @Option(help: "Installation PUTs through the hub REST API.")
    var installations = 30_000

    @Option(
        help:
            "Sends accepted through the hub REST API, half of them under an Idempotency-Key, in eight pairs of rounds without and with a key (after one to warm up), to measure what keys cost (0 skips it)."
    )
    var sends = 32_000

    @Option(help: "Concurrent HTTP connections for the upsert, installation and send tests.")
    var connections = 32

    @Option(help: "Registrations in the broadcast delivered by a node process, on SQLite (0 skips it).")
    var broadcast = 1_000_000

    @Option(help: "The platforms whose fan-out and broadcast are measured in a node process, comma-separated (apns, fcm).")
    var platforms = "apns,fcm"

    @Option(help: "APNs devices of template sends and of native sends, compared in a node process in three alternating pairs (0 skips it).")
    var templateDevices = 50_000

    @Option(
        help:
            "APNs devices that receive a send twice in a node process, the second time each confirming it (receipts), to show what receipts cost (0 skips it).")
    var receiptDevices = 20_000

    @Option(
        help:
            "The herald binary whose `serve` is the measured node process (default: this one), to compare two builds in one run; the emulator and the rest stay this binary's."
    )
    var nodeBinary: String?

    @Option(help: "Registrations in the hub whose console pages are timed (0 skips it).")
    var consoleDevices = 1_000_000

    @Option(help: "Registrations in the broadcast shared by node processes, with --database-url (0 skips it).")
    var clusterDevices = 1_000_000

    @Option(help: "The numbers of node processes that share the broadcast, comma-separated.")
    var nodes = "1,2,3"

    @Option(
        help:
            "Limit each node process of the shared broadcast to this many cores (a cgroup cpu quota, which needs root), so that nodes added on one machine show what they add on machines of their own: e.g. 0.3. The emulator and PostgreSQL stay unlimited. The upserts and installation PUTs are then also sent to a node process so limited, on each store, with the load generator and PostgreSQL outside the limit, as on machines of their own."
    )
    var nodeCPU: Double?

    @Option(help: "Requests h2load sends to measure the emulator's ceiling (0 skips it).")
    var ceilingRequests = 200_000

    @Option(help: "Rounds of the SQLite fan-out with metrics and without, alternating, to measure what recording them costs (0 skips it).")
    var metricsRounds = 0

    @Flag(
        inversion: .prefixedNo,
        help:
            "Bring PostgreSQL's statistics up to date (ANALYZE) after writing the registrations of the broadcast shared by node processes, as Herald's own bulk loads do; --no-cluster-analyze delivers it on the stale statistics of a bulk load made by other means."
    )
    var clusterAnalyze = true

    func validate() throws {
        if let databaseURL {
            do {
                _ = try DatabaseURL(databaseURL)
            } catch {
                throw ValidationError("--database-url: \(error.message)")
            }
        }
        if let nodeCPU, !(0.01...64).contains(nodeCPU) {
            throw ValidationError("--node-cpu: give the cores each node may use, from 0.01 to 64, such as 0.3")
        }
        guard !nodeCounts.isEmpty, nodeCounts.allSatisfy({ (1...8).contains($0) }) else {
            throw ValidationError("--nodes: give node counts from 1 to 8, comma-separated, such as 1,2,3")
        }
        if let nodeBinary, !FileManager.default.isExecutableFile(atPath: nodeBinary) {
            throw ValidationError("--node-binary: \(nodeBinary) is not an executable file")
        }
        let names = platforms.split(separator: ",").map { $0.trimmingSpaces() }
        guard names.allSatisfy({ $0 == "apns" || $0 == "fcm" }) else {
            throw ValidationError("--platforms: give apns, fcm or both, comma-separated")
        }
    }

    var measuredPlatforms: [Platform] { platforms.split(separator: ",").compactMap { Platform(rawValue: $0.trimmingSpaces()) } }

    var nodeCounts: [Int] { nodes.split(separator: ",").compactMap { Int($0.trimmingSpaces()) } }

    func run() async throws {
        // With OTEL_EXPORTER_OTLP_ENDPOINT set the engine's spans are exported as `herald serve`
        // exports them, so that the fan-out measures what tracing costs.
        var logger = Logger(label: "bench")
        logger.logLevel = .error
        guard let tracing = try TracingBackend.bootstrap(logger: logger) else { return try await measure() }
        Self.say("Tracing: spans exported over OTLP/HTTP (OTEL_EXPORTER_OTLP_ENDPOINT is set)")
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await tracing.run() }
            try await measure()
            group.cancelAll()
        }
    }

    private func measure() async throws {
        var stores: [BenchStore] = [.sqlite]
        if let databaseURL { stores.append(.postgres(try DatabaseURL(databaseURL), text: databaseURL)) }
        let summary = await measure(stores)
        Self.say("\n" + summary.rendered())
        if !summary.failures.isEmpty { throw ExitCode.failure }
    }

    /// Every scenario on `stores`. It does not throw: the Swift 6.3.1 compiler crashes (signal
    /// 11, splitting the coroutine) on the release build of this function when it throws.
    private func measure(_ stores: [BenchStore]) async -> BenchSummary {
        Self.say(Self.machine())
        var logger = Logger(label: "bench")
        logger.logLevel = .error
        var summary = BenchSummary()

        // A scenario that fails is reported and the others still run: the table at the end
        // has what was measured, and says what failed.
        for store in stores {
            Self.say("\n== \(store.name) ==")
            if devices > 0,
                let fanOut = await summary.attempt("fan-out on \(store.name)", on: store, { try await Self.fanOut(store, devices: devices, logger: logger) })
            {
                summary.add("fan-out to \(devices.formatted()) APNs devices, one node", store, fanOut, unit: "/s", target: "≥ 16,667/s (1 million/min)")
            }
            if metricsRounds > 0, store == .sqlite {
                let cost = await summary.attempt("cost of the metrics") {
                    try await Self.metricsCost(devices: devices, rounds: metricsRounds, logger: logger)
                }
                summary.metricsCost = cost
            }
            if store == .sqlite {
                await measureNodeProcesses(into: &summary, logger: logger)
            }
            if upserts > 0,
                let upserted = await summary.attempt(
                    "registration upserts on \(store.name)", on: store,
                    {
                        try await Self.upserts(store, count: upserts, connections: connections, logger: logger)
                    })
            {
                summary.add("registration upserts, PUT /api/register/{id}", store, upserted, unit: "/s", target: "≥ 3,000/s")
            }
            if installations > 0,
                let installed = await summary.attempt(
                    "installation PUTs on \(store.name)", on: store,
                    {
                        try await Self.installationPuts(store, count: installations, connections: connections, logger: logger)
                    })
            {
                summary.add("installation PUTs, PUT /{hub}/installations/{id}", store, installed, unit: "/s", target: "≥ 3,000/s")
            }
            if let nodeCPU, upserts > 0 || installations > 0,
                let writes = await summary.attempt(
                    "writes to a node process on \(store.name)", on: store,
                    {
                        Self.say(String(format: "writes to a node process limited to %.2f of a core:", nodeCPU))
                        return try await Self.nodeWrites(
                            store, cores: nodeCPU, upserts: upserts, installations: installations, connections: connections, logger: logger)
                    })
            {
                let limited = String(format: "a node limited to %.2f core", writes.cores)
                if let rate = writes.upserts {
                    summary.add("upserts, \(limited)", store, rate.perSecond, unit: "/s", target: "PostgreSQL ≥ 0.9× SQLite")
                    summary.add("… the node's CPU per upsert", store, rate.nodeMicroseconds ?? 0, unit: " µs", target: "–")
                }
                if let rate = writes.installations {
                    summary.add("installation PUTs, \(limited)", store, rate.perSecond, unit: "/s", target: "PostgreSQL ≥ 0.9× SQLite")
                    summary.add("… the node's CPU per installation PUT", store, rate.nodeMicroseconds ?? 0, unit: " µs", target: "–")
                }
            }
            if sends > 0,
                let accepted = await summary.attempt(
                    "send acceptance on \(store.name)", on: store,
                    {
                        try await Self.sendAcceptance(store, count: sends, connections: connections, logger: logger)
                    })
            {
                summary.add("sends accepted, POST /{hub}/messages", store, accepted.plain, unit: "/s", target: "–")
                summary.add("… each under an Idempotency-Key", store, accepted.keyed, unit: "/s", target: "–")
                summary.add("… under a key / without (median of \(Self.acceptancePairs) pairs)", store, accepted.keyedShare * 100, unit: "%", target: "≥ 95%")
                summary.add("CPU per send accepted and delivered", store, accepted.plainCPU * 1e6, unit: " µs", target: "–")
                summary.add("… each under an Idempotency-Key (CPU)", store, accepted.keyedCPU * 1e6, unit: " µs", target: "≤ 105% of the row above")
            }
            if consoleDevices > 0,
                let measured = await summary.attempt(
                    "console pages on \(store.name)", on: store,
                    {
                        try await Self.consoleReads(store, devices: consoleDevices, logger: logger)
                    })
            {
                let (reference, timings) = measured
                summary.consoleLines.append(
                    String(
                        format: "Console pages over %@ registrations on %@ (median of 5; GET /health: %.1f ms):", consoleDevices.formatted(), store.name,
                        reference))
                for timing in timings {
                    summary.consoleLines.append(
                        String(format: "  %@: %.1f ms (%.0f× /health)", timing.what, timing.milliseconds, timing.milliseconds / max(reference, 0.01)))
                }
            }
        }
        if case .postgres(let server, let text)? = stores.last, clusterDevices > 0 {
            Self.say("\n== one broadcast shared by node processes on PostgreSQL ==")
            for count in nodeCounts {
                if let run = await summary.attempt(
                    "broadcast shared by \(count) node process\(count == 1 ? "" : "es")", on: stores.last,
                    {
                        try await Self.clusterBroadcast(
                            server: server, serverText: text, devices: clusterDevices, nodes: count, analyze: clusterAnalyze,
                            nodeCPU: nodeCPU, logger: logger)
                    })
                {
                    summary.cluster.append(run)
                }
            }
        }
        return summary
    }

    /// For each platform: the emulator's ceiling with h2load, then the fan-out and the broadcast
    /// delivered by a node process to an emulator process, with the node's CPU per notification.
    private func measureNodeProcesses(into summary: inout BenchSummary, logger: Logger) async {
        let node = nodeBinary.map { URL(fileURLWithPath: $0) } ?? NodeProcess.executable
        if let nodeBinary { Self.say("Node processes: \(nodeBinary) serve") }
        for platform in measuredPlatforms {
            Self.say("\n== \(platform.rawValue): a node process and an emulator process ==")
            if ceilingRequests > 0,
                let measured = await summary.attempt(
                    "\(platform.rawValue) emulator ceiling",
                    {
                        try await Self.emulatorCeiling(platform: platform, requests: ceilingRequests, logger: logger)
                    })
            {
                if let ceiling = measured {
                    summary.ceilings.append(ceiling)
                } else {
                    summary.missingCeiling = "Emulator ceilings: h2load not found (apt-get install nghttp2-client)"
                }
            }
            if devices > 0,
                let run = await summary.attempt(
                    "\(platform.rawValue) fan-out in a node process",
                    {
                        try await Self.nodeRun(platform: platform, devices: devices, broadcast: false, binary: node, logger: logger)
                    })
            {
                summary.nodeRuns.append(run)
            }
            if broadcast > 0,
                let run = await summary.attempt(
                    "\(platform.rawValue) broadcast in a node process",
                    {
                        try await Self.nodeRun(platform: platform, devices: broadcast, broadcast: true, binary: node, logger: logger)
                    })
            {
                summary.nodeRuns.append(run)
            }
            if platform == .apns, templateDevices > 0,
                let runs = await summary.attempt(
                    "apns template and native sends",
                    {
                        try await Self.templateRuns(devices: templateDevices, binary: node, logger: logger)
                    })
            {
                let median = runs.median
                summary.nodeRuns += [median.native, median.template]
                summary.templateRatios = runs.ratios
            }
            if platform == .apns, receiptDevices > 0,
                let runs = await summary.attempt(
                    "apns sends with and without receipts",
                    {
                        try await Self.receiptRuns(devices: receiptDevices, binary: node, logger: logger)
                    })
            {
                summary.nodeRuns += [runs.plain, runs.confirmed]
            }
        }
    }

    /// Prints a line of progress at once, also when the output goes to a file or a pipe.
    static func say(_ line: String) {
        print(line)
        fflush(nil)
    }
}

extension Bench {
    /// Creates the hub `bench` in `catalog`, with every platform's send budget at its highest
    /// (a billion a minute): the bench measures what a node can send, and FCM's default budget
    /// (600,000 a minute) would cap a node's FCM figures at 10,000 a second.
    static func createBenchHub(in catalog: HubCatalog) async throws -> HubDefinition {
        _ = try await catalog.create(name: "bench")
        let unlimited = try SendRate(perMinute: SendRate.maxPerMinute)
        return try await catalog.setSendRates(name: "bench", Dictionary(uniqueKeysWithValues: Platform.allCases.map { ($0, unlimited) }))
    }
}

/// Where a scenario keeps its data.
enum BenchStore: Equatable {
    case sqlite
    /// A server on which each scenario makes a database of its own; `text` is the URL as given
    /// (with its password, for the node processes' environment).
    case postgres(DatabaseURL, text: String)

    var name: String {
        switch self {
        case .sqlite: "SQLite"
        case .postgres: "PostgreSQL"
        }
    }
}

/// The figures of a run, printed together at the end as a table with ratios.
struct BenchSummary {
    struct Row {
        var what: String
        var unit: String
        var target: String
        var figures: [String: Double] = [:]
    }

    var rows: [Row] = []
    var metricsCost: String?
    var ceilings: [Bench.Ceiling] = []
    var missingCeiling: String?
    var nodeRuns: [Bench.NodeRun] = []
    /// Template / native node CPU per device of each pair of sends, in the order measured (the
    /// table shows the median pair's runs).
    var templateRatios: [Double] = []
    var consoleLines: [String] = []
    var cluster: [Bench.ClusterRun] = []
    /// What failed, each with its error; the rest was measured.
    var failures: [String] = []
    /// The stores that did not answer a step (by name): their other steps are not tried.
    var unanswered: Set<String> = []

    /// What `body` returns, or `nil` when it throws: then the failure is said at once and kept
    /// for the end of the table.
    mutating func attempt<T>(_ what: String, on store: BenchStore? = nil, _ body: () async throws -> T) async -> T? {
        // A database that did not answer one step is not waited for again at every other.
        if let store, unanswered.contains(store.name) {
            let failure = "\(what): not tried, since \(store.name) did not answer an earlier step"
            Bench.say("  SKIPPED: " + failure)
            failures.append(failure)
            return nil
        }
        do {
            return try await body()
        } catch {
            let failure = "\(what): \(error)"
            Bench.say("  FAILED: " + failure)
            failures.append(failure)
            if let store, (error as? StoreError)?.code == .databaseUnavailable { unanswered.insert(store.name) }
            return nil
        }
    }

    mutating func add(_ what: String, _ store: BenchStore, _ figure: Double, unit: String, target: String) {
        if let index = rows.firstIndex(where: { $0.what == what }) {
            rows[index].figures[store.name] = figure
        } else {
            rows.append(Row(what: what, unit: unit, target: target, figures: [store.name: figure]))
        }
    }

    func rendered() -> String {
        var lines = ["Results"]
        let hasPostgres = rows.contains { $0.figures["PostgreSQL"] != nil }
        let header =
            hasPostgres
            ? ["what", "SQLite", "PostgreSQL", "PostgreSQL / SQLite", "target"]
            : ["what", "SQLite", "target"]
        var table = [header]
        for row in rows {
            let sqlite = row.figures["SQLite"]
            let postgres = row.figures["PostgreSQL"]
            func format(_ value: Double?) -> String { value.map { "\(Int($0.rounded()).formatted())\(row.unit)" } ?? "–" }
            if hasPostgres {
                let ratio = sqlite.flatMap { s in postgres.map { String(format: "%.0f%%", $0 / s * 100) } } ?? "–"
                table.append([row.what, format(sqlite), format(postgres), ratio, row.target])
            } else {
                table.append([row.what, format(sqlite), row.target])
            }
        }
        lines += Self.aligned(table)
        if let metricsCost { lines.append(metricsCost) }
        lines += nodeLines()
        lines += consoleLines
        lines += clusterLines()
        // The same broadcast (FCM, as many devices, one node process and an emulator process)
        // on both stores; not with a CPU limit, which the node on SQLite does not have.
        if let postgres = cluster.first(where: { $0.nodes == 1 && $0.nodeCPU == nil }),
            let sqlite = nodeRuns.first(where: { $0.platform == .fcm && $0.kind == "broadcast" && $0.devices == postgres.devices })
        {
            lines.append(
                String(
                    format: "FCM broadcast to %@ devices, one node process: PostgreSQL %.1f s, SQLite %.1f s: %.2f× (target ≤ 1.15×)",
                    postgres.devices.formatted(), postgres.seconds, sqlite.seconds, postgres.seconds / sqlite.seconds
                ))
        }
        if !failures.isEmpty {
            lines.append("Not measured, because they failed (the rest above was):")
            lines += failures.map { "  " + $0 }
        }
        return lines.joined(separator: "\n")
    }

    /// The broadcast shared by node processes: each run's time against the 1-node time, what
    /// the nodes and PostgreSQL spent per notification, how idle the machine stayed, and what
    /// one PostgreSQL core can serve.
    func clusterLines() -> [String] {
        guard let first = cluster.first else { return [] }
        var lines: [String] = []
        if let quota = first.nodeCPU {
            lines.append(
                String(
                    format: "PostgreSQL broadcast shared by node processes, each node limited to %.2f of a core (PostgreSQL and the emulator unlimited):",
                    quota))
        } else {
            lines.append("PostgreSQL broadcast shared by node processes (PostgreSQL, the emulator and the nodes share this machine's cores):")
        }
        let baseline = cluster.first { $0.nodes == 1 }
        let targets = [2: "≤ 0.55×", 3: "≤ 0.40×"]
        for run in cluster {
            var ratio = ""
            if let baseline, run.nodes > 1 {
                let target = first.nodeCPU != nil ? targets[run.nodes].map { ", target \($0)" } ?? "" : ""
                ratio = String(format: ", %.2f× the 1-node time%@, speed-up %.2f×", run.seconds / baseline.seconds, target, baseline.seconds / run.seconds)
            }
            let postgres = run.postgresMicroseconds.map { String(format: ", PostgreSQL %.1f µs", $0) } ?? ""
            lines.append(
                String(
                    format:
                        "  %d node%@: %@ devices %@ in %.1f s (%@/s%@), %@ reached; CPU per notification: nodes %.1f µs%@; machine idle %.0f%%; peak RSS per node: %@ (target < 200 MB)",
                    run.nodes, run.nodes == 1 ? " " : "s", run.devices.formatted(), run.state, run.seconds,
                    Int(Double(run.devices) / run.seconds).formatted(), ratio, run.reached.formatted(), run.nodesMicroseconds, postgres,
                    run.machineIdle * 100, run.peakMegabytes.map { "\($0) MB" }.joined(separator: ", ")
                ))
        }
        // What the database bounds: one core of PostgreSQL per this many notifications a second,
        // and what a node at its quota adds, on machines of their own.
        let measured = cluster.compactMap(\.postgresMicroseconds).filter { $0 > 0 }
        if let postgres = measured.min(), let baseline {
            let perNode = Double(baseline.reached) / baseline.seconds
            let ceiling = 1_000_000 / postgres
            lines.append(
                String(
                    format:
                        "  one PostgreSQL core serves about %@ notifications/s (%.1f µs each); a node here delivers %@/s%@, so about %d such nodes fill one database core",
                    Int(ceiling).formatted(), postgres, Int(perNode).formatted(),
                    first.nodeCPU.map { String(format: " at %.2f of a core", $0) } ?? "", Int(ceiling / max(perNode, 1))
                ))
        }
        return lines
    }

    /// The node-process runs beside the emulators' ceilings: CPU per notification, the rate as a
    /// share of the ceiling, and FCM's cost per device against APNs'.
    func nodeLines() -> [String] {
        var lines: [String] = []
        if !ceilings.isEmpty {
            lines.append("Emulator ceilings (h2load → an emulator process, 4 connections × 100 streams):")
            for ceiling in ceilings {
                lines.append(
                    String(
                        format: "  %@: %@ req/s; h2load CPU %.1f µs per request, emulator %.1f µs", ceiling.platform.rawValue,
                        Int(ceiling.perSecond).formatted(), ceiling.h2loadMicroseconds, ceiling.emulatorMicroseconds))
            }
        }
        if let missingCeiling { lines.append(missingCeiling) }
        guard !nodeRuns.isEmpty else { return lines }
        lines.append(
            "One node process on SQLite delivering to an emulator process (CPU from /proc; the node, the emulator and h2load share this machine's cores):")
        var table = [["what", "devices", "state", "time", "rate", "of ceiling", "node CPU/notification", "emulator CPU", "node peak RSS"]]
        for run in nodeRuns {
            let ceiling = ceilings.first { $0.platform == run.platform }
            table.append([
                "\(run.platform.rawValue) \(run.kind)", run.devices.formatted(), run.state, String(format: "%.1f s", run.seconds),
                "\(Int(run.perSecond).formatted())/s", ceiling.map { String(format: "%.0f%%", run.perSecond / $0.perSecond * 100) } ?? "–",
                String(format: "%.1f µs", run.nodeMicroseconds), String(format: "%.1f µs", run.emulatorMicroseconds), "\(run.peakMegabytes) MB",
            ])
        }
        lines += Self.aligned(table).map { "  " + $0 }
        lines.append(
            "  targets: node CPU ≤ 35 µs per APNs notification; APNs fan-out ≥ 70% of the ceiling; FCM ≤ 1.5× APNs per device; broadcast peak RSS < 300 MB")
        if !templateRatios.isEmpty {
            let sorted = templateRatios.sorted()
            lines.append(
                String(
                    format: "  template / native node CPU per device, APNs: %.2f× (target ≤ 1.2×), the median of %d alternating pairs: %@",
                    sorted[(sorted.count - 1) / 2], sorted.count, templateRatios.map { String(format: "%.2f×", $0) }.joined(separator: ", ")))
        }
        if let plain = nodeRuns.first(where: { $0.kind == "send, no receipts" }),
            let confirmed = nodeRuns.first(where: { $0.kind == "send, every device confirms" })
        {
            lines.append(
                String(
                    format: "  receipts, APNs: node CPU %.1f µs per device when every device confirms, %.1f µs when none does (%.2f×): %.1f µs per receipt",
                    confirmed.nodeMicroseconds, plain.nodeMicroseconds, confirmed.nodeMicroseconds / plain.nodeMicroseconds,
                    confirmed.nodeMicroseconds - plain.nodeMicroseconds))
        }
        for kind in ["fan-out", "broadcast"] {
            if let apns = nodeRuns.first(where: { $0.platform == .apns && $0.kind == kind }),
                let fcm = nodeRuns.first(where: { $0.platform == .fcm && $0.kind == kind })
            {
                lines.append(String(format: "  FCM / APNs node CPU per device, %@: %.2f×", kind, fcm.nodeMicroseconds / apns.nodeMicroseconds))
            }
        }
        return lines
    }

    static func aligned(_ table: [[String]]) -> [String] {
        let widths = (0..<(table.first?.count ?? 0)).map { column in table.map { $0[column].count }.max() ?? 0 }
        return table.map { row in
            row.enumerated().map { column, cell in
                column == 0
                    ? cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
                    : String(repeating: " ", count: widths[column] - cell.count) + cell
            }.joined(separator: "  ")
        }
    }
}
