import Foundation
import HeraldCore
import HeraldEmulator
import HeraldHub
import HeraldServer
import HeraldStore
import HeraldTLS
import HeraldTestSupport
import Testing

/// Runs the Python scripts `Tests/Interop/hub_*.py`, which drive a live Herald's hub REST API
/// over TLS with two independent clients of the cloud hub's REST API from PyPI, then checks
/// on the emulated devices that what the scripts sent arrived.
enum HubInterop {
    static let install = "pip install azure-notification-hub-unofficial notificationhubs-rest-python"

    /// A temporary directory holding Herald's CA certificate (`ca.pem`), for `HERALD_CA_FILE`.
    static func directory(with server: HubTestServer) throws -> URL {
        let url = try PythonInterop.temporaryDirectory("herald-hub-interop")
        try server.authority.certificatePEM.write(to: url.appendingPathComponent("ca.pem"), atomically: true, encoding: .utf8)
        return url
    }

    /// The variables every script reads: the hub, its full-access connection string over TLS,
    /// the CA, where to write the results, and a word that makes the run's messages unique.
    static func environment(_ server: HubTestServer, directory: URL, run: String) -> [String: String] {
        [
            "HERALD_HUB_CONNECTION_STRING": server.connectionString(.tls),
            "HERALD_HUB_NAME": HubTestServer.hubName,
            "HERALD_CA_FILE": directory.appendingPathComponent("ca.pem").path,
            "HERALD_RESULTS_FILE": directory.appendingPathComponent("results.json").path,
            "HERALD_RUN": run,
        ]
    }

    /// A JSON text in one canonical form (keys sorted), to compare payloads whatever their
    /// spacing and key order; `nil` when it is not JSON.
    static func canonicalJSON(_ text: String) -> String? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]),
            let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .fragmentsAllowed])
        else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    static func results<T: Decodable>(_ type: T.Type, in directory: URL) throws -> T {
        try JSONDecoder().decode(type, from: Data(contentsOf: directory.appendingPathComponent("results.json")))
    }
}

@Suite("Hub REST API interop with Python clients from PyPI", .timeLimit(.minutes(3)))
struct HubInteropTests {
    /// What `hub_unofficial_client.py` reports it sent.
    struct UnofficialResults: Decodable {
        var webpush: [String]
        var apns: [String]
        var notifications: [String: String]
    }

    @Test(
        "azure-notification-hub-unofficial: installations, sends, test send, outcome details, schedules, registrations",
        .enabled("needs python3 with azure_notification_hub: \(HubInterop.install)") {
            await PythonInterop.canImport("azure_notification_hub")
        }
    )
    func unofficialClient() async throws {
        try await HubTestServer.withServer { server in
            let herald = server.herald
            let token = herald.apns.registerDevice(topic: TestHerald.topic)
            let subscription = herald.webPush.subscribe()
            let directory = try HubInterop.directory(with: server)
            defer { try? FileManager.default.removeItem(at: directory) }
            let run = String(UUID().uuidString.prefix(8)).lowercased()

            var environment = HubInterop.environment(server, directory: directory, run: run)
            environment["HERALD_HUB_LISTEN_CONNECTION_STRING"] = server.connectionString(.tls, rule: SharedAccessRule.defaultListenRuleName)
            environment["HERALD_APNS_TOKEN"] = token
            environment["HERALD_WEBPUSH_ENDPOINT"] = subscription.endpoint
            environment["HERALD_WEBPUSH_P256DH"] = subscription.p256dh
            environment["HERALD_WEBPUSH_AUTH"] = subscription.auth
            let output = try await PythonInterop.run("hub_unofficial_client.py", environment: environment)
            try #require(output.status == 0, "hub_unofficial_client.py failed:\n\(output.transcript)")

            // The browser send and the test send reached the subscription; the native and the
            // template send the APNs device, in that order.
            let results = try HubInterop.results(UnofficialResults.self, in: directory)
            #expect(results.webpush.count == 2 && results.apns.count == 2)
            let browser = herald.webPush.notifications(for: subscription).map { HubInterop.canonicalJSON(ReceiptIDs.removed(from: $0.payload)) }
            #expect(browser == results.webpush.map(HubInterop.canonicalJSON))
            let apple = herald.apns.notifications(for: token)
            #expect(apple.map { HubInterop.canonicalJSON(ReceiptIDs.removed(from: $0.payload)) } == results.apns.map(HubInterop.canonicalJSON))
            #expect(apple.first?.headers["apns-push-type"] == "alert" && apple.first?.headers["apns-priority"] == "10")

            // The hub recorded what the script saw, and the script cleaned up after itself.
            let engine = try await server.engine()
            for name in ["browser", "apple", "template"] {
                let id = try #require(results.notifications[name])
                #expect(try await engine.notification(id: id)?.state == .completed, "\(name) send \(id)")
            }
            let scheduled = try #require(results.notifications["scheduled"])
            #expect(try await engine.notification(id: scheduled)?.state == .cancelled)
            #expect(try await engine.store.installation(id: "interop-browser-\(run)") == nil)
            #expect(try await engine.store.installation(id: "interop-apple-\(run)") == nil)
        }
    }

    /// What `hub_rest_sample.py` reports: the message text of each send.
    struct RESTSampleResults: Decodable {
        var apple, gcm, windows, template, direct, scheduled, debug: String
    }

    @Test(
        "notificationhubs-rest-python: native, template, direct, scheduled and debug sends; a scheduled direct send and a wrong key refused",
        .enabled("needs python3 with notificationhubs_rest_python: \(HubInterop.install)") {
            await PythonInterop.canImport("notificationhubs_rest_python")
        }
    )
    func restSample() async throws {
        try await HubTestServer.withServer { server in
            let herald = server.herald
            let engine = try await server.engine()
            func register(_ platform: Platform, _ handle: String, tag: String, template: RegistrationTemplate? = nil) async throws {
                _ = try await engine.store.upsertRegistration(
                    Registration(id: RegistrationID.make(), platform: platform, handle: handle, tags: [tag], template: template),
                    ifVersion: nil
                )
            }
            let apple = herald.apns.registerDevice(topic: TestHerald.topic)
            let templated = herald.apns.registerDevice(topic: TestHerald.topic)
            let scheduled = herald.apns.registerDevice(topic: TestHerald.topic)
            let debug = herald.apns.registerDevice(topic: TestHerald.topic)
            let direct = herald.apns.registerDevice(topic: TestHerald.topic)
            let fcm = herald.fcm.registerDevice()
            let channel = herald.wns.registerChannel()
            try await register(.apns, apple, tag: "interop-apple")
            try await register(.apns, templated, tag: "interop-template", template: RegistrationTemplate(body: #"{"aps":{"alert":"$(message)"}}"#))
            try await register(.apns, scheduled, tag: "interop-scheduled")
            try await register(.apns, debug, tag: "interop-debug")
            try await register(.fcm, fcm, tag: "interop-gcm")
            try await register(.wns, channel, tag: "interop-windows")

            let directory = try HubInterop.directory(with: server)
            defer { try? FileManager.default.removeItem(at: directory) }
            var environment = HubInterop.environment(server, directory: directory, run: String(UUID().uuidString.prefix(8)).lowercased())
            environment["HERALD_APNS_DIRECT_TOKEN"] = direct
            environment["HERALD_APNS_DEBUG_TOKEN"] = debug
            let output = try await PythonInterop.run("hub_rest_sample.py", environment: environment)
            try #require(output.status == 0, "hub_rest_sample.py failed:\n\(output.transcript)")
            let sent = try HubInterop.results(RESTSampleResults.self, in: directory)

            func alerts(_ token: String) -> [String?] {
                herald.apns.notifications(for: token).map { HubInterop.canonicalJSON(ReceiptIDs.removed(from: $0.payload)) }
            }
            func alert(_ text: String) -> String? {
                HubInterop.canonicalJSON(#"{"aps":{"alert":"\#(text)"}}"#)
            }
            // Queued sends: the one with the wrong key delivered nothing.
            try await eventually("the native APNs send") { !herald.apns.notifications(for: apple).isEmpty }
            #expect(alerts(apple) == [alert(sent.apple)])
            try await eventually("the template send") { !herald.apns.notifications(for: templated).isEmpty }
            #expect(alerts(templated) == [alert(sent.template)])
            try await eventually("the direct send") { !herald.apns.notifications(for: direct).isEmpty }
            #expect(alerts(direct) == [alert(sent.direct)])
            try await eventually("the scheduled send") { !herald.apns.notifications(for: scheduled).isEmpty }
            #expect(alerts(scheduled) == [alert(sent.scheduled)])
            // The debug send was delivered at once, before its answer.
            #expect(alerts(debug) == [alert(sent.debug)])

            // The legacy GCM body, translated for FCM v1.
            try await eventually("the gcm send") { !herald.fcm.notifications(for: fcm).isEmpty }
            let message = try JSONDecoder().decode(JSONValue.self, from: Data(try #require(herald.fcm.notifications(for: fcm).first).payload.utf8))
            #expect(message["data"]?["message"] == .string(sent.gcm))
            #expect(herald.fcm.notifications(for: fcm).count == 1)

            // The toast, with the X-WNS-Type the client set.
            try await eventually("the windows send") { !herald.wns.notifications(for: channel).isEmpty }
            let toast = try #require(herald.wns.notifications(for: channel).first)
            #expect(toast.payload.contains(">\(sent.windows)</text>"))
            #expect(toast.headers["x-wns-type"] == "wns/toast")
        }
    }
}
