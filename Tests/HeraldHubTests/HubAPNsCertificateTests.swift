import Crypto
import Foundation
import HeraldCore
import HeraldHub
import HeraldMetrics
import HeraldPush
import HeraldStore
import HeraldTLS
import HeraldTestSupport
import Logging
import Testing

/// A hub's APNs credentials with a certificate: exactly one way to sign in, checked with a
/// precise message; saved and read back; old documents still read; the certificate's expiry
/// shown without its key, and on `/metrics`.
@Suite("APNs certificate credentials")
struct HubAPNsCertificateTests {
    static let topic = "com.example.app"
    static let authority = Result { try CertificateAuthority.makeEphemeral() }

    static func issued(topic: String = topic) throws -> IssuedClientCertificate {
        try authority.get().issueAPNsClientCertificate(topic: topic)
    }

    private func withCatalog<T>(_ body: (HubCatalog, String) async throws -> T) async throws -> T {
        let dataDirectory = FileManager.default.temporaryDirectory
            .appendingPathComponent("herald-apns-cert-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dataDirectory) }
        return try await body(HubCatalog(dataDirectory: dataDirectory), dataDirectory)
    }

    @Test func certificateCredentialsAreSavedReadBackAndShownWithoutSecrets() async throws {
        let issued = try Self.issued()
        let archive = try issued.pkcs12(password: "p12-password")
        try await withCatalog { catalog, dataDirectory in
            try await catalog.create(name: "hub")
            let updated = try await catalog.setCredentials(name: "hub") {
                $0.apns = .init(certificatePKCS12: archive, password: "p12-password", topic: Self.topic, environment: "sandbox")
            }
            let read = try #require(try await HubCatalog(dataDirectory: dataDirectory).hub(named: "hub"))
            #expect(read.credentials == updated.credentials)
            let apns = try #require(read.credentials.apns)
            #expect(apns.usesCertificate && !apns.usesToken)
            #expect(try apns.clientCertificate()?.topic == Self.topic)
            #expect(apns.certificateExpiry == issued.certificate.notValidAfter)

            let shown = read.redacted
            #expect(shown.contains("UID \(Self.topic)"), "\(shown)")
            #expect(shown.contains("valid until \(ClientCertificate.format(issued.certificate.notValidAfter))"), "\(shown)")
            for secret in ["p12-password", apns.certificatePKCS12!, "PRIVATE KEY"] {
                #expect(!shown.contains(secret))
            }

            // PEM works the same way.
            let pem = try await catalog.setCredentials(name: "hub") {
                $0.apns = .init(certificatePEM: issued.certificatePEM, keyPEM: issued.privateKeyPEM, topic: Self.topic)
            }
            #expect(try pem.credentials.apns?.clientCertificate()?.topic == Self.topic)
            #expect(!pem.redacted.contains("PRIVATE KEY"))
        }
    }

    @Test func aDocumentWrittenBeforeCertificatesStillDecodes() throws {
        let key = P256.Signing.PrivateKey().pemRepresentation
        let json = try JSONSerialization.data(withJSONObject: [
            "apns": [
                "keyID": "ABC123DEFG", "teamID": "TEAM123456", "topic": Self.topic, "environment": "production",
                "privateKeyPEM": key,
            ]
        ])
        let credentials = try JSONDecoder().decode(HubCredentials.self, from: json)
        let apns = try #require(credentials.apns)
        #expect(apns == HubCredentials.APNs(keyID: "ABC123DEFG", teamID: "TEAM123456", topic: Self.topic, privateKeyPEM: key))
        #expect(apns.usesToken && !apns.usesCertificate)
        #expect(apns.certificateExpiry == nil)
        try apns.validate()
    }

    /// Each invalid combination, and the words its message must have.
    @Test func exactlyOneWayToSignInIsAccepted() throws {
        let issued = try Self.issued()
        let archive = try issued.pkcs12(password: "pw")
        let key = P256.Signing.PrivateKey().pemRepresentation
        var both = HubCredentials.APNs(certificatePKCS12: archive, password: "pw", topic: Self.topic)
        both.keyID = "ABC123DEFG"
        both.teamID = "TEAM123456"
        both.privateKeyPEM = key
        var none = HubCredentials.APNs(keyID: "ABC123DEFG", teamID: "TEAM123456", topic: Self.topic, privateKeyPEM: key)
        none.keyID = nil
        none.teamID = nil
        none.privateKeyPEM = nil
        var twoForms = HubCredentials.APNs(certificatePKCS12: archive, password: "pw", topic: Self.topic)
        twoForms.certificatePEM = issued.certificatePEM
        var passwordForPEM = HubCredentials.APNs(certificatePEM: issued.certificatePEM, keyPEM: issued.privateKeyPEM, topic: Self.topic)
        passwordForPEM.certificatePassword = "pw"
        var keyForPKCS12 = HubCredentials.APNs(certificatePKCS12: archive, password: "pw", topic: Self.topic)
        keyForPKCS12.certificateKeyPEM = issued.privateKeyPEM
        var notBase64 = HubCredentials.APNs(certificatePKCS12: archive, password: "pw", topic: Self.topic)
        notBase64.certificatePKCS12 = "!!!"
        let cases: [(HubCredentials.APNs, String)] = [
            (both, "not both"),
            (none, "need a token-signing key"),
            (twoForms, "both as PKCS#12 and as PEM"),
            (passwordForPEM, "not a PEM one"),
            (keyForPKCS12, "holds its own key"),
            (notBase64, "not base64"),
            (HubCredentials.APNs(certificatePKCS12: archive, password: "wrong", topic: Self.topic), "password is wrong"),
            (
                HubCredentials.APNs(
                    certificatePEM: issued.certificatePEM, keyPEM: try Self.issued().privateKeyPEM, topic: Self.topic),
                "does not belong"
            ),
            (HubCredentials.APNs(certificatePKCS12: archive, password: "pw", topic: ""), "bundle id"),
        ]
        for (credentials, words) in cases {
            let error = #expect(throws: HeraldError.self) { try credentials.validate() }
            #expect(error?.code == .badRequest)
            #expect(error?.message.contains(words) == true, "\(words): \(error?.message ?? "")")
            #expect(error?.message.contains("pw") != true || words == "password is wrong")
        }
        try HubCredentials.APNs(certificatePKCS12: archive, password: "pw", topic: Self.topic).validate()
        try HubCredentials.APNs(certificatePEM: issued.certificatePEM, keyPEM: issued.privateKeyPEM, topic: Self.topic).validate()
    }

    @Test func theExpiryGaugeShowsTheServersAndEachHubsCertificate() async throws {
        let serverCertificate = try Self.issued().certificate
        let hubCertificate = try Self.issued(topic: "com.example.other")
        try await withCatalog { catalog, _ in
            let metrics = HeraldMetrics()
            let logger = Logger(label: "test")
            var serverConfiguration = APNsConfiguration(clientCertificate: serverCertificate)
            serverConfiguration.endpoint = "https://127.0.0.1:1"
            let server = try APNsProvider(configuration: serverConfiguration, logger: logger)
            let registry = HubRegistry(
                catalog: catalog, serverProviders: [server], factory: PushProviderFactory(logger: logger),
                metrics: metrics, logger: logger)
            try await catalog.create(name: "certhub")
            try await catalog.create(name: "plain")
            try await catalog.setCredentials(name: "certhub") {
                $0.apns = .init(
                    certificatePEM: hubCertificate.certificatePEM, keyPEM: hubCertificate.privateKeyPEM, topic: "com.example.other")
            }
            let certhub = try #require(try await registry.engine(named: "certhub"))
            let plain = try #require(try await registry.engine(named: "plain"))

            func gauges() async -> [String] {
                await registry.updateMetricGauges()
                return String(decoding: metrics.emit(), as: UTF8.self).split(separator: "\n")
                    .filter { $0.hasPrefix("herald_push_credential_expiry_timestamp_seconds{") }.map(String.init).sorted()
            }
            func seconds(_ date: Date) -> String { "\(date.timeIntervalSince1970.rounded())" }
            let family = "herald_push_credential_expiry_timestamp_seconds"
            #expect(
                await gauges()
                    == [
                        "\(family){platform=\"apns\",hub=\"*\"} \(seconds(serverCertificate.notValidAfter))",
                        "\(family){platform=\"apns\",hub=\"certhub\"} \(seconds(hubCertificate.certificate.notValidAfter))",
                    ].sorted())

            // Token credentials instead: the hub's gauge goes, the server's stays.
            try await catalog.setCredentials(name: "certhub") {
                $0.apns = .init(
                    keyID: "ABC123DEFG", teamID: "TEAM123456", topic: Self.topic,
                    privateKeyPEM: P256.Signing.PrivateKey().pemRepresentation)
            }
            let reopened = try #require(try await registry.engine(named: "certhub"))
            #expect(await gauges() == ["\(family){platform=\"apns\",hub=\"*\"} \(seconds(serverCertificate.notValidAfter))"])
            for engine in [certhub, plain, reopened] { try? await engine.store.close() }
            try await server.shutdown()
        }
    }

    @Test func aCertificateCloseToItsEndIsWarnedAboutWhenItsProviderIsMade() async throws {
        let records = LogRecorder()
        let logger = records.logger(label: "test")
        let factory = PushProviderFactory(logger: logger)
        let authority = try Self.authority.get()
        let soon = try authority.issueAPNsClientCertificate(topic: Self.topic, notValidAfter: Date().addingTimeInterval(10 * 86400 + 3600))
        let later = try authority.issueAPNsClientCertificate(topic: Self.topic)
        for issued in [later, soon] {
            let provider = try factory.apnsProvider(.init(certificatePEM: issued.certificatePEM, keyPEM: issued.privateKeyPEM, topic: Self.topic))
            try await provider.shutdown()
        }
        let warnings = records.all.filter { $0.level == .warning }
        #expect(warnings.count == 1, "\(warnings)")
        #expect(warnings.first?.message == "the APNs client certificate expires within 30 days")
        #expect(warnings.first?.metadata["apns.certificate.days_left"] == "10", "\(warnings)")
        #expect(warnings.first?.metadata["apns.certificate.not_after"] == ClientCertificate.format(soon.certificate.notValidAfter))
        #expect(!records.all.contains { "\($0)".contains("PRIVATE KEY") })
    }
}
