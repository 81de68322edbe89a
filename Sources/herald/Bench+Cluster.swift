import ArgumentParser
import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldHub
import HeraldHubWire
import HeraldPostgres
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL

#if canImport(Glibc)
import Glibc
#endif

/// One broadcast shared by node processes: `herald emulate` and `herald serve` processes of
/// this binary on a PostgreSQL database of their own.
extension Bench {
    struct ClusterRun {
        var nodes: Int
        var devices: Int
        var state: String
        var seconds: Double
        var reached: Int
        var peakMegabytes: [Int]
        /// Each node's CPU quota, in cores (`nil`: none).
        var nodeCPU: Double?
        /// The nodes' CPU time together, from the send until the broadcast finished.
        var nodesCPUSeconds: Double
        /// PostgreSQL's CPU time over the same span, when it runs on this machine.
        var postgresCPUSeconds: Double?
        /// The share of the machine's processor time that was idle over the same span.
        var machineIdle: Double

        var nodesMicroseconds: Double { nodesCPUSeconds / Double(max(reached, 1)) * 1_000_000 }
        var postgresMicroseconds: Double? { postgresCPUSeconds.map { $0 / Double(max(reached, 1)) * 1_000_000 } }
    }

    /// Writes `devices` FCM registrations into a new database (and, with `analyze`, brings its
    /// statistics up to date), starts `herald emulate` and `nodes` nodes on it, broadcasts
    /// through the first node, and measures the time until the broadcast is finished, each
    /// node's peak resident memory, the CPU time of the nodes and of PostgreSQL, and how idle the
    /// machine was. With `nodeCPU`, each node runs in a cgroup of its own limited to that many
    /// cores.
    static func clusterBroadcast(
        server: DatabaseURL, serverText: String, devices: Int, nodes count: Int, analyze: Bool = true, nodeCPU: Double? = nil,
        logger: Logger
    ) async throws -> ClusterRun {
        try await PostgresDatabase.withScratchDatabase(on: server, prefix: "herald_bench_cluster", logger: logger) { url in
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-bench-cluster-\(UUID().uuidString.prefix(8))").path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let databaseText = try scratchURLText(serverText, database: url.database)

            let hub = try await PostgresDatabase.with(url: url, maximumConnections: 1, logger: logger) { database in
                let hub = try await createBenchHub(in: HubCatalog(storage: database))
                let started = ContinuousClock.now
                say("\(count) node\(count == 1 ? "" : "s"): writing \(devices.formatted()) FCM registrations…")
                try await writeRegistrations(devices, into: database)
                say(String(format: "  written in %.1f s", (ContinuousClock.now - started).seconds))
                if analyze {
                    let analyzing = ContinuousClock.now
                    try await database.analyze(["registrations", "registration_tags"])
                    say(String(format: "  statistics brought up to date (ANALYZE) in %.1f s", (ContinuousClock.now - analyzing).seconds))
                } else {
                    say("  statistics left as the bulk load left them (--no-cluster-analyze)")
                }
                return hub
            }
            guard let rule = hub.rule(named: SharedAccessRule.defaultFullRuleName) else {
                throw ValidationError("the new hub has no \(SharedAccessRule.defaultFullRuleName) rule")
            }

            let emulator = try await EmulatorProcess.start(directory: directory)
            defer { emulator.process.stop() }
            let settings = emulator.settings
            var nodes: [NodeProcess] = []
            var quotas: [CPUQuota] = []
            defer {
                for node in nodes { node.stop() }
                for quota in quotas { quota.remove() }
            }
            for index in 1...count {
                let node = try NodeProcess.node(
                    name: "node\(index)", directory: directory, settings: settings, databaseURL: databaseText,
                    secureKeyFrom: nodes.first.map { "\(directory)/\($0.name)/keys/secure-payload.key" }
                )
                nodes.append(node)
                if let nodeCPU {
                    let quota = try CPUQuota.make(name: "herald-bench-\(getpid())-\(node.name)", cores: nodeCPU)
                    quotas.append(quota)
                    try quota.add(pid: node.pid)
                }
                try await node.waitUntilSettled()
            }
            let limit = nodeCPU.map { String(format: ", each limited to %.2f of a core (cgroup cpu quota)", $0) } ?? ""
            say("  \(count) node\(count == 1 ? "" : "s") answer\(limit); broadcasting through node1…")

            let http = emulator.client()
            do {
                let base = "http://127.0.0.1:\(nodes[0].port)"
                let signature = SharedAccessSignature.make(
                    resource: base + "/bench", keyName: rule.name, key: rule.primaryKey, expiry: Date().addingTimeInterval(7200)
                )
                let endpoint = try emulator.endpoint(.fcm)
                let nodesBefore = try nodes.reduce(0) { try $0 + cpuSeconds(of: $1.pid) }
                let postgresBefore = PostgresCPU.seconds(database: url.database), machineBefore = MachineCPU.now()
                let started = ContinuousClock.now, startedAt = Date()
                let id = try await sendNotification(http, base: base, signature: signature, platform: .fcm, tag: nil)
                let finished = try await waitUntilFinished(
                    http, base: base, id: id, signature: signature, endpoint: endpoint, devices: devices, pids: nodes.map(\.pid))
                let seconds = (ContinuousClock.now - started).seconds
                let nodesCPU = try nodes.reduce(0) { try $0 + cpuSeconds(of: $1.pid) } - nodesBefore
                let postgresCPU = postgresBefore.flatMap { before in PostgresCPU.seconds(database: url.database).map { $0 - before } }
                let idle = MachineCPU.now().idleShare(since: machineBefore)
                let accepted = try await emulatorStats(http, endpoint: endpoint, since: startedAt)
                try await http.shutdown()
                say(
                    String(
                        format: "  %@ in %.1f s, %@ devices reached; the emulator accepted the first send after %.2f s and the last after %.2f s",
                        finished.state, seconds, finished.reached.formatted(), accepted.firstAccepted(after: startedAt) ?? .nan,
                        accepted.lastAccepted(after: startedAt) ?? .nan))
                return ClusterRun(
                    nodes: count, devices: devices, state: finished.state, seconds: seconds, reached: finished.reached,
                    peakMegabytes: finished.peakMegabytes, nodeCPU: nodeCPU, nodesCPUSeconds: nodesCPU,
                    postgresCPUSeconds: postgresCPU, machineIdle: idle)
            } catch {
                try? await http.shutdown()
                throw error
            }
        }
    }

    /// `--database-url` as given (with its password, for node processes' environment), naming
    /// the bench's scratch database `database` instead of the server's.
    static func scratchURLText(_ serverText: String, database: String) throws -> String {
        guard var text = URLComponents(string: serverText) else { throw ValidationError("--database-url is not a URL") }
        text.path = "/" + database
        return text.string ?? serverText
    }

    /// Rows per statement of ``writeRegistrations(_:into:)``: each statement fires the tag
    /// trigger once a row, and must finish well within the deadline of a statement (20 s) on a
    /// slow machine (about 1.5 s here).
    static let registrationsPerStatement = 50_000

    /// Writes FCM registrations `reg-000000001`… of the hub `bench`, untagged, a batch at a time,
    /// with progress on standard error.
    static func writeRegistrations(_ devices: Int, into database: PostgresDatabase) async throws {
        let progress = ProgressReporter(title: "  written", total: devices)
        defer { progress.finish() }
        var next = 1
        while next <= devices {
            let last = min(devices, next + registrationsPerStatement - 1)
            try await database.execute(
                unsafeSQL: """
                    INSERT INTO herald.registrations (hub, id, platform, handle, version, created_at, updated_at)
                    SELECT 'bench', 'reg-' || lpad(g::text, 9, '0'), 'fcm', 'bench:' || md5(g::text), 1, 0, 0
                    FROM generate_series(\(next), \(last)) AS g
                    """)
            progress.update(done: last)
            next = last + 1
        }
    }

    /// Sends a notification of `platform`'s native format to the devices of the hub `bench` that
    /// hold `tag` (every device for `nil`); its notification id.
    static func sendNotification(_ http: HTTPClient, base: String, signature: String, platform: Platform, tag: String?) async throws -> String {
        switch platform {
        case .apns:
            try await postMessage(http, base: base, signature: signature, format: "apple", tag: tag, body: #"{"aps":{"alert":"Benchmark"}}"#)
        default:
            try await postMessage(
                http, base: base, signature: signature, format: "fcmv1", tag: tag,
                body: #"{"message":{"notification":{"title":"Benchmark","body":"one broadcast"}}}"#)
        }
    }

    /// `POST /bench/messages` with `body` in `format` (`ServiceBusNotification-Format`) to the
    /// devices holding `tag` (every device for `nil`); the notification's id.
    static func postMessage(_ http: HTTPClient, base: String, signature: String, format: String, tag: String?, body: String) async throws -> String {
        var request = HTTPClientRequest(url: base + "/bench/messages?api-version=2020-06")
        request.method = .POST
        request.headers.add(name: "authorization", value: signature)
        request.headers.add(name: "content-type", value: "application/json;charset=utf-8")
        request.headers.add(name: "ServiceBusNotification-Format", value: format)
        if let tag { request.headers.add(name: "ServiceBusNotification-Tags", value: tag) }
        request.body = .bytes(ByteBuffer(string: body))
        let response = try await http.execute(request, timeout: .seconds(60))
        let answer = try await response.body.collect(upTo: 1 << 16)
        guard response.status == .created, let location = response.headers.first(name: "location"),
            let path = URL(string: location)?.path, let id = path.split(separator: "/").last
        else {
            throw ValidationError("the send answered \(response.status.code): \(String(buffer: answer))")
        }
        return String(id)
    }

    /// Polls notification `id` until it is no longer enqueued or processing, with the devices
    /// the emulator at `endpoint` reached as progress and the peak memory of the processes `pids`;
    /// its final state, the devices reached, and each process's peak resident memory.
    static func waitUntilFinished(
        _ http: HTTPClient, base: String, id: String, signature: String, endpoint: String, devices: Int, pids: [Int32]
    ) async throws -> (state: String, reached: Int, peakMegabytes: [Int]) {
        let started = ContinuousClock.now
        let peaks = PeakSampler(pids: pids)
        var state = "Enqueued"
        // The devices reached, from the emulator's count, once a second. The state is asked
        // for every 50 ms: a run of a few seconds is then timed to within a few percent.
        let progress = ProgressReporter(title: "  reached", total: devices)
        defer { progress.finish() }
        var polls = 0
        while ["Enqueued", "Processing"].contains(state) {
            try await Task.sleep(for: .milliseconds(50))
            state = try await notificationState(http, base: base, id: id, signature: signature)
            polls += 1
            if polls % 4 == 0 { peaks.sample() }
            if polls % 20 == 0 { progress.update(done: try await reachedDevices(http, endpoint: endpoint)) }
            if ContinuousClock.now - started > .seconds(3600) { throw ValidationError("the notification was not finished within an hour") }
        }
        peaks.sample()
        let reached = try await reachedDevices(http, endpoint: endpoint)
        progress.update(done: reached)
        return (state, reached, peaks.peaks)
    }

    /// The notification's `State`, from the hub API's notification details.
    static func notificationState(_ http: HTTPClient, base: String, id: String, signature: String) async throws -> String {
        var request = HTTPClientRequest(url: base + "/bench/messages/\(id)?api-version=2020-06")
        request.headers.add(name: "authorization", value: signature)
        let response = try await http.execute(request, timeout: .seconds(60))
        let body = String(buffer: try await response.body.collect(upTo: 1 << 20))
        guard let range = body.range(of: #"<State>[A-Za-z]+</State>"#, options: .regularExpression) else {
            throw ValidationError("the notification's details answered \(response.status.code): \(body.prefix(300))")
        }
        return String(body[range].dropFirst(7).dropLast(8))
    }

    /// What the emulator at `endpoint` counts, from its control API (`GET /_emulator/stats`).
    struct EmulatorStats: Decodable {
        /// The sends it accepted, a device's repeats included.
        var accepted: Int
        /// The devices it reached.
        var devices: Int
        /// The receipts its devices posted, and the posts that failed.
        var receiptsConfirmed: Int
        var receiptsFailed: Int
        /// Asked with a moment: when the first and the last send after it were accepted (ms
        /// since 1970).
        var firstAcceptedSince: Int64?
        var lastAcceptedSince: Int64?

        /// Seconds from `start` (the moment the stats were asked with) until the first and the
        /// last send the emulator accepted after it.
        func firstAccepted(after start: Date) -> Double? { Self.seconds(from: start, to: firstAcceptedSince) }
        func lastAccepted(after start: Date) -> Double? { Self.seconds(from: start, to: lastAcceptedSince) }

        private static func seconds(from start: Date, to milliseconds: Int64?) -> Double? {
            milliseconds.map { Double($0) / 1000 - start.timeIntervalSince1970 }
        }
    }

    /// What the emulator at `endpoint` counts; with `since`, also when it accepted its first and
    /// last send after that moment.
    static func emulatorStats(_ http: HTTPClient, endpoint: String, since: Date? = nil) async throws -> EmulatorStats {
        let query = since.map { "?since=\(Int64(($0.timeIntervalSince1970 * 1000).rounded()))" } ?? ""
        let response = try await http.execute(HTTPClientRequest(url: endpoint + "/_emulator/stats" + query), timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 16)
        return try JSONDecoder().decode(EmulatorStats.self, from: Data(body.readableBytesView))
    }

    /// The devices the emulator at `endpoint` reached.
    static func reachedDevices(_ http: HTTPClient, endpoint: String) async throws -> Int {
        try await emulatorStats(http, endpoint: endpoint).devices
    }

    /// The peak resident memory of processes, read from `/proc` (`VmHWM`) while they run.
    final class PeakSampler {
        let pids: [Int32]
        private(set) var peaks: [Int]

        init(pids: [Int32]) {
            self.pids = pids
            self.peaks = pids.map { _ in 0 }
        }

        func sample() {
            for (index, pid) in pids.enumerated() {
                peaks[index] = max(peaks[index], Bench.residentMegabytes(statusFile: "/proc/\(pid)/status").peak)
            }
        }
    }
}

/// A `herald emulate` or `herald serve` process of this binary, its output in a log file.
struct NodeProcess {
    let name: String
    let port: Int
    let process: Process
    let log: String

    var pid: Int32 { process.processIdentifier }

    /// This binary.
    static var executable: URL {
        URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0])
    }

    static func emulator(directory: String) throws -> NodeProcess {
        try start(
            name: "emulate", port: 0, directory: directory,
            arguments: ["emulate", "--directory", directory + "/emulator", "--open-registry", "--inbox", "1", "--log-level", "warning"],
            environment: ProcessInfo.processInfo.environment
        )
    }

    /// A node (`herald serve` of `binary`) with a data directory of its own, on a free port, TLS
    /// off, on the PostgreSQL database `databaseURL` or (`nil`) SQLite in its data directory;
    /// `secureKeyFrom` is the secure-payload key file the first node made, which the others must
    /// share.
    static func node(
        name: String, directory: String, settings: [String: String], databaseURL: String?, secureKeyFrom: String?,
        binary: URL = executable
    ) throws -> NodeProcess {
        let data = "\(directory)/\(name)"
        if let secureKeyFrom {
            try FileManager.default.createDirectory(atPath: data + "/keys", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try FileManager.default.copyItem(atPath: secureKeyFrom, toPath: data + "/keys/secure-payload.key")
        }
        let port = try freePort()
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("HERALD_") }
        environment.merge(settings) { _, new in new }
        environment.merge([
            "HERALD_DATA_DIR": data, "HERALD_PORT": "\(port)", "HERALD_TLS_PORT": "0", "HERALD_LOG_LEVEL": "warning",
        ]) { _, new in new }
        if let databaseURL { environment["HERALD_DATABASE_URL"] = databaseURL }
        return try start(name: name, port: port, directory: directory, binary: binary, arguments: ["serve"], environment: environment)
    }

    private static func start(
        name: String, port: Int, directory: String, binary: URL = executable, arguments: [String], environment: [String: String]
    ) throws -> NodeProcess {
        let log = "\(directory)/\(name).log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        process.environment = environment
        process.standardOutput = output
        process.standardError = output
        try process.run()
        return NodeProcess(name: name, port: port, process: process, log: log)
    }

    /// The settings `herald emulate` writes once its emulators listen.
    func waitForSettings(file: String) async throws -> [String: String] {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            try checkRunning()
            if let text = try? String(contentsOfFile: file, encoding: .utf8), text.hasSuffix("\n") {
                var settings: [String: String] = [:]
                for line in text.split(separator: "\n") {
                    let parts = line.split(separator: "=", maxSplits: 1)
                    if parts.count == 2 { settings[String(parts[0])] = String(parts[1]) }
                }
                return settings
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw ValidationError("herald emulate wrote no settings within a minute; see \(log)")
    }

    /// Returns once the node answers `GET /health` and its start-up work is done: its CPU time
    /// stops growing (at most one clock tick in 200 ms, twice in a row, or 30 s at most), so
    /// that what a bench measures next is the node's own work on it and not, say, the hash of
    /// the console's first operator's password that a new node makes as it starts.
    func waitUntilSettled() async throws {
        try await waitUntilHealthy()
        let deadline = ContinuousClock.now + .seconds(30)
        var last = try Bench.cpuSeconds(of: pid)
        var quietSpells = 0
        while quietSpells < 2, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(200))
            let now = try Bench.cpuSeconds(of: pid)
            quietSpells = now - last <= 1.5 / ProcessStat.ticksPerSecond ? quietSpells + 1 : 0
            last = now
        }
    }

    /// Returns once the node answers `GET /health`.
    func waitUntilHealthy() async throws {
        let deadline = ContinuousClock.now + .seconds(120)
        while ContinuousClock.now < deadline {
            try checkRunning()
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/health")
            request.method = .GET
            if let response = try? await HTTPClient.shared.execute(request, timeout: .seconds(1)), response.status == .ok {
                return
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw ValidationError("\(name) did not answer within two minutes; see \(log)")
    }

    private func checkRunning() throws {
        guard process.isRunning else {
            let tail = (try? String(contentsOfFile: log, encoding: .utf8))?.split(separator: "\n").suffix(5).joined(separator: "\n") ?? ""
            throw ValidationError("\(name) exited with status \(process.terminationStatus); its log \(log) ends:\n\(tail)")
        }
    }

    /// Stops the process (SIGTERM) and waits for it to end.
    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }

    /// A TCP port that nothing listens on now.
    static func freePort() throws -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw ValidationError("cannot open a socket to find a free port") }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) }
        }
        guard bound == 0 else { throw ValidationError("cannot bind a socket to find a free port") }
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        guard named == 0 else { throw ValidationError("cannot read the port of a socket") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
