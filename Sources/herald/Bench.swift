import ArgumentParser
import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldEmulator
import HeraldHub
import HeraldPush
import HeraldServer
import HeraldStore
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle
import Subprocess

struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure fan-out, registration upserts and broadcast memory on this machine.",
        discussion: """
            Build with `swift build -c release` and run `.build/release/herald bench`. Everything runs on
            this machine, in this process: Herald, its SQLite store in a temporary directory, and the APNs
            emulator it delivers to. The emulator's own ceiling is measured with h2load (Debian's
            nghttp2-client) in the same run, so the fan-out figure reads as a ratio.
            """
    )

    @Option(help: "Devices holding the tag in the fan-out test.")
    var devices = 100_000

    @Option(help: "Upserts through the HTTP API.")
    var upserts = 30_000

    @Option(help: "Concurrent HTTP connections for the upsert test.")
    var connections = 32

    @Option(help: "Registrations in the broadcast memory test (0 skips it).")
    var broadcast = 1_000_000

    @Option(help: "Requests h2load sends to measure the emulator's ceiling (0 skips it).")
    var ceilingRequests = 200_000

    @Option(help: "Rounds of the fan-out with metrics and without, alternating, to measure what recording them costs (0 skips it).")
    var metricsRounds = 0

    func run() async throws {
        print(Self.machine())
        var logger = Logger(label: "bench")
        logger.logLevel = .error
        var results: [String] = []

        let fanOut = try await Self.fanOut(devices: devices, logger: logger)
        results.append(fanOut.line)
        if metricsRounds > 0 {
            results.append(try await Self.metricsCost(devices: devices, rounds: metricsRounds, logger: logger))
        }
        if ceilingRequests > 0 {
            if let ceiling = try await Self.emulatorCeiling(requests: ceilingRequests, logger: logger) {
                results.append(String(format: "  APNs emulator ceiling (h2load): %.0f req/s; fan-out is %.0f%% of it", ceiling, fanOut.perSecond / ceiling * 100))
            } else {
                results.append("  APNs emulator ceiling: h2load not found (apt-get install nghttp2-client)")
            }
        }
        results.append(try await Self.upserts(count: upserts, connections: connections, logger: logger))
        if broadcast > 0 {
            results.append(try await Self.broadcastMemory(devices: broadcast, logger: logger))
        }
        print("\nResults")
        print(results.joined(separator: "\n"))
    }

    // MARK: Scenarios

    /// The fan-out with metrics and without, `rounds` times each, alternating (so that what
    /// else the machine does weighs on both alike); the medians and their ratio.
    static func metricsCost(devices: Int, rounds: Int, logger: Logger) async throws -> String {
        var with: [Double] = [], without: [Double] = []
        for round in 0..<rounds {
            for recordsMetrics in round % 2 == 0 ? [true, false] : [false, true] {
                let run = try await fanOut(devices: devices, recordsMetrics: recordsMetrics, logger: logger)
                if recordsMetrics { with.append(run.perSecond) } else { without.append(run.perSecond) }
            }
        }
        func median(_ values: [Double]) -> Double {
            let sorted = values.sorted()
            return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
        }
        func list(_ values: [Double]) -> String { values.map { String(format: "%.0f", $0) }.joined(separator: ", ") }
        return String(format: "  fan-out with metrics: median %.0f/s", median(with)) + " (\(list(with)));"
            + String(format: " without: median %.0f/s", median(without)) + " (\(list(without)));"
            + String(format: " with/without %.1f%%", median(with) / median(without) * 100)
    }

    static func fanOut(devices: Int, recordsMetrics: Bool = true, logger: Logger) async throws -> (line: String, perSecond: Double) {
        try await withRuntime(recordsMetrics: recordsMetrics, logger: logger) { runtime in
            print("\nfan-out\(recordsMetrics ? "" : " without metrics"): seeding \(devices) APNs registrations with the tag 'bench'…")
            let seed = try await seedRegistrations(runtime.hub.store, count: devices, tags: ["bench"])
            print(String(format: "  seeded in %.1f s", seed))
            let content = NotificationContent(body: "Benchmark")
            let record = try await runtime.hub.enqueue(tagExpression: "bench", payloads: [try content.payload(for: .apns)])
            let start = ContinuousClock.now
            _ = try await runtime.hub.deliverNext()
            let elapsed = (ContinuousClock.now - start).seconds
            let finished = try await runtime.hub.store.notification(id: record.id)
            let success = finished?.counts.total(.success) ?? 0
            let accepted = runtime.apnsEmulator?.acceptedCount ?? 0
            let perSecond = Double(success) / elapsed
            let line = String(
                format: "  fan-out to %d devices: %.2f s, %.0f notifications/s = %.2f million/min (target ≥ 1.0); emulator accepted %d, outcome Success %d",
                devices, elapsed, perSecond, perSecond * 60 / 1_000_000, accepted, success
            )
            print(line)
            return (line, perSecond)
        }
    }

    static func upserts(count: Int, connections: Int, logger: Logger) async throws -> String {
        try await withRuntime(logger: logger) { runtime in
            var server = ServerConfiguration()
            server.port = 0
            server.bcryptCost = 4
            let (ports, portContinuation) = AsyncStream<Int>.makeStream()
            let app = buildApplication(
                hubs: runtime.registry, devices: runtime.userDevices, appStore: runtime.hub.store, configuration: server,
                onServerRunning: { portContinuation.yield($0) }, logger: logger
            )
            let group = ServiceGroup(services: [app], logger: logger)
            return try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { try await group.run() }
                var iterator = ports.makeAsyncIterator()
                let port = await iterator.next()!
                let base = "http://127.0.0.1:\(port)"
                var configuration = HTTPClient.Configuration()
                configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = connections
                let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
                defer { _ = http.shutdown() as EventLoopFuture<Void> }

                _ = try await call(http, "POST", base + "/api/accounts", body: #"{"username":"bench","password":"bench-password"}"#, token: nil)
                let tokenBody = try await call(http, "POST", base + "/api/token", body: #"{"username":"bench","password":"bench-password"}"#, token: nil)
                let token = try JSONDecoder().decode([String: String].self, from: tokenBody)["token"]!
                print("\nupserts: reserving \(count / 2) registration ids…")
                // Half the upserts create registrations, half update them.
                let ids = (0..<(count / 2)).map { _ in RegistrationID.make() }
                for id in ids { try await runtime.hub.store.reserveRegistrationID(id, owner: "bench", ttl: .seconds(3600)) }
                let work = ids.enumerated().flatMap { [($0.offset, $0.element, "news"), ($0.offset, $0.element, "sports")] }
                print("  \(work.count) PUT /api/register/{id} over \(connections) connections…")
                let start = ContinuousClock.now
                try await withThrowingTaskGroup(of: Void.self) { workers in
                    let chunk = (work.count + connections - 1) / connections
                    for lane in 0..<connections {
                        let slice = Array(work.dropFirst(lane * chunk).prefix(chunk))
                        workers.addTask {
                            for (index, id, tag) in slice {
                                let handle = String(format: "%064x", index)
                                _ = try await call(http, "PUT", base + "/api/register/\(id)",
                                                   body: #"{"Platform":"apns","Handle":"\#(handle)","Tags":["\#(tag)"]}"#, token: token)
                            }
                        }
                    }
                    try await workers.waitForAll()
                }
                let elapsed = (ContinuousClock.now - start).seconds
                await group.triggerGracefulShutdown()
                try await tasks.waitForAll()
                let line = String(
                    format: "  registration upserts through the HTTP API: %d in %.2f s = %.0f/s (target ≥ 3,000), load generator in the same process",
                    work.count, elapsed, Double(work.count) / elapsed
                )
                print(line)
                return line
            }
        }
    }

    static func broadcastMemory(devices: Int, logger: Logger) async throws -> String {
        try await withRuntime(logger: logger) { runtime in
            print("\nbroadcast: seeding \(devices) APNs registrations…")
            let seed = try await seedRegistrations(runtime.hub.store, count: devices, tags: ["all"])
            print(String(format: "  seeded in %.1f s; RSS now %d MB", seed, residentMegabytes().current))
            let content = NotificationContent(body: "Broadcast")
            _ = try await runtime.hub.enqueue(tagExpression: nil, payloads: [try content.payload(for: .apns)])
            let sampler = Task {
                var peak = 0
                while !Task.isCancelled {
                    peak = max(peak, residentMegabytes().current)
                    try? await Task.sleep(for: .milliseconds(100))
                }
                return peak
            }
            let start = ContinuousClock.now
            _ = try await runtime.hub.deliverNext()
            let elapsed = (ContinuousClock.now - start).seconds
            sampler.cancel()
            let peak = max(await sampler.value, residentMegabytes().peak)
            let line = String(
                format: "  broadcast to %d registrations: %.1f s (%.2f million/min), peak RSS %d MB (target < 300), emulator included",
                devices, elapsed, Double(devices) / elapsed * 60 / 1_000_000, peak
            )
            print(line)
            return line
        }
    }

    /// Runs h2load against the APNs emulator with a valid provider token; returns requests/s.
    static func emulatorCeiling(requests: Int, logger: Logger) async throws -> Double? {
        guard which("h2load") != nil else { return nil }
        return try await withRuntime(logger: logger) { (runtime) async throws -> Double? in
            guard let emulator = runtime.apnsEmulator else { return nil }
            let directory = runtime.configuration.dataDirectory
            let credentials = try EmulatorCredentials.loadOrCreate(directory: directory + "/emulator")
            let authorization = try APNsTokenCache.shared.authorization(
                teamID: credentials.apnsTeamID, keyID: credentials.apnsKeyID, privateKeyPEM: credentials.apnsPrivateKeyPEM
            )
            let payload = directory + "/payload.json"
            try Data(#"{"aps":{"alert":"Benchmark"}}"#.utf8).write(to: URL(fileURLWithPath: payload))
            let token = String(repeating: "ab", count: 32)
            print("\nceiling: h2load → APNs emulator, \(requests) requests, 4 connections × 100 streams…")
            let output = try await runProcess("h2load", [
                "-n", "\(requests)", "-c", "4", "-m", "100", "-t", "1",
                "-d", payload,
                "-H", "authorization: \(authorization)",
                "-H", "apns-topic: \(runtime.configuration.emulatorTopic)",
                "\(emulator.baseURL)/3/device/\(token)",
            ])
            guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("finished in") }),
                let range = line.range(of: #"[0-9.]+ req/s"#, options: .regularExpression)
            else {
                print(output)
                return nil
            }
            let succeeded = output.contains("0 failed") ? "" : " (h2load reported failures)"
            print("  \(line)\(succeeded)")
            return Double(line[range].dropLast(6))
        }
    }

    // MARK: Helpers

    static func withRuntime<T>(recordsMetrics: Bool = true, logger: Logger, _ body: (HeraldRuntime) async throws -> T) async throws -> T {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-bench-\(UUID().uuidString.prefix(8))").path
        var configuration = HeraldConfiguration()
        configuration.dataDirectory = directory
        configuration.emulatorTopic = "com.example.bench"
        var hub = configuration.hubConfiguration
        hub.pollInterval = .milliseconds(50)
        let runtime = try await HeraldRuntime.start(
            configuration, hubConfiguration: hub, openDeviceRegistry: true, recordsPayloads: false,
            recordsMetrics: recordsMetrics, logger: logger
        )
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            let result = try await body(runtime)
            await runtime.shutdown()
            return result
        } catch {
            await runtime.shutdown()
            throw error
        }
    }

    /// Inserts `count` APNs registrations in batches; returns the seconds it took.
    static func seedRegistrations(_ store: any HeraldStore, count: Int, tags: [String]) async throws -> Double {
        let start = ContinuousClock.now
        let batch = 10_000
        var next = 0
        while next < count {
            let end = min(count, next + batch)
            let registrations = (next..<end).map { i in
                Registration(id: String(format: "bench-%09d", i), platform: .apns, handle: String(format: "%064x", i), tags: tags)
            }
            try await store.insertRegistrations(registrations)
            next = end
            if count >= 200_000, next % 200_000 == 0 { print("  \(next) / \(count)") }
        }
        return (ContinuousClock.now - start).seconds
    }

    static func call(_ http: HTTPClient, _ method: String, _ url: String, body: String?, token: String?) async throws -> Data {
        var request = HTTPClientRequest(url: url)
        request.method = .init(rawValue: method)
        if let token { request.headers.add(name: "authorization", value: "Bearer \(token)") }
        if let body {
            request.headers.add(name: "content-type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
        }
        let response = try await http.execute(request, timeout: .seconds(30))
        let bytes = try await response.body.collect(upTo: 1 << 20)
        guard response.status.code < 300 else {
            throw ValidationError("\(method) \(url) answered \(response.status.code): \(String(buffer: bytes))")
        }
        return Data(bytes.readableBytesView)
    }

    static func residentMegabytes() -> (current: Int, peak: Int) {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return (0, 0) }
        func field(_ name: String) -> Int {
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name) }) else { return 0 }
            return (Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) / 1024
        }
        return (field("VmRSS:"), field("VmHWM:"))
    }

    static func machine() -> String {
        let cpu = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
            .split(separator: "\n").first { $0.hasPrefix("model name") }?
            .split(separator: ":", maxSplits: 1).last?.trimmingCharacters(in: .whitespaces) ?? "unknown CPU"
        let memory = (try? String(contentsOfFile: "/proc/meminfo", encoding: .utf8))?
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
