import ArgumentParser
import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldHub
import HeraldServer
import HeraldStore
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle

/// How fast the console's pages answer over a hub of many devices: the devices browser with
/// its count (unfiltered, by tag expression, user, platform, handle prefix, a page deep in), the
/// hub's page and the hub list, through the HTTP server with a signed-in session. The
/// reference is `GET /health` on the same server in the same run.
extension Bench {
    struct ConsoleTiming {
        var what: String
        var milliseconds: Double
    }

    static func consoleReads(_ store: BenchStore, devices: Int, logger: Logger) async throws -> (reference: Double, timings: [ConsoleTiming]) {
        try await withRuntime(store, logger: logger) { runtime in
            say("console: seeding \(devices.formatted()) registrations (users, tags, two platforms)…")
            let seeded = try await seedConsoleDevices(runtime.appHubEngine.store, count: devices)
            say(String(format: "  seeded in %.1f s", seeded))
            var server = ServerConfiguration()
            server.port = 0
            server.bcryptCost = 4
            let console = try Console(hubs: runtime.registry, configuration: server)
            let (_, password) = try await console.operators.create(name: "bench")
            let (ports, portContinuation) = AsyncStream<Int>.makeStream()
            let app = buildApplication(
                hubs: runtime.registry, devices: runtime.userDevices, appStore: runtime.appStore, configuration: server,
                console: console, onServerRunning: { portContinuation.yield($0) }, logger: logger
            )
            let group = ServiceGroup(services: [app], logger: logger)
            return try await withThrowingTaskGroup(of: (Double, [ConsoleTiming])?.self) { tasks in
                tasks.addTask {
                    try await group.run()
                    return nil
                }
                var iterator = ports.makeAsyncIterator()
                guard let port = await iterator.next() else { throw ValidationError("the server did not start") }
                // Redirects are the answers under test (after a sign-in), not to be followed.
                var configuration = HTTPClient.Configuration()
                configuration.redirectConfiguration = .disallow
                let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
                do {
                    let result = try await measureConsole(
                        base: "http://127.0.0.1:\(port)", http: http, password: password, hub: runtime.appHubName, devices: devices
                    )
                    try await http.shutdown()
                    await group.triggerGracefulShutdown()
                    return result
                } catch {
                    try? await http.shutdown()
                    await group.triggerGracefulShutdown()
                    throw error
                }
            }
        }
    }

    private static func measureConsole(
        base: String, http: HTTPClient, password: String, hub: String, devices count: Int
    ) async throws -> (Double, [ConsoleTiming]) {
        let session = try await consoleSession(base: base, http: http, password: password)
        let devices = "/console/hubs/\(hub)/devices"
        let pages: [(String, String)] = [
            ("devices, all (count and first page)", devices),
            ("devices, tag expression news (10%)", devices + "?expression=news"),
            ("devices, news && !username:user-7", devices + "?expression=news+%26%26+%21username%3Auser-7"),
            ("devices, one user (about 100)", devices + "?user=user-42"),
            ("devices, platform fcm (25%)", devices + "?platform=fcm"),
            ("devices, handle prefix", devices + "?handle=00000000000000000000000000000000000000000000000000000000000001"),
            ("devices, a page 90% of the way in", devices + "?after=" + String(format: "bench-%09d", count * 9 / 10)),
            ("hub page (counts per platform, queue)", "/console/hubs/\(hub)"),
            ("hub list", "/console/hubs"),
        ]
        let reference = try await median(5) { try await get(http, base + "/health", cookie: nil) }
        var timings: [ConsoleTiming] = []
        for (what, path) in pages {
            let milliseconds = try await median(5) { try await get(http, base + path, cookie: session) }
            say(String(format: "  %@: %.1f ms", what, milliseconds))
            timings.append(ConsoleTiming(what: what, milliseconds: milliseconds))
        }
        return (reference, timings)
    }

    /// Signs in as the operator `bench` and chooses a password: the session cookie.
    private static func consoleSession(base: String, http: HTTPClient, password: String) async throws -> String {
        let form = try await request(http, "GET", base + "/console/sign-in")
        guard let signInCookie = cookie(form.headers, "herald_console_signin") else { throw ValidationError("no sign-in form") }
        let signedIn = try await request(
            http, "POST", base + "/console/sign-in", cookie: "herald_console_signin=\(signInCookie)",
            form: ["name": "bench", "password": password, "csrf": signInCookie]
        )
        guard let token = cookie(signedIn.headers, "herald_console") else { throw ValidationError("the console sign-in failed") }
        let session = "herald_console=\(token)"
        let page = try await request(http, "GET", base + "/console/password", cookie: session)
        guard let range = page.body.range(of: #"name="csrf" value=""#) else { throw ValidationError("no CSRF token") }
        let csrf = String(page.body[range.upperBound...].prefix { $0 != "\"" })
        _ = try await request(http, "POST", base + "/console/password", cookie: session, form: ["current": password, "new": "a bench password", "csrf": csrf])
        return session
    }

    private static func cookie(_ headers: HTTPHeaders, _ name: String) -> String? {
        headers["set-cookie"].lazy.compactMap { header -> String? in
            let pair = header.split(separator: ";")[0].split(separator: "=", maxSplits: 1)
            return pair.count == 2 && pair[0] == name ? String(pair[1]) : nil
        }.first
    }

    private static func request(
        _ http: HTTPClient, _ method: String, _ url: String, cookie: String? = nil, form: [String: String]? = nil
    ) async throws -> (status: UInt, headers: HTTPHeaders, body: String) {
        let body = form.map { fields in
            fields.map { "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")" }.joined(separator: "&")
        }
        let response = try await exchange(
            http, method, url, body: body, contentType: "application/x-www-form-urlencoded", headers: cookie.map { ["cookie": $0] } ?? [:]
        )
        return (response.status, response.headers, String(buffer: response.body))
    }

    private static func get(_ http: HTTPClient, _ url: String, cookie: String?) async throws {
        let response = try await request(http, "GET", url, cookie: cookie)
        guard response.status == 200 else { throw ValidationError("GET \(url) answered \(response.status)") }
    }

    /// The median time of `runs` runs of `work`, in ms.
    private static func median(_ runs: Int, _ work: () async throws -> Void) async throws -> Double {
        var times: [Double] = []
        for _ in 0..<runs {
            let start = ContinuousClock.now
            try await work()
            times.append((ContinuousClock.now - start).seconds * 1000)
        }
        return times.sorted()[times.count / 2]
    }

    /// `count` registrations: every tenth tagged `news`, each of one of 10,000 users
    /// (`username:user-N`), a quarter on FCM.
    static func seedConsoleDevices(_ store: any HeraldStore, count: Int) async throws -> Double {
        try await seedRegistrations(store, count: count) { i in
            var tags = ["username:user-\(i % 10_000)"]
            if i % 10 == 0 { tags.append("news") }
            return Registration(
                id: String(format: "bench-%09d", i), platform: i % 4 == 0 ? .fcm : .apns, handle: String(format: "%064x", i), tags: tags
            )
        }
    }
}
