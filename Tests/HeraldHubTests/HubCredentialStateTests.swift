import Foundation
import HeraldCore
import HeraldEmulator
import HeraldHub
import HeraldMetrics
import HeraldPush
import HeraldTLS
import Logging
import NIOCore
import Testing

/// The state of each hub's push credentials, against the FCM and WNS emulators: configured
/// until used, working once the token endpoint and the service accepted them, failing with a
/// message that holds no secret when refused; and `herald_push_credential_failing` with them.
@Suite("Push credential state", .timeLimit(.minutes(2)))
struct HubCredentialStateTests {
    static let wrongSecret = "Wr0ngSecretWr0ngSecretWr0ngSec+/="

    @Test func workingAndRefusedCredentialsReadSoAndMoveTheGauge() async throws {
        let credentials = try EmulatorCredentials.makeEphemeral()
        // The same service account's email with another key: FCM's token endpoint refuses it.
        let otherKey = try EmulatorCredentials.makeEphemeral()
        let authority = try CertificateAuthority.makeEphemeral()
        let identity = try authority.issueServerIdentity(hosts: ["127.0.0.1"])
        let fcm = try await FCMEmulator.start(
            configuration: .init(identity: identity, projectID: credentials.fcmProjectID, serviceAccounts: [credentials.fcmServiceAccount]),
            logger: hubTestLogger)
        let wns = try await WNSEmulator.start(configuration: .init(identity: identity, apps: [credentials.wnsApp]), logger: hubTestLogger)
        let dataDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-cred-state-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dataDirectory) }

        let roots = [try authority.sslCertificate]
        let settings = PushServiceSettings(
            fcm: .init(endpoint: fcm.baseURL, tokenURI: fcm.tokenURI, trustRoots: roots),
            wns: .init(tokenURI: wns.tokenURI, trustRoots: roots, allowedChannelHosts: ["127.0.0.1"]))
        let metrics = HeraldMetrics()
        let factory = PushProviderFactory(settings: settings, logger: hubTestLogger, metrics: metrics)
        let serverWNS = try factory.wnsProvider(.init(packageSID: credentials.wnsPackageSID, clientSecret: credentials.wnsClientSecret))
        let catalog = HubCatalog(dataDirectory: dataDirectory)
        let registry = HubRegistry(
            catalog: catalog, serverProviders: [serverWNS], factory: factory, metrics: metrics, logger: hubTestLogger)

        let goodAccount = String(decoding: try credentials.fcmServiceAccountJSON(tokenURI: fcm.tokenURI), as: UTF8.self)
        let wrongAccount = String(decoding: try otherKey.fcmServiceAccountJSON(tokenURI: fcm.tokenURI), as: UTF8.self)
        try await catalog.create(name: "good")
        try await catalog.setCredentials(name: "good") { $0.fcm = .init(serviceAccountJSON: goodAccount) }
        try await catalog.create(name: "bad")
        try await catalog.setCredentials(name: "bad") {
            $0.fcm = .init(serviceAccountJSON: wrongAccount)
            $0.wns = .init(packageSID: credentials.wnsPackageSID, clientSecret: Self.wrongSecret)
        }

        func failingGauges() async -> [String] {
            await registry.updateMetricGauges()
            return String(decoding: metrics.emit(), as: UTF8.self).split(separator: "\n")
                .filter { $0.hasPrefix("herald_push_credential_failing{") }.map(String.init).sorted()
        }
        func gauge(_ platform: Platform, _ hub: String, _ value: Int) -> String {
            "herald_push_credential_failing{platform=\"\(platform)\",hub=\"\(hub)\"} \(value).0"
        }
        let fcmDevice = fcm.registerDevice()
        let channel = wns.registerChannel()
        let fcmMessage = PushNotification(body: .fcmMessage(.object([("data", .object([("k", .string("v"))]))])))
        let toast = PushNotification(
            body: .bytes(ByteBuffer(string: "<toast><visual><binding template=\"ToastGeneric\"><text>Hi</text></binding></visual></toast>")),
            headers: [(name: "X-WNS-Type", value: "wns/toast")])
        /// Sends one notification through each of the hub's providers; returns the outcomes.
        func sendThrough(_ hub: String) async throws -> [Platform: DeliveryOutcome] {
            let engine = try #require(try await registry.engine(named: hub))
            let fcmProvider = try #require(engine.provider(for: .fcm))
            let wnsProvider = try #require(engine.provider(for: .wns))
            let fcmResult = await fcmProvider.send(fcmMessage, to: PushTarget(handle: fcmDevice))
            let wnsResult = await wnsProvider.send(toast, to: PushTarget(handle: channel))
            return [.fcm: fcmResult.outcome, .wns: wnsResult.outcome]
        }

        do {
            // Unused yet: configured, no history.
            let unused = try await registry.credentialStates(hub: "good")
            #expect(unused.map(\.platform) == [.fcm, .wns])
            #expect(unused.map(\.source) == [.hub, .server])
            #expect(unused.map(\.method) == ["service account", "client credentials"])
            #expect(unused.allSatisfy { $0.status == .configured && $0.lastError == nil && $0.lastSuccessAt == nil })
            let notFound = await #expect(throws: HeraldError.self) { try await registry.credentialStates(hub: "nosuchhub") }
            #expect(notFound?.code == .notFound)

            let before = Date().addingTimeInterval(-1)
            #expect(try await sendThrough("good") == [.fcm: .success, .wns: .success])
            let good = try await registry.credentialStates(hub: "good")
            #expect(good.map(\.status) == [.working, .working], "\(good)")
            #expect(good.allSatisfy { ($0.lastSuccessAt ?? .distantPast) >= before && $0.lastError == nil && $0.expiresAt == nil })

            #expect(try await sendThrough("bad") == [.fcm: .invalidCredentials, .wns: .invalidCredentials])
            let bad = try await registry.credentialStates(hub: "bad")
            #expect(bad.map(\.source) == [.hub, .hub])
            #expect(bad.map(\.status) == [.failing, .failing], "\(bad)")
            #expect(bad.allSatisfy { $0.lastSuccessAt == nil && ($0.lastErrorAt ?? .distantPast) >= before })
            let fcmError = try #require(bad[0].lastError)
            let wnsError = try #require(bad[1].lastError)
            #expect(fcmError.contains("invalid_grant"), "\(fcmError)")
            #expect(wnsError.contains("invalid_client"), "\(wnsError)")
            // Nothing secret in what a console shows (the encoded form included).
            let shown = String(decoding: try JSONEncoder().encode(bad + good), as: UTF8.self)
            let keyLines = credentials.fcmPrivateKeyPEM.split(separator: "\n").filter { !$0.hasPrefix("-----") }
            let otherKeyLines = otherKey.fcmPrivateKeyPEM.split(separator: "\n").filter { !$0.hasPrefix("-----") }
            for secret in [Self.wrongSecret, credentials.wnsClientSecret, "PRIVATE KEY", "Bearer"] + (keyLines + otherKeyLines).map(String.init) {
                #expect(!shown.contains(secret), "\(secret) in \(shown)")
            }

            let afterSends = await failingGauges()
            #expect(afterSends == [gauge(.fcm, "bad", 1), gauge(.fcm, "good", 0), gauge(.wns, "*", 0), gauge(.wns, "bad", 1)].sorted())

            // The right secret: the hub's providers are made anew, configured until used; then
            // WNS works and its gauge goes back to 0. (The registry does not run here: the
            // replaced providers are shut down by hand, not retired.)
            let badEngine = try #require(try await registry.engine(named: "bad"))
            let replaced = [badEngine.provider(for: .fcm), badEngine.provider(for: .wns)].compactMap { $0 }
            try await catalog.setCredentials(name: "bad") {
                $0.wns = .init(packageSID: credentials.wnsPackageSID, clientSecret: credentials.wnsClientSecret)
            }
            _ = try await registry.engine(named: "bad")
            for provider in replaced { try await provider.shutdown() }
            let renewed = try await registry.credentialStates(hub: "bad").map(\.status)
            #expect(renewed == [.configured, .configured])
            #expect(try await sendThrough("bad") == [.fcm: .invalidCredentials, .wns: .success])
            let afterFix = try await registry.credentialStates(hub: "bad").map(\.status)
            #expect(afterFix == [.failing, .working])
            let fixedGauges = await failingGauges()
            #expect(fixedGauges == [gauge(.fcm, "bad", 1), gauge(.fcm, "good", 0), gauge(.wns, "*", 0), gauge(.wns, "bad", 0)].sorted())
        } catch {
            await registry.close()
            try? await serverWNS.shutdown()
            try? await fcm.shutdown()
            try? await wns.shutdown()
            throw error
        }
        await registry.close()
        try await serverWNS.shutdown()
        try await fcm.shutdown()
        try await wns.shutdown()
    }
}
