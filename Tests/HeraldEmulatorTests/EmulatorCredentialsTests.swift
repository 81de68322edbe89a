import Crypto
import Foundation
import HeraldEmulator
import NIOHTTP1
import Testing
import _CryptoExtras

@Suite("Emulator credentials")
struct EmulatorCredentialsTests {
    @Test("files are created once (keys 0600) and reused")
    func persistence() throws {
        let directory = (NSTemporaryDirectory() as NSString).appendingPathComponent("herald-creds-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(atPath: directory) }

        let first = try EmulatorCredentials.loadOrCreate(directory: directory)
        #expect(first.apnsKeyID.count == 10)
        #expect(first.apnsTeamID.count == 10)
        let keyPath = (directory as NSString).appendingPathComponent("AuthKey_\(first.apnsKeyID).p8")
        #expect(first.apnsKeyPath == keyPath)
        #expect(try CertificateAuthorityTests.mode(of: keyPath) == 0o600)
        #expect(try String(contentsOfFile: keyPath, encoding: .utf8) == first.apnsPrivateKeyPEM)
        #expect(first.apnsPrivateKeyPEM.hasPrefix("-----BEGIN PRIVATE KEY-----"))

        let accountPath = (directory as NSString).appendingPathComponent("fcm-service-account.json")
        #expect(try CertificateAuthorityTests.mode(of: accountPath) == 0o600)
        let account = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: accountPath))) as? [String: Any]
        )
        #expect(account["type"] as? String == "service_account")
        #expect(account["project_id"] as? String == first.fcmProjectID)
        #expect(account["client_email"] as? String == first.fcmClientEmail)
        #expect(account["private_key_id"] as? String == first.fcmPrivateKeyID)
        #expect(account["private_key"] as? String == first.fcmPrivateKeyPEM)
        #expect(first.fcmPrivateKeyPEM.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        #expect(first.fcmPrivateKey.keySizeInBits == 2048)

        let second = try EmulatorCredentials.loadOrCreate(directory: directory)
        #expect(second.apnsKeyID == first.apnsKeyID)
        #expect(second.apnsTeamID == first.apnsTeamID)
        #expect(second.apnsPrivateKeyPEM == first.apnsPrivateKeyPEM)
        #expect(second.fcmClientEmail == first.fcmClientEmail)
        #expect(second.fcmPrivateKeyPEM == first.fcmPrivateKeyPEM)
        #expect(second.apnsSigningKey.publicKey.rawRepresentation == first.apnsPrivateKey.publicKey.rawRepresentation)

        let withURI = try JSONSerialization.jsonObject(with: second.fcmServiceAccountJSON(tokenURI: "https://127.0.0.1:9/token"))
        #expect((withURI as? [String: Any])?["token_uri"] as? String == "https://127.0.0.1:9/token")
    }

    @Test("the credentials are accepted by both emulators")
    func endToEnd() async throws {
        let credentials = try EmulatorCredentials.makeEphemeral()
        let identity = try TestSupport.identity()

        let apns = try await APNsEmulator.start(
            configuration: .init(identity: identity, signingKeys: [credentials.apnsSigningKey]),
            logger: TestSupport.logger
        )
        var fcmConfiguration = FCMEmulator.Configuration(
            identity: identity,
            projectID: credentials.fcmProjectID,
            serviceAccounts: [credentials.fcmServiceAccount]
        )
        fcmConfiguration.openDeviceRegistry = true
        let fcm = try await FCMEmulator.start(configuration: fcmConfiguration, logger: TestSupport.logger)

        try await TestSupport.withClient { client in
            let device = apns.registerDevice(topic: "com.example.app")
            let jwt = try TestSupport.es256JWT(
                header: ["alg": "ES256", "kid": credentials.apnsKeyID],
                claims: ["iss": credentials.apnsTeamID, "iat": Int(Date().timeIntervalSince1970)],
                key: credentials.apnsPrivateKey
            )
            let pushed = try await client.send(
                .POST,
                apns.baseURL + "/3/device/\(device)",
                headers: [("authorization", "bearer \(jwt)"), ("apns-topic", "com.example.app")],
                body: #"{"aps":{}}"#
            )
            #expect(pushed.status == 200)

            let now = Int(Date().timeIntervalSince1970)
            let assertion = try TestSupport.rs256JWT(
                header: ["alg": "RS256", "typ": "JWT", "kid": credentials.fcmPrivateKeyID],
                claims: [
                    "iss": credentials.fcmClientEmail, "aud": fcm.tokenURI, "iat": now, "exp": now + 3600,
                    "scope": "https://www.googleapis.com/auth/firebase.messaging",
                ],
                key: try _RSA.Signing.PrivateKey(pemRepresentation: credentials.fcmPrivateKeyPEM)
            )
            let token = try await client.send(
                .POST,
                fcm.tokenURI,
                headers: [("content-type", "application/x-www-form-urlencoded")],
                body: FCMHarness.form(assertion: assertion)
            )
            #expect(token.status == 200)
        }
        try await apns.shutdown()
        try await fcm.shutdown()
    }

    @Test func printingNeverShowsAKey() throws {
        let credentials = try EmulatorCredentials.makeEphemeral()
        /// The base64 lines of both PEM keys, which no printed form may contain.
        let keyLines = (credentials.apnsPrivateKeyPEM + credentials.fcmPrivateKeyPEM)
            .split(separator: "\n").filter { !$0.hasPrefix("-----") }.map(String.init)
        #expect(!keyLines.isEmpty)
        var dumped = ""
        dump(credentials, to: &dumped)
        for text in ["\(credentials)", String(describing: credentials), String(reflecting: credentials), dumped] {
            for line in keyLines { #expect(!text.contains(line), "\(text)") }
            #expect(text.contains(credentials.apnsKeyID), "\(text)")
            #expect(text.contains("<redacted>"), "\(text)")
        }
    }
}
