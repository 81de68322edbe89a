import Foundation
import HeraldTLS
import NIOSSL
import Testing

@Suite("Certificate authority")
struct CertificateAuthorityTests {
    static func temporaryDirectory() -> String {
        (NSTemporaryDirectory() as NSString).appendingPathComponent("herald-tls-\(UUID().uuidString)")
    }

    static func mode(of path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return try #require(attributes[.posixPermissions] as? Int)
    }

    @Test("loadOrCreate creates ca.pem and a 0600 ca-key.pem, and loads the same CA again")
    func persistence() throws {
        let directory = Self.temporaryDirectory() + "/nested"
        defer { try? FileManager.default.removeItem(atPath: (directory as NSString).deletingLastPathComponent) }

        let first = try CertificateAuthority.loadOrCreate(directory: directory)
        let certificatePath = (directory as NSString).appendingPathComponent("ca.pem")
        let keyPath = (directory as NSString).appendingPathComponent("ca-key.pem")
        #expect(first.certificatePath == certificatePath)
        #expect(try Self.mode(of: keyPath) == 0o600)
        #expect(first.certificatePEM.hasPrefix("-----BEGIN CERTIFICATE-----"))
        #expect(try String(contentsOfFile: certificatePath, encoding: .utf8) == first.certificatePEM)
        #expect(try String(contentsOfFile: keyPath, encoding: .utf8).contains("PRIVATE KEY"))

        let second = try CertificateAuthority.loadOrCreate(directory: directory)
        #expect(second.certificatePEM == first.certificatePEM)

        // Identities issued by the reloaded CA chain to the same root.
        let roots = try TrustRoots.certificates(pemFile: certificatePath)
        #expect(roots.count == 1)
        let root = try first.sslCertificate
        #expect(roots[0] == root)
        _ = try second.issueServerIdentity(hosts: ["localhost"])
    }

    @Test("a CA directory with only one of the two files is refused, not overwritten")
    func halfACA() throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let authority = try CertificateAuthority.loadOrCreate(directory: directory)
        try FileManager.default.removeItem(atPath: (directory as NSString).appendingPathComponent("ca-key.pem"))
        #expect(throws: HeraldTLSError(code: .keyMismatch, message: "")) {
            _ = try CertificateAuthority.loadOrCreate(directory: directory)
        }
        let certificatePath = try #require(authority.certificatePath)
        #expect(try String(contentsOfFile: certificatePath, encoding: .utf8) == authority.certificatePEM)
    }

    @Test("a key that does not match the certificate is refused")
    func mismatchedKey() throws {
        let first = Self.temporaryDirectory()
        let second = Self.temporaryDirectory()
        defer {
            try? FileManager.default.removeItem(atPath: first)
            try? FileManager.default.removeItem(atPath: second)
        }
        _ = try CertificateAuthority.loadOrCreate(directory: first)
        _ = try CertificateAuthority.loadOrCreate(directory: second)
        let otherKey = (second as NSString).appendingPathComponent("ca-key.pem")
        let key = (first as NSString).appendingPathComponent("ca-key.pem")
        try FileManager.default.removeItem(atPath: key)
        try FileManager.default.copyItem(atPath: otherKey, toPath: key)
        #expect(throws: HeraldTLSError(code: .keyMismatch, message: "")) {
            _ = try CertificateAuthority.loadOrCreate(directory: first)
        }
    }

    @Test("ephemeral CAs live in memory and differ")
    func ephemeral() throws {
        let a = try CertificateAuthority.makeEphemeral()
        let b = try CertificateAuthority.makeEphemeral()
        #expect(a.certificatePath == nil)
        #expect(a.certificatePEM != b.certificatePEM)
        #expect(try TrustRoots.certificates(pem: a.certificatePEM).count == 1)
    }

    @Test("server identities take DNS names and IP addresses; junk hosts are refused")
    func serverIdentity() throws {
        let authority = try CertificateAuthority.makeEphemeral()
        let identity = try authority.issueServerIdentity(hosts: ["localhost", "push.example.test", "127.0.0.1", "::1"])
        #expect(identity.certificateChain.count == 1)
        let names = identity.certificateChain[0]._subjectAlternativeNames()
        let kinds = names.map(\.nameType)
        #expect(kinds.filter { $0 == .dnsName }.count == 2)
        #expect(kinds.filter { $0 == .ipAddress }.count == 2)
        #expect(throws: HeraldTLSError(code: .invalidHost, message: "")) {
            _ = try authority.issueServerIdentity(hosts: ["not a host"])
        }
    }

    @Test("a missing PEM file is an error")
    func missingPEM() {
        #expect(throws: HeraldTLSError(code: .invalidPEM, message: "")) {
            _ = try TrustRoots.certificates(pemFile: "/nonexistent/ca.pem")
        }
    }
}
