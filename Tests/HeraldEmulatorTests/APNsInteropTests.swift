import Crypto
import Foundation
import HeraldCore
import HeraldEmulator
import HeraldTLS
import HeraldTestSupport
import Testing

/// aioapns, the APNs client of the Matrix push gateway, unmodified against the APNs emulator:
/// it opens TLS without ALPN and speaks HTTP/2 with prior knowledge, as real APNs allows.
@Suite(
    "APNs emulator with aioapns",
    .enabled("needs python3 with aioapns: pip install aioapns") { await PythonInterop.canImport("aioapns") },
    .timeLimit(.minutes(2))
)
struct APNsInteropTests {
    @Test func aioapnsDeliversWithoutALPN() async throws {
        try await Self.withTokenEmulator("herald-aioapns") { emulator, arguments in
            let token = emulator.registerDevice(topic: "com.example.app")
            let output = try await PythonInterop.run("apns_aioapns.py", arguments: arguments + ["--token", token, "--count", "3"])
            #expect(output.status == 0, "\(output.transcript)")
            let results = try #require(
                try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: [[String: Any]]]
            )["results"]
            #expect(results?.count == 3)
            #expect(results?.allSatisfy { $0["successful"] as? Bool == true } == true, "\(results ?? [])")
            #expect(emulator.notifications(for: token).map(\.payload).count == 3)
            #expect(emulator.acceptedCount == 3)
        }
    }

    /// aioapns sends `liveactivity` pushes as a provider would: a push-to-start, then updates
    /// to the update token the start gave the activity.
    @Test func aioapnsStartsAndUpdatesALiveActivity() async throws {
        // Each run of the script is a provider of its own with a new token, as a restart would be.
        try await Self.withTokenEmulator("herald-aioapns-live", configure: { $0.minimumProviderTokenInterval = 0 }) {
            emulator, arguments in
            let common = arguments + ["--push-type", "liveactivity", "--request-topic", "com.example.app.push-type.liveactivity"]
            let now = Int(Date().timeIntervalSince1970)
            let startToken = emulator.registerPushToStartToken(topic: "com.example.app", attributesType: "MatchAttributes")
            let start = """
                {"aps": {"timestamp": \(now), "event": "start", "content-state": {"home": 0},
                 "attributes-type": "MatchAttributes", "attributes": {"homeTeam": "Lions"}, "alert": {"title": "Kick-off"}}}
                """
            let started = try await PythonInterop.run(
                "apns_aioapns.py", arguments: common + ["--token", startToken, "--payload", start])
            #expect(started.status == 0, "\(started.transcript)")
            #expect(started.stdout.contains("\"successful\": true"), "\(started.transcript)")
            let activity = try #require(emulator.activities(token: startToken).first)
            let updateToken = try #require(activity.updateToken)

            let update = #"{"aps": {"timestamp": \#(now + 1), "event": "update", "content-state": {"home": {index}}}}"#
            let updated = try await PythonInterop.run(
                "apns_aioapns.py", arguments: common + ["--token", updateToken, "--payload", update, "--count", "3"])
            #expect(updated.status == 0, "\(updated.transcript)")
            #expect(!updated.stdout.contains("\"successful\": false"), "\(updated.transcript)")
            #expect(emulator.activity(id: activity.id)?.contentState?["home"] == .number(2))
            #expect(emulator.activity(id: activity.id)?.received.count == 4)
        }
    }

    /// An APNs emulator of `com.example.app` with one signing key, shut down after `body`, which
    /// gets it and the script's arguments for token authentication (the CA and the key written
    /// to a directory of their own).
    private static func withTokenEmulator(
        _ name: String, configure: (inout APNsEmulator.Configuration) -> Void = { _ in },
        _ body: (APNsEmulator, [String]) async throws -> Void
    ) async throws {
        let key = P256.Signing.PrivateKey()
        var configuration = APNsEmulator.Configuration(
            identity: try TestSupport.identity(),
            signingKeys: [.init(keyID: "ABC123DEFG", teamID: "TEAM123456", publicKey: key.publicKey)]
        )
        configuration.topics = ["com.example.app"]
        configure(&configuration)
        let emulator = try await APNsEmulator.start(configuration: configuration, logger: TestSupport.logger)
        let directory = try PythonInterop.temporaryDirectory(name)
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let ca = directory.appendingPathComponent("ca.pem")
            try TestSupport.authority.certificatePEM.write(to: ca, atomically: true, encoding: .utf8)
            let keyFile = directory.appendingPathComponent("AuthKey.p8")
            try key.pemRepresentation.write(to: keyFile, atomically: true, encoding: .utf8)
            try await body(
                emulator,
                [
                    "--host", "127.0.0.1", "--port", "\(emulator.port)", "--ca", ca.path, "--key", keyFile.path,
                    "--key-id", "ABC123DEFG", "--team-id", "TEAM123456", "--topic", "com.example.app",
                ])
        } catch {
            try? await emulator.shutdown()
            throw error
        }
        try await emulator.shutdown()
    }

    /// aioapns with certificate authentication: the emulator's client certificate (written by
    /// `EmulatorCredentials` as `herald emulate` writes it), no provider token, and the topic
    /// read by aioapns from the certificate's subject UID.
    @Test func aioapnsDeliversWithTheEmulatorsClientCertificate() async throws {
        let directory = try PythonInterop.temporaryDirectory("herald-aioapns-cert")
        defer { try? FileManager.default.removeItem(at: directory) }
        let authority = try CertificateAuthority.loadOrCreate(directory: directory.path)
        let certificate = try EmulatorCredentials.apnsClientCertificate(
            directory: directory.path, authority: authority, topic: "com.example.app")
        var configuration = APNsEmulator.Configuration(
            identity: try authority.issueServerIdentity(hosts: ["127.0.0.1"]), signingKeys: [])
        configuration.topics = ["com.example.app"]
        configuration.clientCertificateAuthority = authority
        let emulator = try await APNsEmulator.start(configuration: configuration, logger: TestSupport.logger)
        do {
            let token = emulator.registerDevice(topic: "com.example.app")
            let arguments = [
                "--host", "127.0.0.1", "--port", "\(emulator.port)", "--ca", try #require(authority.certificatePath),
                "--token", token, "--count", "2",
            ]
            let output = try await PythonInterop.run("apns_aioapns.py", arguments: arguments + ["--client-cert", certificate.pemPath])
            #expect(output.status == 0, "\(output.transcript)")
            let results = try #require(
                try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: [[String: Any]]]
            )["results"]
            #expect(results?.count == 2)
            #expect(results?.allSatisfy { $0["successful"] as? Bool == true } == true, "\(results ?? [])")
            #expect(emulator.notifications(for: token).map { $0.headers["apns-topic"] } == ["com.example.app", "com.example.app"])

            // A certificate of another CA is no credential: 403 MissingProviderToken.
            let stranger = try CertificateAuthority.makeEphemeral().issueAPNsClientCertificate(topic: "com.example.app")
            let strangerFile = directory.appendingPathComponent("stranger.pem")
            try (stranger.certificatePEM + stranger.privateKeyPEM).write(to: strangerFile, atomically: true, encoding: .utf8)
            let refused = try await PythonInterop.run("apns_aioapns.py", arguments: arguments + ["--client-cert", strangerFile.path])
            #expect(refused.status == 0, "\(refused.transcript)")
            #expect(refused.stdout.contains("MissingProviderToken"), "\(refused.transcript)")
            #expect(emulator.acceptedCount == 2)
        } catch {
            try? await emulator.shutdown()
            throw error
        }
        try await emulator.shutdown()
    }
}
