import Foundation
import HeraldCore
import HeraldEmulator
import HeraldHub
import HeraldHubWire
import HeraldPush
import HeraldSQLite
import HeraldStore
import HeraldTLS
import HeraldTestSupport
import Logging
import Testing

@Suite("Hub: end to end through the APNs emulator")
struct HubAPNsEndToEndTests {
    static let topic = "com.example.hub-tests"

    @Test func templateAndNativeSendsReachTheEmulatorsDevices() async throws {
        let authority = try CertificateAuthority.makeEphemeral()
        let credentials = try EmulatorCredentials.makeEphemeral()
        var emulatorConfiguration = APNsEmulator.Configuration(
            identity: try authority.issueServerIdentity(hosts: ["127.0.0.1"]),
            signingKeys: [credentials.apnsSigningKey]
        )
        emulatorConfiguration.topics = [Self.topic]
        let emulator = try await APNsEmulator.start(configuration: emulatorConfiguration, logger: hubTestLogger)
        var client = APNsConfiguration(
            environment: .sandbox,
            teamID: credentials.apnsTeamID,
            keyID: credentials.apnsKeyID,
            privateKeyPEM: credentials.apnsPrivateKeyPEM,
            topic: Self.topic
        )
        client.endpoint = emulator.baseURL
        client.trustRoots = [try authority.sslCertificate]
        client.connections = 1
        // Not under test: a busy machine may take longer than the default to set up TLS.
        client.connectTimeout = .seconds(30)
        let provider = try APNsProvider(configuration: client, logger: hubTestLogger)

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-hub-e2e-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try await SQLiteStore.open(path: directory.appendingPathComponent("herald.sqlite").path, logger: hubTestLogger)

        do {
            var configuration = HubEngine.Configuration()
            configuration.retry = RetryPolicy(maxAttempts: 1)
            let engine = HubEngine(store: store, providers: [provider], configuration: configuration, logger: hubTestLogger)

            let ann = emulator.registerDevice(topic: Self.topic)
            let bob = emulator.registerDevice(topic: Self.topic)
            let gone = emulator.registerDevice(topic: Self.topic)
            emulator.unregister(token: gone)
            let template = RegistrationTemplate(
                name: "greeting",
                body: #"{"aps":{"alert":{"title":"$(title)","body":"{'Hello, ' + $(name)}"}}}"#,
                headers: [.init(name: "apns-push-type", value: "alert"), .init(name: "apns-collapse-id", value: "$(title)")],
                expiry: "2030-01-01T00:00:00Z"
            )
            try await store.insertRegistrations([
                Registration(id: "ann", platform: .apns, handle: ann, tags: ["team"], template: template, pushVariables: ["name": "Ann"]),
                Registration(id: "bob", platform: .apns, handle: bob, tags: ["team"]),
                Registration(id: "gone", platform: .apns, handle: gone, tags: ["team"], template: template),
            ])

            let templated = try await engine.enqueueTemplate(tagExpression: "team", send: TemplateSend(properties: ["title": "News"]))
            let native = try await engine.enqueue(
                tagExpression: "team",
                payloads: [
                    try PlatformPayload.hubNative(
                        platform: .apns, legacyGCM: false, body: Data(#"{"aps":{"alert":"native"}}"#.utf8),
                        headers: [.init(name: "X-Apns-Priority", value: "5")]
                    )
                ]
            )
            while try await engine.deliverNext() {}

            let annInbox = emulator.notifications(for: ann)
            #expect(annInbox.count == 1)
            let received = try #require(annInbox.first)
            #expect(ReceiptIDs.removed(from: received.payload) == #"{"aps":{"alert":{"title":"News","body":"Hello, Ann"}}}"#)
            #expect(received.headers["apns-collapse-id"] == "News")
            #expect(received.headers["apns-expiration"] == "1893456000")

            let bobInbox = emulator.notifications(for: bob)
            #expect(bobInbox.map { ReceiptIDs.removed(from: $0.payload) } == [#"{"aps":{"alert":"native"}}"#])
            #expect(bobInbox.first?.headers["apns-priority"] == "5")

            let templatedRecord = try #require(try await engine.notification(id: templated.id))
            #expect(templatedRecord.state == .completed)
            #expect(templatedRecord.counts.count(.success, .apns) == 1)
            #expect(templatedRecord.counts.count(.expiredChannel, .apns) == 1)
            #expect(try await engine.notification(id: native.id)?.counts.count(.success, .apns) == 1)
            #expect(try await store.registration(id: "gone") == nil, "the emulator said the device is gone")
        } catch {
            try? await provider.shutdown()
            try? await store.close()
            try? await emulator.shutdown()
            throw error
        }
        try await provider.shutdown()
        try await store.close()
        try await emulator.shutdown()
    }
}
