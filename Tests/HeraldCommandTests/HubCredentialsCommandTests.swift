import Foundation
import HeraldTestSupport
import Testing

/// `herald hub set-credentials … --apns-cert-file` and `herald hub credentials`, as a user runs
/// them, with a certificate made by OpenSSL the way an APNs certificate is exported (subject
/// UID = the bundle id; a .p12 with a password, or PEM).
@Suite(
    "herald hub credentials with an APNs certificate",
    .enabled("needs openssl") { FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl") }
)
struct HubCredentialsCommandTests {
    static let topic = "com.example.cli"

    /// Runs `openssl` with `arguments`.
    static func openssl(_ arguments: [String]) async throws {
        let output = try await PythonInterop.run(program: URL(fileURLWithPath: "/usr/bin/openssl"), arguments: arguments)
        guard output.status == 0 else { throw HeraldCommand.Failure(description: "openssl \(arguments): \(output.transcript)") }
    }

    /// A self-signed certificate for ``topic`` valid 20 days (`cert.pem`, `key.pem`) and the
    /// same as `apns.p12` with the password `p12-secret`, in a new directory.
    static func makeCertificateFiles() async throws -> (directory: URL, p12: String, cert: String, key: String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-cert-cli-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let p12 = directory.appendingPathComponent("apns.p12").path
        let cert = directory.appendingPathComponent("cert.pem").path
        let key = directory.appendingPathComponent("key.pem").path
        try await Self.openssl(
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "20",
                "-subj", "/UID=\(Self.topic)/CN=Apple Push Services: \(Self.topic)", "-keyout", key, "-out", cert,
            ])
        try await Self.openssl(
            ["pkcs12", "-export", "-in", cert, "-inkey", key, "-out", p12, "-passout", "pass:p12-secret"])
        return (directory, p12, cert, key)
    }

    @Test func aCertificateIsSetShownWithItsExpiryAndCheckedFirst() async throws {
        let (directory, p12, cert, key) = try await Self.makeCertificateFiles()
        defer { try? FileManager.default.removeItem(at: directory) }
        let data = directory.appendingPathComponent("data").path
        func herald(_ arguments: [String]) async throws -> HeraldCommand.Result {
            try await HeraldCommand.run(["hub"] + arguments + ["--data-dir", data], environment: ["HERALD_LOG_LEVEL": "error"])
        }
        #expect(try await herald(["create", "certhub"]).status == 0)

        // A wrong password is said plainly, and nothing is saved.
        let wrong = try await herald(["set-credentials", "certhub", "--apns-cert-file", p12, "--apns-cert-password", "nope"])
        #expect(wrong.status != 0)
        #expect(wrong.error.contains("its password is wrong"), "\(wrong.error)")
        #expect(try await herald(["credentials", "certhub"]).output.contains("apns     not set"))

        // Token and certificate options together are refused before anything is read.
        let both = try await herald(["set-credentials", "certhub", "--apns-cert-file", p12, "--apns-key-id", "ABC123DEFG"])
        #expect(both.status != 0)
        #expect(both.error.contains("not both"), "\(both.error)")

        // The .p12: the topic comes from the certificate's UID.
        let set = try await herald(["set-credentials", "certhub", "--apns-cert-file", p12, "--apns-cert-password", "p12-secret"])
        #expect(set.status == 0, "\(set.error)")
        let shown = try await herald(["credentials", "certhub"])
        #expect(shown.status == 0)
        #expect(shown.output.contains("apns     certificate UID \(Self.topic), valid until 20"), "\(shown.output)")
        #expect(shown.output.contains("PKCS#12, topic \(Self.topic), production"), "\(shown.output)")
        for secret in ["p12-secret", "PRIVATE KEY"] { #expect(!shown.output.contains(secret)) }

        // PEM with its key in another file, in the sandbox.
        let pem = try await herald([
            "set-credentials", "certhub", "--apns-cert-file", cert, "--apns-cert-key-file", key, "--apns-environment", "sandbox",
        ])
        #expect(pem.status == 0, "\(pem.error)")
        #expect(pem.output.contains("PEM, topic \(Self.topic), sandbox"), "\(pem.output)")
        let stored = try String(contentsOfFile: data + "/hubs/certhub/hub.json", encoding: .utf8)
        #expect(stored.contains("certificatePEM") && !stored.contains("keyID"), "a certificate replaces token credentials")
    }

    /// The server-wide settings are checked at start, with the setting named in the message.
    @Test func serveRefusesAWrongPasswordAndATokenKeyBesideACertificate() async throws {
        let (directory, p12, _, _) = try await Self.makeCertificateFiles()
        defer { try? FileManager.default.removeItem(at: directory) }
        let data = directory.appendingPathComponent("data").path
        let wrong = try await HeraldCommand.run(
            ["serve", "--data-dir", data, "--port", "0", "--tls-port", "0"],
            environment: ["HERALD_APNS_CERT_FILE": p12, "HERALD_APNS_CERT_PASSWORD": "nope", "HERALD_LOG_LEVEL": "error"],
            limit: .seconds(60))
        #expect(wrong.status == 1)
        #expect(wrong.error.contains("HERALD_APNS_CERT_FILE \(p12)"), "\(wrong.error)")
        #expect(wrong.error.contains("its password is wrong"), "\(wrong.error)")
        #expect(!wrong.error.contains("nope"))

        let both = try await HeraldCommand.run(
            ["serve", "--data-dir", data, "--port", "0", "--tls-port", "0"],
            environment: [
                "HERALD_APNS_CERT_FILE": p12, "HERALD_APNS_CERT_PASSWORD": "p12-secret", "HERALD_APNS_KEY_ID": "ABC123DEFG",
                "HERALD_LOG_LEVEL": "error",
            ],
            limit: .seconds(60))
        #expect(both.status == 1)
        #expect(both.error.contains("not both"), "\(both.error)")
    }
}
