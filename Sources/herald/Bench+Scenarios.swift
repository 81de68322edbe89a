import ArgumentParser
import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldEmulator
import HeraldHub
import HeraldHubWire
import HeraldPostgres
import HeraldPush
import HeraldServer
import HeraldStore
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle
import Subprocess

/// The scenarios that run in this process, each on a new store of the kind asked for.
extension Bench {
    /// The SQLite fan-out with metrics and without, `rounds` times each, alternating (so that
    /// what else the machine does weighs on both alike): the medians and their ratio.
    static func metricsCost(devices: Int, rounds: Int, logger: Logger) async throws -> String {
        var with: [Double] = [], without: [Double] = []
        for round in 0..<rounds {
            for recordsMetrics in round % 2 == 0 ? [true, false] : [false, true] {
                let perSecond = try await fanOut(.sqlite, devices: devices, recordsMetrics: recordsMetrics, logger: logger)
                if recordsMetrics { with.append(perSecond) } else { without.append(perSecond) }
            }
        }
        func median(_ values: [Double]) -> Double {
            let sorted = values.sorted()
            return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
        }
        func list(_ values: [Double]) -> String { values.map { String(format: "%.0f", $0) }.joined(separator: ", ") }
        return String(format: "SQLite fan-out with metrics: median %.0f/s", median(with)) + " (\(list(with)));"
            + String(format: " without: median %.0f/s", median(without)) + " (\(list(without)));"
            + String(format: " with/without %.1f%%", median(with) / median(without) * 100)
    }

    /// Notifications per second to `devices` APNs devices holding one tag, one worker.
    static func fanOut(_ store: BenchStore, devices: Int, recordsMetrics: Bool = true, logger: Logger) async throws -> Double {
        try await withRuntime(store, recordsMetrics: recordsMetrics, logger: logger) { runtime in
            say("fan-out\(recordsMetrics ? "" : " without metrics"): seeding \(devices.formatted()) APNs registrations with the tag 'bench'…")
            let seed = try await seedRegistrations(runtime.appHubEngine.store, count: devices, tags: ["bench"])
            say(String(format: "  seeded in %.1f s", seed))
            let content = NotificationContent(body: "Benchmark")
            let request = SendRequest(target: .tags(try SendRequest.Tags(parsing: "bench")), content: .native([try content.payload(for: .apns)]))
            let record = try await runtime.appHubEngine.send(request).record
            let start = ContinuousClock.now
            try await withDeliveryProgress(runtime.apnsEmulator, total: devices) {
                while try await runtime.appHubEngine.deliverNext() {}
            }
            let elapsed = (ContinuousClock.now - start).seconds
            let finished = try await runtime.appHubEngine.store.notification(id: record.id)
            let success = finished?.counts.total(.success) ?? 0
            let accepted = runtime.apnsEmulator?.acceptedCount ?? 0
            let perSecond = Double(success) / elapsed
            say(
                String(
                    format: "  %.2f s, %.0f notifications/s = %.2f million/min; emulator accepted %d, outcome Success %d",
                    elapsed, perSecond, perSecond * 60 / 1_000_000, accepted, success
                ))
            return perSecond
        }
    }

    /// App backend upserts per second: `PUT /api/register/{id}`, half creating, half updating.
    static func upserts(_ store: BenchStore, count: Int, connections: Int, logger: Logger) async throws -> Double {
        try await withRuntime(store, logger: logger) { runtime in
            try await withServer(runtime, connections: connections, logger: logger) { base, http in
                let token = try await signUp(http, base: base)
                say("upserts: reserving \((count / 2).formatted()) registration ids…")
                let ids = (0..<(count / 2)).map { _ in RegistrationID.make() }
                for id in ids { try await runtime.appHubEngine.store.reserveRegistrationID(id, owner: "bench", ttl: .seconds(3600)) }
                let work = createThenUpdate(ids)
                say("  \(work.count.formatted()) PUT /api/register/{id} over \(connections) connections…")
                let perSecond = try await timedLoad(
                    work.map { registrationUpsert($0, token: token) }, base: base, connections: connections,
                    database: runtime.configuration.databaseURL?.database
                ).perSecond
                say(String(format: "  %.0f upserts/s (half creates, half updates), load generator in this process", perSecond))
                return perSecond
            }
        }
    }

    /// Hub REST API installation PUTs per second, half creating, half updating, each with a
    /// shared access signature made once (as the hub SDKs cache theirs).
    static func installationPuts(_ store: BenchStore, count: Int, connections: Int, logger: Logger) async throws -> Double {
        try await withHubAPI(store, connections: connections, logger: logger) { runtime, base, _, signature in
            let work = createThenUpdate((0..<(count / 2)).map { _ in UUID().uuidString.lowercased() })
            say("installations: \(work.count.formatted()) PUT /bench/installations/{id} over \(connections) connections…")
            let perSecond = try await timedLoad(
                work.map { installationPut($0, signature: signature) }, base: base, connections: connections,
                database: runtime.configuration.databaseURL?.database
            ).perSecond
            say(String(format: "  %.0f installation PUTs/s (half creates, half updates), load generator in this process", perSecond))
            return perSecond
        }
    }

    /// Signs the app backend's user `bench` up and in, and returns its bearer token.
    static func signUp(_ http: HTTPClient, base: String) async throws -> String {
        _ = try await call(http, "POST", base + "/api/accounts", body: #"{"username":"bench","password":"bench-password"}"#)
        let body = try await call(http, "POST", base + "/api/token", body: #"{"username":"bench","password":"bench-password"}"#)
        guard let token = try JSONDecoder().decode([String: String].self, from: body)["token"] else {
            throw ValidationError("POST /api/token answered no token")
        }
        return token
    }

    /// The upsert of one item of ``createThenUpdate(_:)``: `PUT /api/register/{id}` as the
    /// app backend's user of `token`, with a handle of its own and the item's one tag.
    static func registrationUpsert(_ item: (index: Int, id: String, tag: String), token: String) -> LoadRequest {
        LoadRequest(
            method: "PUT", path: "/api/register/\(item.id)", headers: [("authorization", "Bearer \(token)")],
            body: #"{"Platform":"apns","Handle":"\#(String(format: "%064x", item.index))","Tags":["\#(item.tag)"]}"#
        )
    }

    /// The installation `PUT` of one item of ``createThenUpdate(_:)`` to the hub `bench`.
    static func installationPut(_ item: (index: Int, id: String, tag: String), signature: String) -> LoadRequest {
        LoadRequest(
            method: "PUT", path: "/bench/installations/\(item.id)?api-version=2020-06", headers: [("authorization", signature)],
            body: #"{"installationId":"\#(item.id)","platform":"apns","pushChannel":"\#(String(format: "%064x", item.index))","tags":["\#(item.tag)"]}"#
        )
    }

    /// Sends accepted per second through the hub REST API (`POST /{hub}/messages`, an APNs
    /// send to a tag no device holds, so that delivery costs next to nothing), without an
    /// Idempotency-Key and each under a new one, on one server: a round to warm up, then
    /// ``acceptancePairs`` pairs of rounds, one without a key and one with, the first of a pair
    /// alternating, so that both meet the same machine and a table that grows from round to
    /// round favours neither.
    ///
    /// What keys cost is the median of the pairs' ratios: on a shared machine a round now and
    /// then meets a neighbour's burst (or the store's checkpoint), which moves a ratio of sums
    /// by several percent but one pair's ratio only.
    static func sendAcceptance(
        _ store: BenchStore, count: Int, connections: Int, logger: Logger
    ) async throws -> SendAcceptance {
        try await withHubAPI(store, connections: connections, logger: logger) { runtime, base, _, signature in
            let perRound = max(1, count / (2 * acceptancePairs))
            var rounds: [Bool?] = [nil]
            for pair in 0..<acceptancePairs { rounds += pair.isMultiple(of: 2) ? [false, true] : [true, false] }
            var seconds: [Bool: Double] = [:], sent: [Bool: Int] = [:], cpu: [Bool: Double] = [:]
            var pairRates: [Bool: Double] = [:], ratios: [Double] = []
            for round in rounds {
                let keyed = round == true
                say(
                    "sends: \(perRound.formatted()) POST /bench/messages \(keyed ? "each under an Idempotency-Key" : "without a key") over \(connections) connections\(round == nil ? ", to warm up" : "")…"
                )
                let started = ContinuousClock.now
                let cpuBefore = try cpuSeconds(of: getpid())
                let sends = (0..<perRound).map { _ in
                    LoadRequest(
                        method: "POST", path: "/bench/messages?api-version=2015-01",
                        headers: [
                            ("authorization", signature), ("servicebusnotification-format", "apple"), ("servicebusnotification-tags", "nobody"),
                        ] + (keyed ? [("idempotency-key", UUID().uuidString)] : []),
                        body: #"{"aps":{"alert":"bench"}}"#
                    )
                }
                try await timedLoad(sends, base: base, connections: connections, database: runtime.configuration.databaseURL?.database)
                let took = (ContinuousClock.now - started).seconds
                say(String(format: "  %.0f/s", Double(perRound) / max(took, 0.001)))
                // The next round starts with nothing left to deliver, as this one did.
                try await drainQueue(runtime, hub: "bench")
                guard round != nil else { continue }
                seconds[keyed, default: 0] += took
                sent[keyed, default: 0] += perRound
                // This process's CPU (the node, its workers and the load generator) from the
                // round's first request until its notifications were delivered.
                cpu[keyed, default: 0] += try cpuSeconds(of: getpid()) - cpuBefore
                pairRates[keyed] = Double(perRound) / max(took, 0.001)
                if let plain = pairRates[false], let withKey = pairRates[true] {
                    ratios.append(withKey / plain)
                    pairRates = [:]
                }
            }
            ratios.sort()
            let result = SendAcceptance(
                plain: Double(sent[false] ?? 0) / max(seconds[false] ?? 0, 0.001),
                keyed: Double(sent[true] ?? 0) / max(seconds[true] ?? 0, 0.001),
                keyedShare: ratios.isEmpty ? 0 : (ratios[(ratios.count - 1) / 2] + ratios[ratios.count / 2]) / 2,
                plainCPU: (cpu[false] ?? 0) / Double(max(1, sent[false] ?? 0)),
                keyedCPU: (cpu[true] ?? 0) / Double(max(1, sent[true] ?? 0))
            )
            say(String(format: "  %.0f sends/s without a key, %.0f/s each under a key", result.plain, result.keyed))
            say(
                String(
                    format: "  under a key / without, pair by pair: %@; median %.1f%%",
                    ratios.map { String(format: "%.0f%%", $0 * 100) }.joined(separator: " "), result.keyedShare * 100))
            say(
                String(
                    format: "  CPU per send (node, workers and load generator): %.0f µs without a key, %.0f µs under a key (%+.1f%%)",
                    result.plainCPU * 1e6, result.keyedCPU * 1e6, (result.keyedCPU / max(result.plainCPU, 1e-9) - 1) * 100))
            return result
        }
    }

    /// The pairs of rounds (one without a key, one with) that ``sendAcceptance(_:count:connections:logger:)``
    /// measures after its warm-up.
    static let acceptancePairs = 8

    /// What ``sendAcceptance(_:count:connections:logger:)`` measured: sends a second, and CPU
    /// seconds a send, without and with an Idempotency-Key; and the median of the pairs' ratios
    /// of the rate with a key to the rate without.
    struct SendAcceptance: Sendable {
        var plain: Double
        var keyed: Double
        var keyedShare: Double
        var plainCPU: Double
        var keyedCPU: Double
    }

    /// Waits (up to a minute) until the hub's workers have delivered everything it accepted.
    /// A round that is not drained by then would meet the next one's: the bench stops.
    static func drainQueue(_ runtime: HeraldRuntime, hub name: String) async throws {
        guard let engine = try await runtime.registry.engine(named: name) else {
            throw ValidationError("the bench's hub '\(name)' is not open")
        }
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            let queue = try await engine.queueStatistics()
            if queue.waiting == 0, queue.processing == 0 { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw ValidationError("the hub's workers did not deliver a round's notifications within a minute")
    }

    /// Runs `body` with a new hub, `bench`, served over HTTP (see ``withServer(_:connections:logger:_:)``)
    /// and a shared access signature of its full-access rule, made once (as the hub SDKs cache
    /// theirs).
    static func withHubAPI<T: Sendable>(
        _ store: BenchStore, connections: Int, logger: Logger,
        _ body: @escaping @Sendable (HeraldRuntime, String, HTTPClient, String) async throws -> T
    ) async throws -> T {
        try await withRuntime(store, logger: logger) { runtime in
            let hub = try await runtime.catalog.create(name: "bench")
            guard let rule = hub.rule(named: SharedAccessRule.defaultFullRuleName) else {
                throw ValidationError("the new hub has no \(SharedAccessRule.defaultFullRuleName) rule")
            }
            return try await withServer(runtime, connections: connections, logger: logger) { base, http in
                let signature = SharedAccessSignature.make(
                    resource: base + "/bench", keyName: rule.name, key: rule.primaryKey, expiry: Date().addingTimeInterval(3600)
                )
                return try await body(runtime, base, http, signature)
            }
        }
    }

    // MARK: Helpers

    /// Runs `body` with a Herald runtime (the APNs emulator in this process) on a new store:
    /// SQLite in a temporary directory, or a PostgreSQL database of its own, dropped afterwards.
    static func withRuntime<T>(
        _ store: BenchStore, recordsMetrics: Bool = true, logger: Logger, _ body: (HeraldRuntime) async throws -> T
    ) async throws -> T {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-bench-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var configuration = HeraldConfiguration()
        configuration.dataDirectory = directory
        configuration.emulatorTopic = "com.example.bench"
        let engine = configuration.engineConfiguration
        func run(_ configuration: HeraldConfiguration, storage: (any HubStorage)?) async throws -> T {
            let runtime = try await HeraldRuntime.start(
                configuration, storage: storage, engineConfiguration: engine, openDeviceRegistry: true, recordsPayloads: false,
                recordsMetrics: recordsMetrics, logger: logger
            )
            do {
                let result = try await body(runtime)
                await runtime.shutdown()
                return result
            } catch {
                await runtime.shutdown()
                throw error
            }
        }
        switch store {
        case .sqlite:
            return try await run(configuration, storage: nil)
        case .postgres(let server, _):
            return try await PostgresDatabase.withScratchDatabase(on: server, prefix: "herald_bench", logger: logger) { url in
                var onDatabase = configuration
                onDatabase.databaseURL = url
                return try await onDatabase.withHubStorage(logger: logger) { storage in try await run(onDatabase, storage: storage) }
            }
        }
    }

    /// Runs `body` with the runtime's HTTP server listening on a free port (its base URL) and an
    /// HTTP client of `connections` connections; stops both afterwards.
    static func withServer<T: Sendable>(
        _ runtime: HeraldRuntime,
        connections: Int,
        logger: Logger,
        _ body: @escaping @Sendable (String, HTTPClient) async throws -> T
    ) async throws -> T {
        var server = ServerConfiguration()
        server.port = 0
        server.bcryptCost = 4
        // The benchmark measures the server, not the hub API's rate limit.
        server.hubRequestsPerSecond = 1_000_000
        let (ports, portContinuation) = AsyncStream<Int>.makeStream()
        let app = buildApplication(
            hubs: runtime.registry, devices: runtime.userDevices, appStore: runtime.appStore, configuration: server,
            onServerRunning: { portContinuation.yield($0) }, logger: logger
        )
        let group = ServiceGroup(services: [app], logger: logger)
        return try await withThrowingTaskGroup(of: T?.self) { tasks in
            tasks.addTask {
                try await group.run()
                return nil
            }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next() else { throw ValidationError("the server did not start") }
            var configuration = HTTPClient.Configuration()
            configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = connections
            let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            let result: T
            do {
                result = try await body("http://127.0.0.1:\(port)", http)
            } catch {
                try? await http.shutdown()
                await group.triggerGracefulShutdown()
                throw error
            }
            try await http.shutdown()
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
            return result
        }
    }

    /// Two writes of each id, in turn: the first creates it (tag `news`), the second updates it
    /// (tag `sports`); with the id's index, for a device handle of its own.
    static func createThenUpdate(_ ids: [String]) -> [(index: Int, id: String, tag: String)] {
        ids.enumerated().flatMap { [($0.offset, $0.element, "news"), ($0.offset, $0.element, "sports")] }
    }

    /// Sends `requests` to `base` with the lean ``LoadGenerator`` over `connections` connections,
    /// with their progress on standard error; returns requests per second. It prints where the
    /// CPU went per request: this process (the server and the load generator, or with `node`
    /// the load generator alone), the node process `node`, and PostgreSQL's backends on
    /// `database`.
    @discardableResult
    static func timedLoad(
        _ requests: [LoadRequest], base: String, connections: Int, database: String? = nil, node: Int32? = nil
    ) async throws -> RequestRate {
        let progress = ProgressReporter(title: "  requests", total: requests.count)
        let start = ContinuousClock.now
        let processBefore = processCPUSeconds(), postgresBefore = database.flatMap { PostgresCPU.seconds(database: $0) }
        let nodeBefore = try node.map { try cpuSeconds(of: $0) }
        try await LoadGenerator.run(requests, base: base, connections: connections) { progress.advance() }
        progress.finish()
        let seconds = (ContinuousClock.now - start).seconds
        let count = Double(max(requests.count, 1))
        var rate = RequestRate(perSecond: Double(requests.count) / seconds)
        rate.processMicroseconds = (processCPUSeconds() - processBefore) / count * 1_000_000
        if let node, let nodeBefore { rate.nodeMicroseconds = (try cpuSeconds(of: node) - nodeBefore) / count * 1_000_000 }
        rate.postgresMicroseconds = postgresBefore.flatMap { before in
            database.flatMap { PostgresCPU.seconds(database: $0) }.map { ($0 - before) / count * 1_000_000 }
        }
        say("  CPU per request: " + rate.cpuDescription)
        return rate
    }

    /// What ``timedLoad(_:base:connections:database:node:)`` measured.
    struct RequestRate {
        var perSecond: Double
        /// CPU per request of this process, of the node process and of PostgreSQL's backends.
        var processMicroseconds = 0.0
        var nodeMicroseconds: Double?
        var postgresMicroseconds: Double?

        var cpuDescription: String {
            var parts: [String] = []
            if let nodeMicroseconds {
                parts.append(String(format: "%.0f µs in the node process", nodeMicroseconds))
                parts.append(String(format: "%.0f µs in this process (load generator)", processMicroseconds))
            } else {
                parts.append(String(format: "%.0f µs in this process (server and load generator)", processMicroseconds))
            }
            if let postgresMicroseconds { parts.append(String(format: "%.0f µs in PostgreSQL's backends", postgresMicroseconds)) }
            return parts.joined(separator: ", ")
        }
    }

    /// Runs `request` for every item of `work`, `connections` at a time, each lane in order.
    static func inLanes<Item: Sendable>(
        _ work: [Item], connections: Int, _ request: @escaping @Sendable (Item) async throws -> Void
    ) async throws {
        try await withThrowingTaskGroup(of: Void.self) { lanes in
            for slice in LoadGenerator.lanes(work, connections: connections) {
                lanes.addTask {
                    for item in slice { try await request(item) }
                }
            }
            try await lanes.waitForAll()
        }
    }

    /// Runs `body` (deliveries to the APNs emulator) with its progress on standard error: the
    /// devices the emulator accepted, read every 0.2 s.
    static func withDeliveryProgress(_ emulator: APNsEmulator?, total: Int, _ body: () async throws -> Void) async throws {
        let progress = ProgressReporter(title: "  delivered", total: total)
        let watcher = Task {
            while !Task.isCancelled {
                progress.update(done: emulator?.acceptedCount ?? 0)
                try? await Task.sleep(for: .milliseconds(200))
            }
        }
        defer {
            watcher.cancel()
            progress.update(done: emulator?.acceptedCount ?? 0)
            progress.finish()
        }
        try await body()
    }

    /// Inserts `count` APNs registrations in batches, with their progress on standard error;
    /// returns the seconds it took.
    static func seedRegistrations(_ store: any HeraldStore, count: Int, tags: [String]) async throws -> Double {
        try await seedRegistrations(store, count: count) { i in
            Registration(id: String(format: "bench-%09d", i), platform: .apns, handle: String(format: "%064x", i), tags: tags)
        }
    }

    /// Inserts registration `make(0)` to `make(count - 1)`, 10,000 per transaction, with progress,
    /// and brings the store's statistics up to date, as a bulk load does; the seconds it took.
    static func seedRegistrations(_ store: any HeraldStore, count: Int, make: (Int) -> Registration) async throws -> Double {
        let start = ContinuousClock.now
        let batch = 10_000
        var next = 0
        let progress = ProgressReporter(title: "  seeded", total: count)
        defer { progress.finish() }
        while next < count {
            let end = min(count, next + batch)
            try await store.insertRegistrations((next..<end).map(make))
            next = end
            progress.update(done: next)
        }
        try await store.refreshStatistics()
        return (ContinuousClock.now - start).seconds
    }

    /// Sends one request and returns its body; an answer of 300 or more throws.
    static func call(
        _ http: HTTPClient, _ method: String, _ url: String, body: String?, headers: [String: String] = [:]
    ) async throws -> Data {
        let response = try await exchange(http, method, url, body: body, headers: headers)
        guard response.status < 300 else {
            throw ValidationError("\(method) \(url) answered \(response.status): \(String(buffer: response.body))")
        }
        return Data(response.body.readableBytesView)
    }

    /// Sends one request (a body of `contentType`, if any) and returns the answer, whatever its status.
    static func exchange(
        _ http: HTTPClient, _ method: String, _ url: String, body: String?, contentType: String = "application/json",
        headers: [String: String] = [:]
    ) async throws -> (status: UInt, headers: HTTPHeaders, body: ByteBuffer) {
        var request = HTTPClientRequest(url: url)
        request.method = .init(rawValue: method)
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body {
            request.headers.add(name: "content-type", value: contentType)
            request.body = .bytes(ByteBuffer(string: body))
        }
        let response = try await http.execute(request, timeout: .seconds(120))
        return (response.status.code, response.headers, try await response.body.collect(upTo: 4 << 20))
    }

    /// A process's resident memory now and at its peak (`VmRSS`, `VmHWM`), in MB.
    static func residentMegabytes(statusFile: String) -> (current: Int, peak: Int) {
        guard let status = try? String(contentsOfFile: statusFile, encoding: .utf8) else { return (0, 0) }
        func field(_ name: String) -> Int {
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name) }) else { return 0 }
            return (Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) / 1024
        }
        return (field("VmRSS:"), field("VmHWM:"))
    }

    static func machine() -> String {
        let cpu =
            (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
            .split(separator: "\n").first { $0.hasPrefix("model name") }?
            .split(separator: ":", maxSplits: 1).last?.trimmingSpaces() ?? "unknown CPU"
        let memory =
            (try? String(contentsOfFile: "/proc/meminfo", encoding: .utf8))?
            .split(separator: "\n").first { $0.hasPrefix("MemTotal") }?
            .split(separator: " ").dropFirst().first.flatMap { Int($0) }.map { "\($0 / 1024 / 1024) GiB" } ?? "?"
        #if DEBUG
        let build = "DEBUG build: figures are not representative, use `swift build -c release`"
        #else
        let build = "release build"
        #endif
        return "Machine: \(ProcessInfo.processInfo.activeProcessorCount) cores, \(cpu), \(memory) RAM; \(build)"
    }

    static func which(_ tool: String) -> String? {
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":") {
            let path = "\(directory)/\(tool)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    /// Runs the tool named `name` (found on `PATH`) with `arguments`; returns what it printed
    /// on both streams.
    static func runProcess(_ name: String, _ arguments: [String]) async throws -> String {
        let result = try await Subprocess.run(
            .name(name), arguments: Arguments(arguments),
            output: .string(limit: 1 << 20), error: .string(limit: 1 << 20)
        )
        return result.standardOutput + result.standardError
    }
}
