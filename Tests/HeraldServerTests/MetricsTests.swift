import Foundation
import HTTPTypes
import HeraldCore
import HeraldEmulator
import HeraldHub
import HeraldMetrics
import HeraldServer
import HeraldStore
import HeraldTestSupport
import Hummingbird
import HummingbirdTesting
import Testing

/// `GET /metrics`: the counters and histograms move by exactly what was sent, through the
/// real providers and emulators; no device token, tag or user name reaches the page; the page
/// can ask for a bearer token; and `promtool` accepts it.
@Suite struct MetricsTests {
    /// Notifications with several outcome classes, one platform each so that the injected
    /// faults meet the one device they are meant for.
    @Test func theCountersMoveByExactlyWhatWasSent() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.router) { client in
                let alice = try await client.signUp("alice")
                let live = herald.apns.registerDevice(topic: TestHerald.topic)
                let dead = herald.apns.registerDevice(topic: TestHerald.topic)
                _ = try await client.register(alice, handle: live)
                _ = try await client.register(alice, handle: dead)
                _ = try await client.register(alice, handle: herald.fcm.registerDevice(), platform: "fcm")
                _ = try await client.register(alice, handle: herald.wns.registerChannel(), platform: "wns")
                herald.apns.unregister(token: dead)

                // APNs: one delivered, one channel expired (410; its registration is removed).
                try await notify(client, alice, pns: "apns")
                // FCM: throttled twice, then delivered.
                herald.fcm.injectFaults(.throttled, count: 2)
                try await notify(client, alice, pns: "fcm")
                // WNS: a server error on every attempt (3 with the tests' retry policy).
                herald.wns.injectFaults(.internalError, count: 3)
                try await notify(client, alice, pns: "wns")

                let page = try await scrape(client)
                let app = TestHerald.appHubName
                #expect(page.value("herald_notifications_accepted_total", ["hub": app]) == 3)
                #expect(page.samples(named: "herald_notifications_finished_total").map(\.labels) == [["hub": app, "state": "Completed"]])
                #expect(page.value("herald_notifications_finished_total", ["hub": app, "state": "Completed"]) == 3)
                let deliveries = page.samples(named: "herald_deliveries_total")
                #expect(
                    Set(deliveries.map { "\($0.labels["platform"]!) \($0.labels["outcome"]!) \(Int($0.value))" })
                        == ["apns Success 1", "apns ExpiredChannel 1", "fcm Success 1", "wns PnsServerError 1"],
                    "\(deliveries)"
                )
                #expect(deliveries.allSatisfy { $0.labels["hub"] == app })
                #expect(page.samples(named: "herald_channels_expired_total").map(\.labels) == [["hub": app, "platform": "apns"]])
                #expect(page.value("herald_channels_expired_total", ["hub": app, "platform": "apns"]) == 1)
                // FCM's credential has its default budget; its two 429s paused it (1 s, then 2 s).
                let budgets = page.samples(named: "herald_send_budget_per_minute")
                #expect(budgets.map { "\($0.labels["platform"]!) \(Int($0.value))" } == ["fcm 600000"], "\(budgets)")
                let waited = page.samples(named: "herald_send_budget_wait_seconds_total").first { $0.labels["platform"] == "fcm" }
                #expect((waited?.value ?? 0) >= 2.5, "\(String(describing: waited))")
                #expect(page.samples(named: "herald_send_budget_paused_seconds").contains { $0.labels["platform"] == "apns" }, "every credential in use")
                let retries = page.samples(named: "herald_push_retries_total")
                #expect(
                    Set(retries.map { "\($0.labels["hub"]!) \($0.labels["platform"]!) \($0.labels["cause"]!) \(Int($0.value))" })
                        == ["\(app) fcm Throttled 2", "\(app) wns PnsServerError 2"],
                    "\(retries)"
                )

                // Every request to a push service, with its status, and one latency each.
                let requests = page.samples(named: "herald_push_requests_total")
                #expect(
                    Set(requests.map { "\($0.labels["platform"]!) \($0.labels["status"]!) \(Int($0.value))" })
                        == ["apns 200 1", "apns 410 1", "fcm 429 2", "fcm 200 1", "wns 500 3"],
                    "\(requests)"
                )
                for (platform, count) in [("apns", 2.0), ("fcm", 3), ("wns", 3), ("webpush", 0)] {
                    #expect(page.value("herald_push_request_duration_seconds_count", ["platform": platform]) == count, "\(platform)")
                    #expect(page.value("herald_push_request_duration_seconds_bucket", ["platform": platform, "le": "+Inf"]) == count)
                }
                // One OAuth exchange each for FCM and WNS (the APNs token cache is the process's,
                // shared with other tests, so its signings are not counted here).
                #expect(page.value("herald_push_token_refreshes_total", ["platform": "fcm", "result": "success"]) == 1)
                #expect(page.value("herald_push_token_refreshes_total", ["platform": "wns", "result": "success"]) == 1)

                // HTTP requests by route pattern, method and status.
                #expect(page.value("herald_http_requests_total", ["route": "/api/accounts", "method": "POST", "status": "201"]) == 1)
                #expect(page.value("herald_http_requests_total", ["route": "/api/token", "method": "POST", "status": "200"]) == 1)
                #expect(page.value("herald_http_requests_total", ["route": "/api/register", "method": "POST", "status": "200"]) == 4)
                #expect(page.value("herald_http_requests_total", ["route": "/api/notifications", "method": "POST", "status": "200"]) == 3)
                #expect(page.value("herald_http_request_duration_seconds_count", ["route": "/api/notifications", "method": "POST"]) == 3)
                let puts = page.samples(named: "herald_http_requests_total").filter { $0.labels["method"] == "PUT" }
                #expect(puts.count == 1 && puts.first?.value == 4, "\(puts)")
                #expect(puts.first?.labels["route"] == "/api/register/{id}", "\(puts)")

                // Scrape-time gauges: the queue is empty, and the registrations left.
                #expect(page.value("herald_queue_waiting_notifications", ["hub": app]) == 0)
                #expect(page.value("herald_queue_processing_notifications", ["hub": app]) == 0)
                #expect(page.value("herald_queue_oldest_waiting_age_seconds", ["hub": app]) == 0)
                for (platform, count) in [("apns", 1.0), ("fcm", 1), ("wns", 1), ("webpush", 0)] {
                    #expect(page.value("herald_registrations", ["hub": app, "platform": platform]) == count, "\(platform)")
                }

                // The one HTTP/2 connection to the APNs emulator (TestHerald asks for one); those
                // AsyncHTTPClient opened to the FCM and WNS emulators; none to a Web Push service.
                let connected = Set(page.samples(named: "herald_push_connections").compactMap { $0.labels["platform"] })
                #expect(connected == ["apns", "fcm", "wns", "webpush"])
                #expect(page.value("herald_push_connections", ["platform": "apns"]) == 1)
                for platform in ["fcm", "wns"] {
                    #expect(page.value("herald_push_connections", ["platform": platform]) >= 1, "\(platform)")
                }
                #expect(page.value("herald_push_connections", ["platform": "webpush"]) == 0)

                // The server's credentials worked, or were not used (Web Push).
                for platform in ["apns", "fcm", "wns", "webpush"] {
                    #expect(page.value("herald_push_credential_failing", ["platform": platform, "hub": "*"]) == 0, "\(platform)")
                }

                // The scrape itself is counted, after its page.
                let again = try await scrape(client)
                #expect(again.value("herald_http_requests_total", ["route": "/metrics", "method": "GET", "status": "200"]) == 1)
                #expect(again.value("herald_notifications_accepted_total", ["hub": app]) == 3)
            }
        }
    }

    /// A notification accepted but not taken by a worker shows in the queue gauges, with its age.
    @Test func theQueueGaugesShowWhatWaits() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.router) { client in
                // No worker takes it: the hub's workers are stopped (accepting still works).
                herald.appHubEngine.stop()
                let accepted = Date().addingTimeInterval(-5)
                try await herald.appHubEngine.store.enqueueNotification(
                    NotificationRecord(
                        id: "waiting-1", tagExpression: "nobody", payloads: [PlatformPayload(platform: .apns, body: Data("{}".utf8))],
                        enqueuedAt: accepted
                    )
                )
                let page = try await scrape(client)
                let app = TestHerald.appHubName
                #expect(page.value("herald_queue_waiting_notifications", ["hub": app]) == 1)
                #expect(page.value("herald_queue_processing_notifications", ["hub": app]) == 0)
                let age = page.value("herald_queue_oldest_waiting_age_seconds", ["hub": app])
                #expect(age >= 4.9 && age < 120, "\(age)")
            }
        }
    }

    /// Nothing that identifies a device or a person is ever a label: not a device token, a
    /// tag, a user name, a registration id or the message.
    @Test func thePageHoldsNoDeviceTokenTagOrUserName() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.router) { client in
                let user = "zelda-\(UUID().uuidString.prefix(8).lowercased())"
                let headers = try await client.signUp(user)
                let apns = herald.apns.registerDevice(topic: TestHerald.topic)
                let fcm = herald.fcm.registerDevice()
                let channel = herald.wns.registerChannel()
                var ids: [String] = []
                ids.append(try await client.register(headers, handle: apns, tags: ["team-sapphire"]))
                ids.append(try await client.register(headers, handle: fcm, platform: "fcm", tags: ["team-sapphire"]))
                ids.append(try await client.register(headers, handle: channel, platform: "wns", tags: ["team-sapphire"]))
                herald.fcm.unregister(token: fcm)
                for pns in ["apns", "fcm", "wns"] { try await notify(client, headers, pns: pns, to: user, message: "secret-message-text") }
                // A path that is no route, or a method of the caller's own: no label either.
                try await client.execute(uri: "/\(apns)/nothing-here", method: .get) { _ in }
                try await client.execute(uri: "/health", method: HTTPRequest.Method("BREW-\(user)")!) { _ in }

                let page = try await scrape(client)
                #expect(page.value("herald_deliveries_total", ["hub": TestHerald.appHubName, "platform": "apns", "outcome": "Success"]) == 1)
                for secret in [apns, fcm, channel, user, "team-sapphire", "secret-message-text"] + ids {
                    #expect(!page.text.contains(secret), "the page shows \(secret)")
                }
                #expect(page.samples(named: "herald_http_requests_total").contains { $0.labels["method"] == "other" })
                // Every label value is one of a few bounded kinds.
                let routes = Set(page.samples(named: "herald_http_requests_total").compactMap { $0.labels["route"] })
                #expect(routes.allSatisfy { $0 == "NotFound" || $0.hasPrefix("/") }, "\(routes)")
                for sample in page.samples {
                    for (name, value) in sample.labels {
                        switch name {
                        // `*`: the server's own credentials.
                        case "hub": #expect(value == TestHerald.appHubName || value == "*")
                        case "platform": #expect(Platform(rawValue: value) != nil, "\(value)")
                        case "status": #expect(value == "none" || Int(value) != nil, "\(value)")
                        case "outcome", "cause": #expect(value.allSatisfy { $0.isLetter }, "\(value)")
                        case "state": #expect(NotificationState(rawValue: value) != nil, "\(value)")
                        case "method": #expect(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "other"].contains(value))
                        // A key id, a project id, a package SID, a public key: checked above to hold no secret.
                        case "route", "le", "result", "credential": break
                        default: Issue.record("unexpected label \(name)=\(value)")
                        }
                    }
                }
            }
        }
    }

    @Test func aMetricsTokenIsRequiredWhenSet() async throws {
        let token = "metrics-token-\(UUID().uuidString)"
        try await TestHerald.withHerald(configure: { $0.metricsToken = token }) { herald in
            try await herald.application().test(.router) { client in
                for headers: HTTPFields in [
                    [:], .bearer("wrong"), .bearer(token + "x"), .bearer(String(token.dropLast())), .basic("prometheus", token),
                    [.authorization: token],
                ] {
                    try await client.execute(uri: "/metrics", method: .get, headers: headers) { response in
                        #expect(response.status == .unauthorized, "\(headers)")
                        #expect(response.headers[.wwwAuthenticate]?.hasPrefix("Bearer") == true)
                        #expect(!response.body.string.contains("herald_"))
                    }
                }
                try await client.execute(uri: "/metrics", method: .get, headers: .bearer(token)) { response in
                    #expect(response.status == .ok)
                    #expect(response.headers[.contentType]?.hasPrefix("text/plain; version=0.0.4") == true)
                    #expect(response.body.string.contains("# TYPE herald_http_requests_total counter"))
                }
                // The refusals are counted like any answer.
                let page = try await scrape(client, token: token)
                #expect(page.value("herald_http_requests_total", ["route": "/metrics", "method": "GET", "status": "401"]) == 6)
            }
        }
    }

    /// `promtool check metrics` (Prometheus's own linter) on a page scraped over a socket
    /// after traffic on every family. Without promtool it is skipped, saying so, except in CI
    /// (`CI` set), where it must run.
    @Test func promtoolAcceptsThePage() async throws {
        guard let promtool = Self.promtool else {
            let ci = ProcessInfo.processInfo.environment["CI"].map { !$0.isEmpty && $0 != "false" } ?? false
            #expect(!ci, "CI must have promtool (Debian's prometheus package; .ci/run installs it)")
            if !ci { print("promtoolAcceptsThePage: promtool not found on PATH: skipped (apt-get install prometheus)") }
            return
        }
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.live) { client in
                let alice = try await client.signUp("alice")
                let token = herald.apns.registerDevice(topic: TestHerald.topic)
                _ = try await client.register(alice, handle: token)
                herald.apns.injectFaults(.throttled, count: 1)
                try await notify(client, alice, pns: "apns")
                let page = try await scrape(client)
                #expect(!page.samples(named: "herald_deliveries_total").isEmpty)
                let directory = try PythonInterop.temporaryDirectory("herald-metrics")
                defer { try? FileManager.default.removeItem(at: directory) }
                let file = directory.appendingPathComponent("metrics.txt")
                try Data(page.text.utf8).write(to: file)
                // promtool reads the page on standard input.
                let output = try await PythonInterop.run(
                    program: URL(fileURLWithPath: "/bin/sh"), arguments: ["-c", "\"$0\" check metrics < \"$1\"", promtool, file.path]
                )
                #expect(output.status == 0, "\(output.transcript)\n--- page\n\(page.text)")
            }
        }
    }

    /// The metrics table of docs/operations.md lists every family with its type and labels, as
    /// declared.
    @Test func theOperationsPageListsEveryFamily() throws {
        let page = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/operations.md")
        let text = try String(contentsOf: page, encoding: .utf8)
        #expect(Set(HeraldMetrics.families.map(\.name)).count == HeraldMetrics.families.count)
        for family in HeraldMetrics.families {
            let labels = family.labels.map { "`\($0)`" }.joined(separator: ", ")
            #expect(text.contains("| `\(family.name)` | \(family.kind.rawValue) | \(labels) |"), "docs/operations.md: \(family.name)")
        }
    }

    /// `promtool` on the `PATH`, if any.
    static let promtool: String? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/promtool" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    /// `POST /api/notifications?pns=…&to_tag=…` and waits for its outcome.
    private func notify(
        _ client: some TestClientProtocol, _ headers: HTTPFields, pns: String, to user: String = "alice", message: String = "hello"
    ) async throws {
        try await client.execute(
            uri: "/api/notifications?pns=\(pns)&to_tag=\(user)", method: .post, headers: headers, body: .json("\"\(message)\"")
        ) { response in
            guard response.status == .ok else { throw TestFailure("notify \(pns): \(response.status) \(response.body.string)") }
            guard response.body.string.contains(#""state":"Completed""#) else {
                throw TestFailure("notify \(pns) did not complete: \(response.body.string)")
            }
        }
    }

    private func scrape(_ client: some TestClientProtocol, token: String? = nil) async throws -> PrometheusPage {
        try await client.execute(uri: "/metrics", method: .get, headers: token.map { .bearer($0) } ?? [:]) { response in
            guard response.status == .ok else { throw TestFailure("GET /metrics: \(response.status)") }
            return try PrometheusPage(response.body.string)
        }
    }
}
