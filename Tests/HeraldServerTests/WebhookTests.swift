import Foundation
import HeraldCore
import HeraldEmulator
import HeraldHub
import HeraldPush
import HeraldStore
import HeraldTLS
import HeraldTestSupport
import Testing

/// Delivery events to an app's backend: endpoints managed through the hub REST API, events
/// caused by real sends through the emulators, posted to a real HTTPS receiver that verifies
/// every signature.
@Suite("Webhooks: events posted to the app's backend")
struct WebhookTests {
    /// A poster that trusts the test's CA and may reach 127.0.0.1 only.
    static func poster(_ authority: CertificateAuthority, plainHTTP: HostAllowList = []) throws -> WebhookPoster {
        var configuration = WebhookPoster.Configuration()
        configuration.allowedHosts = ["127.0.0.1"]
        configuration.plainHTTPHosts = plainHTTP
        configuration.trustRoots = [try authority.sslCertificate]
        configuration.timeout = .seconds(30)
        return WebhookPoster(configuration: configuration)
    }

    /// Runs `body` with a receiver and a hub test server whose hubs post through a poster
    /// trusting the receiver, retrying after `retry`.
    static func withReceiverAndServer(
        retry: WebhookRetrySchedule = WebhookRetrySchedule(initialDelay: .milliseconds(100), maximumDelay: .milliseconds(400), window: .seconds(3600)),
        configure: @escaping @Sendable (inout HubEngine.Configuration) -> Void = { _ in },
        _ body: @escaping @Sendable (WebhookReceiver, HubTestServer) async throws -> Void
    ) async throws {
        let authority = try CertificateAuthority.makeEphemeral()
        let poster = try poster(authority)
        do {
            try await WebhookReceiver.with(authority: authority) { receiver in
                do {
                    try await HubTestServer.withServer(configureHubs: { hubs in
                        hubs.webhookPoster = poster
                        hubs.webhookPollInterval = .milliseconds(50)
                        hubs.webhookRetry = retry
                        configure(&hubs)
                    }) { server in
                        try await body(receiver, server)
                    }
                } catch {
                    try? await poster.shutdown()
                    throw error
                }
                // The poster closes its connections before the receiver stops: a TLS server
                // waits 5 s at shutdown for each pooled connection left open.
                try await poster.shutdown()
            }
        } catch {
            try? await poster.shutdown()
            throw error
        }
    }

    static let json = [("Content-Type", "application/json")]

    /// Waits until `condition` holds, asking every 20 ms; fails after 30 s.
    static func eventuallyAsync(_ what: String, _ condition: () async -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while await !condition() {
            guard ContinuousClock.now < deadline else { throw TestFailure("\(what): still not true after 30 s") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// `POST /{hub}/webhooks`; requires 201 and returns the endpoint's id and secret.
    static func addEndpoint(_ server: HubTestServer, url: String, events: [String] = ["*"]) async throws -> (id: String, secret: String) {
        let body = try JSONSerialization.data(withJSONObject: ["url": url, "events": events])
        let response = try await server.wire(.POST, "/\(HubTestServer.hubName)/webhooks", headers: json, body: body)
        try #require(response.status == 201, "POST webhooks: \(response.status) \(response.text)")
        let document = try #require(try response.json() as? [String: Any])
        let id = try #require(document["id"] as? String)
        let secret = try #require(document["secret"] as? String)
        #expect(response.header("Location")?.hasSuffix("/\(HubTestServer.hubName)/webhooks/\(id)") == true)
        return (id, secret)
    }

    /// Rotates the endpoint's secret and returns the new one.
    static func rotateSecret(_ server: HubTestServer, _ id: String, previousValidFor seconds: Int) async throws -> String {
        let rotated = try await server.wire(
            .POST, "/\(HubTestServer.hubName)/webhooks/\(id)/rotate-secret", headers: json,
            body: Data(#"{"previousSecretValidFor": \#(seconds)}"#.utf8)
        )
        try #require(rotated.status == 200, "rotate: \(rotated.status) \(rotated.text)")
        return try #require((try rotated.json() as? [String: Any])?["secret"] as? String)
    }

    static func endpointDocument(_ server: HubTestServer, _ id: String) async throws -> [String: Any] {
        let response = try await server.wire(.GET, "/\(HubTestServer.hubName)/webhooks/\(id)")
        try #require(response.status == 200, "GET webhooks/\(id): \(response.status) \(response.text)")
        #expect(!response.text.contains("whsec_"), "a secret is shown once, when it is made")
        return try #require(try response.json() as? [String: Any])
    }

    @Test func aCompletedSendAndAGoneTokenReachTheReceiverSigned() async throws {
        try await Self.withReceiverAndServer { receiver, server in
            let endpoint = try await Self.addEndpoint(server, url: receiver.url())
            let apns = server.herald.apns
            let live = apns.registerDevice(topic: TestHerald.topic)
            let gone = apns.registerDevice(topic: TestHerald.topic)
            apns.unregister(token: gone)
            let engine = try #require(try await server.registry.engine(named: HubTestServer.hubName))
            try await engine.store.insertRegistrations([
                Registration(id: "live", platform: .apns, handle: live, tags: ["team"]),
                Registration(id: "gone", platform: .apns, handle: gone, tags: ["team"]),
            ])

            let sent = try await server.send(format: "apple", #"{"aps":{"alert":"hello"}}"#, tags: "team")
            let notification = try server.acceptedID(sent)
            _ = try await server.finishedDetails(notification)
            #expect(apns.notifications(for: live).count == 1)

            try await eventually("the receiver got notification.completed and registration.expired") {
                let types = Set(receiver.received.compactMap(\.type))
                return types.contains("notification.completed") && types.contains("registration.expired")
            }
            let received = receiver.received
            for request in received {
                #expect(request.isSigned(with: endpoint.secret), "every event is signed with the endpoint's secret: \(request.body)")
                #expect(!request.isSigned(with: WebhookSecret.random().text), "and not with any other")
                #expect(abs(Double(request.timestamp) - Date().timeIntervalSince1970) < 300)
            }
            let completed = try #require(received.first { $0.type == "notification.completed" })
            #expect(completed.data["notificationId"] as? String == notification)
            #expect(completed.data["state"] as? String == "Completed")
            #expect(completed.data["devices"] as? Int == 2)
            let outcomes = try #require((completed.data["outcomes"] as? [String: Any])?["apns"] as? [String: Int])
            #expect(outcomes == ["Success": 1, "ExpiredChannel": 1])
            #expect(completed.id == "evt_notification.completed_\(notification)")

            let expired = try #require(received.first { $0.type == "registration.expired" })
            #expect(expired.data["registrationId"] as? String == "gone")
            #expect(expired.data["platform"] as? String == "apns")
            #expect(expired.data["notificationId"] as? String == notification)

            // The delivery log: one delivered attempt per event; nothing waits.
            let document = try await Self.endpointDocument(server, endpoint.id)
            let attempts = try #require(document["attempts"] as? [[String: Any]])
            #expect(attempts.count == received.count)
            #expect(attempts.allSatisfy { $0["outcome"] as? String == "delivered" && $0["statusCode"] as? Int == 204 })
            #expect(document["pending"] as? Int == 0)
        }
    }

    /// Receipts reach the receiver as counts: the receipts of one report interval in one
    /// `notification.confirmed` event with the notification's totals, not an event per device.
    @Test func receiptsReachTheReceiverAsCountsNotOneEventPerDevice() async throws {
        try await Self.withReceiverAndServer(configure: { $0.confirmedEventInterval = .milliseconds(500) }) { receiver, server in
            let endpoint = try await Self.addEndpoint(server, url: receiver.url(), events: ["notification.confirmed"])
            let apns = server.herald.apns
            let tokens = (0..<5).map { _ in apns.registerDevice(topic: TestHerald.topic) }
            let engine = try #require(try await server.registry.engine(named: HubTestServer.hubName))
            try await engine.store.insertRegistrations(
                tokens.enumerated().map { Registration(id: "r\($0.offset)", platform: .apns, handle: $0.element, tags: ["team"]) })
            let notification = try server.acceptedID(try await server.send(format: "apple", #"{"aps":{"alert":"hello"}}"#, tags: "team"))
            _ = try await server.finishedDetails(notification)

            func confirm(_ token: String) async throws {
                let answer = try await ReceiptTests.confirm(server, #"{"notificationId":"\#(notification)","platform":"apns","pushChannel":"\#(token)"}"#)
                #expect(answer.status == 204, "\(answer.text)")
            }
            // Four devices confirm, one of them twice: one event, with their count.
            for token in tokens.prefix(4) + [tokens[0]] { try await confirm(token) }
            try await eventually("a notification.confirmed event") { receiver.received.contains { $0.type == "notification.confirmed" } }
            try await Task.sleep(for: .milliseconds(800))
            var events = receiver.received.filter { $0.type == "notification.confirmed" }
            #expect(events.count == 1, "\(events.map(\.body))")
            let first = try #require(events.first)
            #expect(first.isSigned(with: endpoint.secret))
            #expect(first.data["notificationId"] as? String == notification)
            #expect(first.data["confirmed"] as? [String: Int] == ["apns": 4])
            #expect(first.data["devices"] as? Int == 4)

            // The last device later: another event with the new total.
            try await confirm(tokens[4])
            try await eventually("a second notification.confirmed event") { receiver.received.filter { $0.type == "notification.confirmed" }.count == 2 }
            events = receiver.received.filter { $0.type == "notification.confirmed" }
            #expect(events.last?.data["confirmed"] as? [String: Int] == ["apns": 5])
            #expect(events.last?.id != first.id)
        }
    }

    @Test func aRefusedCredentialAndItsRecoveryReachTheReceiver() async throws {
        try await Self.withReceiverAndServer { receiver, server in
            _ = try await Self.addEndpoint(server, url: receiver.url(), events: ["credential.failing", "credential.recovered"])
            let apns = server.herald.apns
            let device = apns.registerDevice(topic: TestHerald.topic)
            let engine = try #require(try await server.registry.engine(named: HubTestServer.hubName))
            try await engine.store.insertRegistrations([Registration(id: "one", platform: .apns, handle: device, tags: ["team"])])

            // APNs refuses the provider token once: the send fails, and the credential is failing.
            apns.injectFaults(Fault(status: 403, reason: "InvalidProviderToken"), count: 1)
            let refused = try server.acceptedID(try await server.send(format: "apple", #"{"aps":{"alert":"one"}}"#, tags: "team"))
            _ = try await server.finishedDetails(refused)
            #expect(apns.notifications(for: device).isEmpty)
            try await eventually("the receiver got credential.failing") { receiver.received.contains { $0.type == "credential.failing" } }
            let failing = try #require(receiver.received.first { $0.type == "credential.failing" })
            #expect(failing.data["platform"] as? String == "apns")
            #expect(failing.data["method"] != nil)
            #expect((failing.data["error"] as? String)?.contains("InvalidProviderToken") == true, "\(failing.body)")
            #expect(!failing.body.contains("BEGIN PRIVATE KEY") && !failing.body.contains("bearer"), "no secret in the event")
            #expect(!receiver.received.contains { $0.type == "credential.recovered" })

            // The next send is accepted: the credential works again.
            let accepted = try server.acceptedID(try await server.send(format: "apple", #"{"aps":{"alert":"two"}}"#, tags: "team"))
            _ = try await server.finishedDetails(accepted)
            #expect(apns.notifications(for: device).count == 1)
            try await eventually("the receiver got credential.recovered") { receiver.received.contains { $0.type == "credential.recovered" } }
            let recovered = try #require(receiver.received.first { $0.type == "credential.recovered" })
            #expect(recovered.data["platform"] as? String == "apns")
            #expect(receiver.received.filter { $0.type == "credential.failing" }.count == 1, "one event per change")
        }
    }

    @Test func aFailingEndpointIsRetriedWithTheSameIdThenSucceeds() async throws {
        try await Self.withReceiverAndServer { receiver, server in
            let endpoint = try await Self.addEndpoint(server, url: receiver.url(), events: ["notification.completed"])
            receiver.answer([503, 500])
            let test = try await server.wire(.POST, "/\(HubTestServer.hubName)/webhooks/\(endpoint.id)/test")
            try #require(test.status == 202, "POST test: \(test.status) \(test.text)")
            let eventID = try #require((try test.json() as? [String: Any])?["eventId"] as? String)

            try await eventually("the third attempt succeeded") { receiver.received.count >= 3 }
            let received = receiver.received
            #expect(received.map(\.answered) == [503, 500, 204])
            #expect(received.allSatisfy { $0.id == eventID && $0.isSigned(with: endpoint.secret) }, "one event, tried again under its id")
            #expect(received.first?.type == "webhook.test")
            #expect(received.first?.body == received.last?.body, "the same body every time")

            try await Self.eventuallyAsync("the delivery log has the three attempts") {
                ((try? await Self.endpointDocument(server, endpoint.id))?["attempts"] as? [[String: Any]])?.count == 3
            }
            let attempts = try #require(try await Self.endpointDocument(server, endpoint.id)["attempts"] as? [[String: Any]])
            #expect(attempts.map { $0["outcome"] as? String } == ["delivered", "retrying", "retrying"])
            #expect(attempts.map { $0["attempt"] as? Int } == [3, 2, 1])
            #expect(attempts.map { $0["statusCode"] as? Int } == [204, 500, 503])
            #expect(attempts.last?["error"] as? String == "the endpoint answered 503")
        }
    }

    @Test func anEndpointFailingForTheWholeWindowIsDisabledUntilEnabledByHand() async throws {
        let window = WebhookRetrySchedule(initialDelay: .milliseconds(100), maximumDelay: .milliseconds(100), window: .milliseconds(350))
        try await Self.withReceiverAndServer(retry: window) { receiver, server in
            let endpoint = try await Self.addEndpoint(server, url: receiver.url())
            receiver.answer(Array(repeating: 500, count: 100))
            _ = try await server.wire(.POST, "/\(HubTestServer.hubName)/webhooks/\(endpoint.id)/test")
            try await Self.eventuallyAsync("the endpoint is disabled") {
                (try? await Self.endpointDocument(server, endpoint.id))?["enabled"] as? Bool == false
            }
            let disabled = try await Self.endpointDocument(server, endpoint.id)
            #expect((disabled["disabledReason"] as? String)?.contains("the endpoint answered 500") == true)
            let attempts = try #require(disabled["attempts"] as? [[String: Any]])
            #expect(attempts.first?["outcome"] as? String == "gave-up")
            #expect(attempts.count >= 2)
            let tries = receiver.received.count

            // Disabled, it gets nothing: a test event is recorded for nobody.
            receiver.answer([])
            let listed = try await server.wire(.GET, "/\(HubTestServer.hubName)/webhooks")
            #expect(listed.status == 200 && !listed.text.contains("whsec_"))
            let enabled = try await server.wire(.POST, "/\(HubTestServer.hubName)/webhooks/\(endpoint.id)/enable")
            #expect(enabled.status == 200)
            #expect((try enabled.json() as? [String: Any])?["enabled"] as? Bool == true)
            _ = try await server.wire(.POST, "/\(HubTestServer.hubName)/webhooks/\(endpoint.id)/test")
            try await eventually("enabled again, the endpoint gets events") { receiver.received.count == tries + 1 }
            #expect(receiver.received.last?.answered == 204)
        }
    }

    /// Standard Webhooks' own Python library verifies what Herald posts: test events signed
    /// with the endpoint's secret, and after a rotation with the new one and the previous one.
    @Test(.enabled("needs python3 with standardwebhooks: pip install standardwebhooks") { await PythonInterop.canImport("standardwebhooks") })
    func standardWebhooksLibraryVerifiesTheSignatures() async throws {
        try await Self.withReceiverAndServer { receiver, server in
            let endpoint = try await Self.addEndpoint(server, url: receiver.url())
            for _ in 0..<2 { _ = try await server.wire(.POST, "/\(HubTestServer.hubName)/webhooks/\(endpoint.id)/test") }
            try await eventually("two test events arrived") { receiver.received.count == 2 }
            let newSecret = try await Self.rotateSecret(server, endpoint.id, previousValidFor: 3600)
            _ = try await server.wire(.POST, "/\(HubTestServer.hubName)/webhooks/\(endpoint.id)/test")
            try await eventually("the third test event arrived") { receiver.received.count == 3 }

            let received = receiver.received
            var requests: [[String: Any]] = []
            for (index, request) in received.enumerated() {
                let secrets = index < 2 ? [endpoint.secret] : [newSecret, endpoint.secret]
                for secret in secrets {
                    requests.append([
                        "secret": secret, "id": request.id, "timestamp": request.timestamp, "signature": request.signature, "body": request.body,
                    ])
                }
            }
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("herald-webhooks-\(UUID().uuidString).json")
            defer { try? FileManager.default.removeItem(at: file) }
            try JSONSerialization.data(withJSONObject: requests).write(to: file)
            let verified = try await PythonInterop.run("webhook_verify.py", arguments: [file.path])
            #expect(verified.status == 0, "\(verified.transcript)")
            #expect(verified.stdout.contains(#""verified": 4"#), "\(verified.stdout)")
        }
    }

    @Test func aRotatedSecretSignsBesideThePreviousOneUntilItExpires() async throws {
        try await Self.withReceiverAndServer { receiver, server in
            let endpoint = try await Self.addEndpoint(server, url: receiver.url())
            let newSecret = try await Self.rotateSecret(server, endpoint.id, previousValidFor: 3600)
            #expect(newSecret != endpoint.secret)
            _ = try await server.wire(.POST, "/\(HubTestServer.hubName)/webhooks/\(endpoint.id)/test")
            try await eventually("the test event arrived") { receiver.received.count == 1 }
            let first = try #require(receiver.received.first)
            #expect(first.signature.split(separator: " ").count == 2)
            #expect(first.isSigned(with: newSecret) && first.isSigned(with: endpoint.secret))

            // With no time for the previous secret, only the new one signs.
            let newest = try await Self.rotateSecret(server, endpoint.id, previousValidFor: 0)
            _ = try await server.wire(.POST, "/\(HubTestServer.hubName)/webhooks/\(endpoint.id)/test")
            try await eventually("the second test event arrived") { receiver.received.count == 2 }
            let second = receiver.received[1]
            #expect(second.signature.split(separator: " ").count == 1)
            #expect(second.isSigned(with: newest) && !second.isSigned(with: newSecret))
        }
    }

    @Test func badInputIsRefusedPreciselyAndChangesNothing() async throws {
        try await Self.withReceiverAndServer { receiver, server in
            let path = "/\(HubTestServer.hubName)/webhooks"
            func post(_ json: String) async throws -> WireResponse {
                try await server.wire(.POST, path, headers: Self.json, body: Data(json.utf8))
            }
            let cases: [(String, String)] = [
                (#"{"url": "http://127.0.0.1:1/events", "events": ["*"]}"#, "plain http is not allowed"),
                (#"{"url": "https://hooks.example.com/events", "events": ["*"]}"#, "not an allowed webhook host"),
                (#"{"url": "\#(receiver.url())", "events": ["notification.sent"]}"#, "unknown webhook event type"),
                (#"{"url": "\#(receiver.url())", "events": []}"#, "at least one event type"),
                (#"{"url": "\#(receiver.url())", "events": ["*"], "secret": "letmein"}"#, "whsec_"),
                (#"{"url": "https://user:pw@127.0.0.1/x", "events": ["*"]}"#, "no user or password"),
                (#"{"events": ["*"]}"#, "not JSON of the form"),
                ("not json", "not JSON of the form"),
            ]
            for (body, message) in cases {
                let response = try await post(body)
                #expect(response.status == 400, "\(body): \(response.status)")
                #expect(response.text.contains(message), "\(body): \(response.text)")
                #expect(!response.text.contains("letmein"), "a refused secret is not repeated")
            }
            let listed = try await server.wire(.GET, path)
            #expect(listed.status == 200)
            #expect((try listed.json() as? [String: Any])?["endpoints"] as? [Any] != nil)
            #expect(((try listed.json() as? [String: Any])?["endpoints"] as? [Any])?.isEmpty == true, "nothing was added")
            #expect(try await server.wire(.GET, "\(path)/we_missing").status == 404)
            #expect(try await server.wire(.DELETE, "\(path)/we_missing").status == 404)
            #expect(try await server.wire(.POST, "\(path)/we_missing/test").status == 404)
            let badValidity = try await server.wire(
                .POST, "\(path)/we_missing/rotate-secret", headers: Self.json, body: Data(#"{"previousSecretValidFor": -1}"#.utf8)
            )
            #expect(badValidity.status == 400)

            // Only a key with Manage may touch webhooks.
            let listen = try await server.wire(.GET, path, auth: .listen)
            #expect(listen.status == 401 || listen.status == 403, "\(listen.status)")

            // A redirect is not followed: the attempt fails and is retried.
            let moved = try await Self.addEndpoint(server, url: receiver.url("/moved"))
            _ = try await server.wire(.POST, "\(path)/\(moved.id)/test")
            try await Self.eventuallyAsync("the redirect was recorded as a failure") {
                ((try? await Self.endpointDocument(server, moved.id))?["attempts"] as? [[String: Any]])?.first?["statusCode"] as? Int == 308
            }
            let log = try #require(try await Self.endpointDocument(server, moved.id)["attempts"] as? [[String: Any]])
            #expect((log.first?["error"] as? String)?.contains("redirect, which is not followed") == true)
            #expect(receiver.received.isEmpty, "the redirect's target got nothing")

            let removed = try await server.wire(.DELETE, "\(path)/\(moved.id)")
            #expect(removed.status == 204)
            #expect(try await server.wire(.GET, "\(path)/\(moved.id)").status == 404)
        }
    }
}
