import Crypto
import Foundation
import HeraldCore
import HeraldEmulator
import HeraldTLS
import HeraldTestSupport
import HeraldWebPushCrypto
import Logging
import Testing

@testable import HeraldPush

/// The Python modules the Web Push scripts in `Tests/Interop` use: independent Web Push
/// implementations from PyPI.
enum WebPushInterop {
    static let modules = "http_ece, py_vapid, pywebpush, cryptography"
    static let install = "pip install http-ece py-vapid pywebpush cryptography"
}

@Suite(
    "Web Push interop with Python implementations",
    .enabled("needs python3 with \(WebPushInterop.modules): \(WebPushInterop.install)") {
        await PythonInterop.canImport(WebPushInterop.modules)
    },
    .timeLimit(.minutes(2))
)
struct WebPushInteropTests {
    @Test("http_ece decrypts what Herald encrypts, and py_vapid verifies Herald's VAPID token")
    func pythonDecryptsHerald() async throws {
        let directory = try PythonInterop.temporaryDirectory("herald-webpush-interop")
        defer { try? FileManager.default.removeItem(at: directory) }

        let userAgent = P256.KeyAgreement.PrivateKey()
        let auth = (0..<16).map { _ in UInt8.random(in: 0...255) }
        let keys = WebPushKeys(
            p256dh: JSONWebToken.base64URL(userAgent.publicKey.x963Representation), auth: JSONWebToken.base64URL(auth))
        var configuration = WebPushConfiguration(
            vapidPrivateKey: P256.Signing.PrivateKey().pemRepresentation, subject: "mailto:interop@herald.test")
        configuration.connections = 1
        let provider = try WebPushProvider(configuration: configuration, logger: Logger(label: "webpush"))
        let endpoint = "https://push.example.net:8443/push/abc"
        let authorization: String
        do {
            authorization = try provider.vapid.authorization(origin: try #require(WebPushEndpoint(endpoint)).origin)
            try await provider.shutdown()
        } catch {
            try await provider.shutdown()
            throw error
        }

        for (index, text) in ["Hello from Herald — ✓", "", String(repeating: "x", count: 3993)].enumerated() {
            let (userAgentKey, authSecret) = try WebPushProvider.subscriptionKeys(keys)
            let body = try WebPushCrypto.encrypt(Array(text.utf8), userAgentPublicKey: userAgentKey, authSecret: authSecret)
            let run = directory.appendingPathComponent("run\(index)")
            try FileManager.default.createDirectory(at: run, withIntermediateDirectories: true)
            try userAgent.pemRepresentation.write(to: run.appendingPathComponent("ua_private.pem"), atomically: true, encoding: .utf8)
            try keys.auth.write(to: run.appendingPathComponent("auth"), atomically: true, encoding: .utf8)
            try Data(body).write(to: run.appendingPathComponent("body.bin"))
            try authorization.write(to: run.appendingPathComponent("authorization"), atomically: true, encoding: .utf8)
            try "https://push.example.net:8443".write(to: run.appendingPathComponent("audience"), atomically: true, encoding: .utf8)

            let output = try await PythonInterop.run("webpush_decrypt.py", arguments: [run.path])
            try #require(output.status == 0, "webpush_decrypt.py failed: \(output.stderr)")
            let plaintext = try Data(contentsOf: run.appendingPathComponent("plaintext.bin"))
            #expect(plaintext == Data(text.utf8))

            let result = try #require(try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any])
            let vapid = try #require(result["vapid"] as? [String: Any])
            #expect(vapid["verified"] as? Bool == true)
            #expect(vapid["k"] as? String == provider.applicationServerKey)
            let claims = try #require(vapid["claims"] as? [String: Any])
            #expect(claims["sub"] as? String == "mailto:interop@herald.test")
        }
    }

    @Test("pywebpush sends to Herald's Web Push emulator, which decrypts and checks VAPID")
    func pywebpushSendsToTheEmulator() async throws {
        let directory = try PythonInterop.temporaryDirectory("herald-webpush-interop")
        defer { try? FileManager.default.removeItem(at: directory) }
        let authority = try CertificateAuthority.makeEphemeral()
        let caPath = directory.appendingPathComponent("ca.pem")
        try authority.certificatePEM.write(to: caPath, atomically: true, encoding: .utf8)
        let vapidKey = P256.Signing.PrivateKey()
        let keyPath = directory.appendingPathComponent("vapid.pem")
        try vapidKey.pemRepresentation.write(to: keyPath, atomically: true, encoding: .utf8)

        let emulator = try await WebPushEmulator.start(
            configuration: .init(identity: try authority.issueServerIdentity(hosts: ["127.0.0.1", "localhost"])),
            logger: Logger(label: "webpush-emulator"))
        do {
            func send(
                to subscription: WebPushSubscription, message: String, key: URL? = nil, extra: [String] = []
            ) async throws -> [String: Any] {
                let file = directory.appendingPathComponent("subscription-\(UUID().uuidString).json")
                try JSONEncoder().encode(subscription).write(to: file)
                var arguments = ["--subscription", file.path, "--ca", caPath.path, "--message", message]
                if let key { arguments += ["--vapid-key", key.path] }
                let output = try await PythonInterop.run("webpush_send.py", arguments: arguments + extra)
                try #require(output.status == 0, "webpush_send.py failed: \(output.stderr)")
                return try #require(try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any])
            }

            // A key that py_vapid generates, an unrestricted subscription, RFC 8030 headers.
            let open = emulator.subscribe()
            let first = try await send(
                to: open, message: "Hello from pywebpush ✓", extra: ["--ttl", "120", "--urgency", "low", "--topic", "interop"])
            #expect(first["status"] as? Int == 201, "\(first["body"] ?? "")")
            #expect((first["location"] as? String)?.hasPrefix(emulator.baseURL + "/m/") == true)
            let inbox = emulator.notifications(for: open)
            try #require(inbox.count == 1)
            #expect(inbox[0].payload == "Hello from pywebpush ✓")
            #expect(inbox[0].headers == ["ttl": "120", "urgency": "low", "topic": "interop"])

            // A subscription restricted to Herald's key accepts py_vapid tokens signed with it...
            let restricted = emulator.subscribe(applicationServerKey: vapidKey.publicKey)
            let signed = try await send(to: restricted, message: "restricted", key: keyPath)
            #expect(signed["status"] as? Int == 201, "\(signed["body"] ?? "")")
            #expect(signed["application_server_key"] as? String == JSONWebToken.base64URL(vapidKey.publicKey.x963Representation))
            #expect(emulator.notifications(for: restricted).map(\.payload) == ["restricted"])

            // ...and refuses another key.
            let otherKey = try await send(to: restricted, message: "intruder")
            #expect(otherKey["status"] as? Int == 403)
            #expect((otherKey["body"] as? String)?.contains("KeyMismatch") == true)

            // The legacy aesgcm coding is not accepted.
            let legacy = try await send(to: open, message: "old", extra: ["--encoding", "aesgcm"])
            #expect(legacy["status"] as? Int == 415)

            // A cancelled subscription is 410, which pywebpush reports.
            emulator.unregister(open)
            let gone = try await send(to: open, message: "late")
            #expect(gone["status"] as? Int == 410)
            #expect(emulator.acceptedCount == 2)
        } catch {
            try await emulator.shutdown()
            throw error
        }
        try await emulator.shutdown()
    }
}
