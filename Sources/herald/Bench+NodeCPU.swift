import ArgumentParser
import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldEmulator
import HeraldHub
import HeraldHubWire
import HeraldPush
import HeraldSQLite
import HeraldStore
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL

#if canImport(Glibc)
import Glibc
#endif

/// What one node costs per notification: `herald serve` and `herald emulate` as processes of
/// their own, so that the node's CPU time (read from `/proc`) counts the node alone, beside
/// h2load's cost per request to the same emulator.
extension Bench {
    /// One send measured in a node process.
    struct NodeRun {
        var platform: Platform
        /// `fan-out` (devices holding a tag, among no others) or `broadcast` (every device).
        var kind: String
        var devices: Int
        var state: String
        var seconds: Double
        var reached: Int
        /// The node's CPU time (user and system) from the send until the notification finished.
        var nodeCPUSeconds: Double
        var emulatorCPUSeconds: Double
        var peakMegabytes: Int
        /// When the emulator accepted the first and the last send, in seconds after the send
        /// was posted: what the run spent before its first device and after its last.
        var firstDevice: Double?
        var lastDevice: Double?

        var perSecond: Double { Double(reached) / seconds }
        var nodeMicroseconds: Double { nodeCPUSeconds / Double(max(reached, 1)) * 1_000_000 }
        var emulatorMicroseconds: Double { emulatorCPUSeconds / Double(max(reached, 1)) * 1_000_000 }
    }

    /// h2load's requests to an emulator process: the ceiling of what any client gets from it here.
    struct Ceiling {
        var platform: Platform
        var requests: Int
        var perSecond: Double
        var h2loadCPUSeconds: Double
        var emulatorCPUSeconds: Double

        var h2loadMicroseconds: Double { h2loadCPUSeconds / Double(requests) * 1_000_000 }
        var emulatorMicroseconds: Double { emulatorCPUSeconds / Double(requests) * 1_000_000 }
    }

    /// A `herald emulate` process, with the directory it keeps its keys in and the settings it wrote.
    struct EmulatorProcess {
        var process: NodeProcess
        var directory: String
        var settings: [String: String]

        static func start(directory: String) async throws -> EmulatorProcess {
            let process = try NodeProcess.emulator(directory: directory)
            do {
                let settings = try await process.waitForSettings(file: directory + "/emulator/herald.env")
                return EmulatorProcess(process: process, directory: directory + "/emulator", settings: settings)
            } catch {
                process.stop()
                throw error
            }
        }

        /// The base URL of `platform`'s emulator.
        func endpoint(_ platform: Platform) throws -> String {
            let variable = platform == .apns ? "HERALD_APNS_ENDPOINT" : "HERALD_FCM_ENDPOINT"
            guard let endpoint = settings[variable] else { throw ValidationError("herald emulate wrote no \(variable)") }
            return endpoint
        }

        /// An HTTP client that trusts the emulators' certificate authority.
        func client() -> HTTPClient {
            var tls = TLSConfiguration.makeClientConfiguration()
            if let ca = settings["HERALD_APNS_CA_FILE"] { tls.trustRoots = .file(ca) }
            var configuration = HTTPClient.Configuration()
            configuration.tlsConfiguration = tls
            return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        }
    }

    /// Seeds `devices` devices of `platform` into a node's SQLite store (tagged `bench` for the
    /// fan-out, sent to that tag; untagged for the broadcast, sent to every device), starts the
    /// node on them with an emulator of its own, sends through the hub REST API and measures until
    /// the notification is finished.
    static func nodeRun(platform: Platform, devices: Int, broadcast: Bool, binary: URL, logger: Logger) async throws -> NodeRun {
        let kind = broadcast ? "broadcast" : "fan-out"
        say("\(platform.rawValue) \(kind) in a node process: seeding \(devices.formatted()) registrations…")
        return try await withNode(platform: platform, count: devices, binary: binary, logger: logger) { i in
            Registration(id: String(format: "bench-%09d", i), platform: platform, handle: benchHandle(platform, i), tags: broadcast ? [] : ["bench"])
        } _: { node in
            try await node.measure(kind, devices: devices) { http, base, signature in
                try await sendNotification(http, base: base, signature: signature, platform: platform, tag: broadcast ? nil : "bench")
            }
        }
    }

    /// A native send to `devices` APNs devices, then the same send with every device confirming
    /// it (the emulator's devices post their receipts to the node's hub API, `POST
    /// /{hub}/receipts` with the Listen key), measured until the last receipt is counted.
    static func receiptRuns(devices: Int, binary: URL, logger: Logger) async throws -> (plain: NodeRun, confirmed: NodeRun) {
        say("apns sends with and without receipts in a node process: seeding \(devices.formatted()) registrations…")
        return try await withNode(platform: .apns, count: devices, binary: binary, logger: logger) { i in
            Registration(id: String(format: "bench-%09d", i), platform: .apns, handle: benchHandle(.apns, i), tags: ["bench"])
        } _: { node in
            let plain = try await node.measure("send, no receipts", devices: devices) { http, base, signature in
                try await sendNotification(http, base: base, signature: signature, platform: .apns, tag: "bench")
            }
            let endpoint = try node.emulator.endpoint(.apns)
            var request = HTTPClientRequest(url: endpoint + "/_emulator/receipts")
            request.method = .PUT
            request.headers.add(name: "Content-Type", value: "application/json")
            let configuration: [String: Any] = ["connectionString": node.listenConnectionString, "hub": "bench", "fraction": 1]
            request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: configuration)))
            let answer = try await node.http.execute(request, timeout: .seconds(30))
            guard answer.status == .ok else { throw ValidationError("the emulator refused its receipts' settings: \(answer.status)") }
            let before = try await emulatorStats(node.http, endpoint: endpoint)
            // The same devices again: the emulator counts a device it reached before once.
            let confirmed = try await node.measure(
                "send, every device confirms", devices: devices, repeated: true,
                until: {
                    let deadline = ContinuousClock.now + .seconds(600)
                    while ContinuousClock.now < deadline {
                        let now = try await emulatorStats(node.http, endpoint: endpoint)
                        let failed = now.receiptsFailed - before.receiptsFailed
                        if now.receiptsConfirmed - before.receiptsConfirmed + failed >= devices {
                            if failed > 0 { say("  \(failed.formatted()) receipts failed") }
                            return
                        }
                        try await Task.sleep(for: .milliseconds(100))
                    }
                    throw ValidationError("the devices' receipts were not all posted within 10 minutes")
                }
            ) { http, base, signature in
                try await sendNotification(http, base: base, signature: signature, platform: .apns, tag: "bench")
            }
            return (plain, confirmed)
        }
    }

    /// Template sends against native ones to `devices` APNs devices each, by one node: the
    /// first half of the hub are template registrations (as installations with a template
    /// expand to), tagged `template`, the second half native ones tagged `native`.
    ///
    /// A single pair of runs moves by ±15 % on a shared machine, so the node sends `pairs`
    /// pairs, one after the other in alternating order (native first, then template first, …);
    /// each pair gives a ratio, and the pair with the median ratio is the one shown.
    static func templateRuns(devices: Int, pairs: Int = 3, binary: URL, logger: Logger) async throws -> TemplateComparison {
        say("apns template and native sends in a node process: seeding \((2 * devices).formatted()) registrations…")
        let template = RegistrationTemplate(body: ##"{"aps":{"alert":"$(message)","badge":"#(count)"},"sender":"$(sender)"}"##)
        return try await withNode(platform: .apns, count: 2 * devices, binary: binary, logger: logger) { i in
            var registration = Registration(
                id: String(format: "bench-%09d", i), platform: .apns, handle: benchHandle(.apns, i), tags: [i < devices ? "template" : "native"])
            if i < devices {
                registration.template = template
                registration.installationID = String(format: "installation-%09d", i)
            }
            return registration
        } _: { node in
            var measured: [(native: NodeRun, template: NodeRun)] = []
            // From the second send of a kind on, its devices were reached before: the devices
            // reached are those that accepted the send.
            func native() async throws -> NodeRun {
                try await node.measure("native send", devices: devices, repeated: !measured.isEmpty) { http, base, signature in
                    try await sendNotification(http, base: base, signature: signature, platform: .apns, tag: "native")
                }
            }
            func templated() async throws -> NodeRun {
                try await node.measure("template send", devices: devices, repeated: !measured.isEmpty) { http, base, signature in
                    try await sendTemplate(http, base: base, signature: signature, tag: "template")
                }
            }
            for pair in 0..<max(pairs, 1) {
                if pair.isMultiple(of: 2) {
                    let first = try await native()
                    measured.append((first, try await templated()))
                } else {
                    let first = try await templated()
                    measured.append((try await native(), first))
                }
            }
            return TemplateComparison(pairs: measured)
        }
    }

    /// Pairs of a native and a template send measured one after the other.
    struct TemplateComparison {
        var pairs: [(native: NodeRun, template: NodeRun)]

        /// Each pair's template / native node CPU per device, in the pairs' order.
        var ratios: [Double] { pairs.map { $0.template.nodeMicroseconds / $0.native.nodeMicroseconds } }

        /// The pair whose ratio is the median (the lower of the two middle ones for an even
        /// number of pairs).
        var median: (native: NodeRun, template: NodeRun, ratio: Double) {
            let ratios = self.ratios
            let index = ratios.indices.sorted { ratios[$0] < ratios[$1] }[(ratios.count - 1) / 2]
            return (pairs[index].native, pairs[index].template, ratios[index])
        }
    }

    /// A node process (`herald serve` of `binary`) on a hub `bench` of `count` registrations
    /// (`make(0)` to `make(count - 1)`), delivering to an emulator process of this binary; `body`
    /// measures sends through it.
    static func withNode<T>(
        platform: Platform, count: Int, binary: URL, logger: Logger, _ make: (Int) -> Registration, _ body: (MeasuredNode) async throws -> T
    ) async throws -> T {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-bench-node-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let emulator = try await EmulatorProcess.start(directory: directory)
        defer { emulator.process.stop() }

        let storage = DirectoryHubStorage(dataDirectory: directory + "/node")
        let hub = try await createBenchHub(in: HubCatalog(storage: storage))
        let store = try await storage.openStore(forHub: "bench", logger: logger)
        let seconds = try await seedRegistrations(store, count: count, make: make)
        try await store.close()
        say(String(format: "  seeded in %.1f s; starting the node…", seconds))
        guard let rule = hub.rule(named: SharedAccessRule.defaultFullRuleName) else {
            throw ValidationError("the new hub has no \(SharedAccessRule.defaultFullRuleName) rule")
        }

        guard let listen = hub.rule(named: SharedAccessRule.defaultListenRuleName) else {
            throw ValidationError("the new hub has no \(SharedAccessRule.defaultListenRuleName) rule")
        }

        let process = try NodeProcess.node(
            name: "node", directory: directory, settings: emulator.settings, databaseURL: nil, secureKeyFrom: nil, binary: binary)
        defer { process.stop() }
        try await process.waitUntilSettled()
        let base = "http://127.0.0.1:\(process.port)"
        let node = MeasuredNode(
            platform: platform, process: process, emulator: emulator, http: emulator.client(), base: base,
            listenConnectionString: "Endpoint=\(base)/;SharedAccessKeyName=\(listen.name);SharedAccessKey=\(listen.primaryKey)",
            signature: SharedAccessSignature.make(
                resource: base + "/bench", keyName: rule.name, key: rule.primaryKey, expiry: Date().addingTimeInterval(7200)))
        do {
            let result = try await body(node)
            try await node.http.shutdown()
            return result
        } catch {
            try? await node.http.shutdown()
            throw error
        }
    }

    /// A running node process and what it takes to send through it and watch its deliveries.
    struct MeasuredNode {
        var platform: Platform
        var process: NodeProcess
        var emulator: EmulatorProcess
        var http: HTTPClient
        var base: String
        /// The hub's Listen key, as devices confirm with it.
        var listenConnectionString: String
        var signature: String

        /// Sends one notification with `send` (its id) and measures until it is finished: the
        /// node's and the emulator's CPU time, the devices the emulator reached meanwhile (for
        /// a `repeated` send to devices reached before, the sends it accepted).
        func measure(
            _ kind: String, devices: Int, repeated: Bool = false, until settled: (() async throws -> Void)? = nil,
            _ send: (HTTPClient, String, String) async throws -> String
        ) async throws -> NodeRun {
            let endpoint = try emulator.endpoint(platform)
            let before = (node: try cpuSeconds(of: process.pid), emulator: try cpuSeconds(of: emulator.process.pid))
            let statsBefore = try await emulatorStats(http, endpoint: endpoint)
            let started = ContinuousClock.now, startedAt = Date()
            let id = try await send(http, base, signature)
            let finished = try await waitUntilFinished(
                http, base: base, id: id, signature: signature, endpoint: endpoint, devices: devices, pids: [process.pid])
            try await settled?()
            let seconds = (ContinuousClock.now - started).seconds
            let after = (node: try cpuSeconds(of: process.pid), emulator: try cpuSeconds(of: emulator.process.pid))
            let accepted = try await emulatorStats(http, endpoint: endpoint, since: startedAt)
            let run = NodeRun(
                platform: platform, kind: kind, devices: devices, state: finished.state, seconds: seconds,
                reached: repeated ? accepted.accepted - statsBefore.accepted : finished.reached - statsBefore.devices, nodeCPUSeconds: after.node - before.node,
                emulatorCPUSeconds: after.emulator - before.emulator, peakMegabytes: finished.peakMegabytes.first ?? 0,
                firstDevice: accepted.firstAccepted(after: startedAt), lastDevice: accepted.lastAccepted(after: startedAt)
            )
            say(
                String(
                    format: "  %@: %@ in %.2f s, %@ devices reached (%@/s), the first after %.2f s and the last after %.2f s; "
                        + "node CPU %.1f µs per notification, emulator %.1f µs; node peak RSS %d MB",
                    kind, run.state, run.seconds, run.reached.formatted(), Int(run.perSecond).formatted(), run.firstDevice ?? .nan,
                    run.lastDevice ?? .nan, run.nodeMicroseconds, run.emulatorMicroseconds, run.peakMegabytes))
            return run
        }
    }

    /// Sends a template notification (its properties `message`, `count` and `sender`) to the
    /// devices of the hub `bench` holding `tag`; its notification id.
    static func sendTemplate(_ http: HTTPClient, base: String, signature: String, tag: String) async throws -> String {
        try await postMessage(
            http, base: base, signature: signature, format: "template", tag: tag,
            body: #"{"message":"Benchmark","count":"3","sender":"bench"}"#)
    }

    /// A handle of `platform` for device `index`, in the form the emulator's open registry takes.
    static func benchHandle(_ platform: Platform, _ index: Int) -> String {
        switch platform {
        case .fcm: "bench:" + String(format: "%064x", index)
        default: String(format: "%064x", index)
        }
    }

    /// h2load's `requests` requests to `platform`'s emulator in a process of its own (4
    /// connections × 100 streams, as the node uses), each with a valid credential: the emulator's
    /// ceiling on this machine, and what h2load and the emulator spent per request.
    ///
    /// APNs requests each go to a device of their own, as a fan-out's do (h2load reads their URLs
    /// from a file): an emulator spends more on a device it has not reached yet than on one it
    /// has, so a ceiling of requests to one device would be one that no fan-out could reach. An
    /// FCM request names its device in the body, which h2load sends the same each time: its
    /// requests all go to one device.
    static func emulatorCeiling(platform: Platform, requests: Int, logger: Logger) async throws -> Ceiling? {
        guard which("h2load") != nil else { return nil }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-bench-ceiling-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let emulator = try await EmulatorProcess.start(directory: directory)
        defer { emulator.process.stop() }
        let credentials = try EmulatorCredentials.loadOrCreate(directory: emulator.directory)
        let endpoint = try emulator.endpoint(platform)
        let handle = benchHandle(platform, 1)
        let payload = directory + "/payload.json"
        var headers: [String]
        let url: String
        var urls: [String] = []
        switch platform {
        case .apns:
            let authorization = try await APNsTokenCache().authorization(
                teamID: credentials.apnsTeamID, keyID: credentials.apnsKeyID, privateKeyPEM: credentials.apnsPrivateKeyPEM
            )
            try Data(#"{"aps":{"alert":"Benchmark"}}"#.utf8).write(to: URL(fileURLWithPath: payload))
            headers = ["authorization: \(authorization)", "apns-topic: \(emulator.settings["HERALD_APNS_TOPIC"] ?? "")"]
            url = "\(endpoint)/3/device/\(handle)"
            urls = (0..<requests).map { "\(endpoint)/3/device/\(benchHandle(platform, $0))" }
        case .fcm:
            let token = try await fcmAccessToken(credentials, tokenURI: endpoint + "/token", emulator: emulator)
            let body = #"{"message":{"token":"\#(handle)","notification":{"title":"Benchmark","body":"one broadcast"}}}"#
            try Data(body.utf8).write(to: URL(fileURLWithPath: payload))
            headers = ["authorization: Bearer \(token)", "content-type: application/json"]
            url = "\(endpoint)/v1/projects/\(credentials.fcmProjectID)/messages:send"
        default:
            return nil
        }
        var target = [url]
        if !urls.isEmpty {
            let file = directory + "/urls.txt"
            try Data((urls.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: file))
            target = ["-i", file]
        }
        say(
            "ceiling: h2load → \(platform.rawValue) emulator process, \(requests.formatted()) requests\(urls.isEmpty ? "" : " to as many devices"), 4 connections × 100 streams…"
        )
        let emulatorBefore = try cpuSeconds(of: emulator.process.pid)
        let h2loadBefore = childrenCPUSeconds()
        let output = try await runProcess(
            "h2load", ["-n", "\(requests)", "-c", "4", "-m", "100", "-t", "1", "-d", payload] + headers.flatMap { ["-H", $0] } + target)
        let h2loadSeconds = childrenCPUSeconds() - h2loadBefore
        let emulatorSeconds = try cpuSeconds(of: emulator.process.pid) - emulatorBefore
        guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("finished in") }),
            let range = line.range(of: #"[0-9.]+ req/s"#, options: .regularExpression),
            let perSecond = Double(line[range].dropLast(6))
        else {
            say(output)
            return nil
        }
        guard output.contains(" 0 failed"), output.contains(" 0 errored") else {
            say(output)
            throw ValidationError("h2load's requests to the \(platform.rawValue) emulator failed")
        }
        let ceiling = Ceiling(
            platform: platform, requests: requests, perSecond: perSecond, h2loadCPUSeconds: h2loadSeconds, emulatorCPUSeconds: emulatorSeconds)
        say(
            String(
                format: "  %@; h2load CPU %.1f µs per request, emulator %.1f µs", String(line), ceiling.h2loadMicroseconds,
                ceiling.emulatorMicroseconds))
        return ceiling
    }

    /// An FCM access token from the emulator's token endpoint, for the emulator's service account.
    static func fcmAccessToken(_ credentials: EmulatorCredentials, tokenURI: String, emulator: EmulatorProcess) async throws -> String {
        let account = FCMServiceAccount(
            projectID: credentials.fcmProjectID, clientEmail: credentials.fcmClientEmail, privateKey: credentials.fcmPrivateKeyPEM,
            tokenURI: tokenURI, privateKeyID: credentials.fcmPrivateKeyID
        )
        let assertion = try FCMAccessTokenRequest.assertion(
            account: account, key: credentials.fcmPrivateKey, tokenURI: tokenURI, issuedAt: Date())
        var form = URLComponents()
        form.queryItems = [URLQueryItem(name: "grant_type", value: FCMAccessTokenRequest.grantType), URLQueryItem(name: "assertion", value: assertion)]
        let http = emulator.client()
        defer { _ = http.shutdown() }
        let response = try await exchange(
            http, "POST", tokenURI, body: form.percentEncodedQuery ?? "", contentType: "application/x-www-form-urlencoded")
        struct Token: Decodable { var access_token: String }
        guard response.status == 200, let token = try? JSONDecoder().decode(Token.self, from: Data(response.body.readableBytesView)) else {
            throw ValidationError("the FCM emulator's token endpoint answered \(response.status): \(String(buffer: response.body))")
        }
        return token.access_token
    }

    /// The CPU time (user and system) process `pid` has used, from `/proc/PID/stat`.
    static func cpuSeconds(of pid: Int32) throws -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else {
            throw ValidationError("cannot read /proc/\(pid)/stat")
        }
        guard let ticks = ProcessStat.cpuTicks(stat) else { throw ValidationError("/proc/\(pid)/stat has no CPU times") }
        return ticks / ProcessStat.ticksPerSecond
    }

    /// The CPU time of this process's children that ended and were waited for.
    static func childrenCPUSeconds() -> Double {
        usedCPUSeconds(RUSAGE_CHILDREN.rawValue)
    }

    /// The CPU time (user and system) this process has used.
    static func processCPUSeconds() -> Double {
        usedCPUSeconds(RUSAGE_SELF.rawValue)
    }

    private static func usedCPUSeconds(_ who: Int32) -> Double {
        var usage = rusage()
        getrusage(who, &usage)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1_000_000 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }
}
