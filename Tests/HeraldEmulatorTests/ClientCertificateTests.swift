import Foundation
import HeraldEmulator
import HeraldTLS
import Testing

/// APNs client certificates: issued by the local CA in Apple's shape, loaded from a `.p12`
/// with its password or from PEM, and the emulator's certificate kept on disk.
@Suite("Client certificates")
struct ClientCertificateTests {
    static let topic = "com.example.herald-demo"

    @Test func anIssuedCertificateNamesItsTopicInTheSubjectUID() throws {
        let authority = try CertificateAuthority.makeEphemeral()
        let now = Date()
        let issued = try authority.issueAPNsClientCertificate(topic: Self.topic, now: now)
        #expect(issued.certificate.topic == Self.topic)
        #expect(issued.certificate.commonName == "Apple Push Services: \(Self.topic)")
        #expect(abs(issued.certificate.notValidAfter.timeIntervalSince(now) - 365 * 86400) < 2)
        #expect("\(issued.certificate)".contains("UID \(Self.topic)"))
        #expect(!"\(issued.certificate)".contains("PRIVATE KEY"))
        let leaf = try #require(issued.certificate.identity.certificateChain.first)
        #expect(ClientCertificate.verified(leaf, issuedBy: authority, now: now)?.topic == Self.topic)
        #expect(ClientCertificate.verified(leaf, issuedBy: try CertificateAuthority.makeEphemeral(), now: now) == nil)
        #expect(ClientCertificate.verified(leaf, issuedBy: authority, now: now.addingTimeInterval(400 * 86400)) == nil)
    }

    @Test func aPKCS12OpensWithItsPasswordOnly() throws {
        let issued = try CertificateAuthority.makeEphemeral().issueAPNsClientCertificate(topic: Self.topic)
        let archive = try issued.pkcs12(password: "s3cret")
        let loaded = try ClientCertificate(pkcs12: archive, password: "s3cret")
        #expect(loaded.topic == Self.topic)
        #expect(loaded.notValidAfter == issued.certificate.notValidAfter)

        let wrong = #expect(throws: HeraldTLSError.self) { try ClientCertificate(pkcs12: archive, password: "wrong") }
        #expect(wrong?.code == .invalidPKCS12)
        #expect(wrong?.message.contains("password is wrong") == true, "\(wrong?.message ?? "")")
        #expect(wrong?.message.contains("s3cret") == false)
        let notAnArchive = #expect(throws: HeraldTLSError.self) { try ClientCertificate(pkcs12: Array("nope".utf8), password: "") }
        #expect(notAnArchive?.code == .invalidPKCS12)
    }

    @Test func pemLoadsFromOneFileOrTwoAndTheKeyMustMatch() throws {
        let authority = try CertificateAuthority.makeEphemeral()
        let issued = try authority.issueAPNsClientCertificate(topic: Self.topic)
        #expect(try ClientCertificate(certificatePEM: issued.certificatePEM, privateKeyPEM: issued.privateKeyPEM).topic == Self.topic)
        let combined = issued.certificatePEM + issued.privateKeyPEM
        #expect(try ClientCertificate(certificatePEM: combined, privateKeyPEM: nil).topic == Self.topic)
        let split = ClientCertificate.splitPEM(combined)
        #expect(split.certificates == issued.certificatePEM)
        #expect(split.privateKey == issued.privateKeyPEM)

        let noKey = #expect(throws: HeraldTLSError.self) {
            try ClientCertificate(certificatePEM: issued.certificatePEM, privateKeyPEM: nil)
        }
        #expect(noKey?.code == .invalidPEM)
        let other = try authority.issueAPNsClientCertificate(topic: Self.topic)
        let mismatch = #expect(throws: HeraldTLSError.self) {
            try ClientCertificate(certificatePEM: issued.certificatePEM, privateKeyPEM: other.privateKeyPEM)
        }
        #expect(mismatch?.code == .keyMismatch)
        let notPEM = #expect(throws: HeraldTLSError.self) { try ClientCertificate(certificatePEM: "hello", privateKeyPEM: nil) }
        #expect(notPEM?.code == .invalidPEM)
    }

    @Test func aFileIsReadAsPKCS12OrPEMByItsContents() throws {
        let directory = CertificateAuthorityTests.temporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let issued = try CertificateAuthority.makeEphemeral().issueAPNsClientCertificate(topic: Self.topic)
        let p12 = directory + "/apns.p12"
        let cert = directory + "/cert.pem"
        let key = directory + "/key.pem"
        try Data(try issued.pkcs12(password: "pw")).write(to: URL(fileURLWithPath: p12))
        try issued.certificatePEM.write(toFile: cert, atomically: true, encoding: .utf8)
        try issued.privateKeyPEM.write(toFile: key, atomically: true, encoding: .utf8)
        #expect(try ClientCertificate(contentsOfFile: p12, password: "pw", keyFile: nil).topic == Self.topic)
        #expect(try ClientCertificate(contentsOfFile: cert, password: nil, keyFile: key).topic == Self.topic)
        let wrong = #expect(throws: HeraldTLSError.self) { try ClientCertificate(contentsOfFile: p12, password: "no", keyFile: nil) }
        #expect(wrong?.message.hasPrefix(p12) == true)
    }

    @Test func theEmulatorsCertificateIsWrittenAsPEMAndPKCS12AndReused() throws {
        let directory = CertificateAuthorityTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let authority = try CertificateAuthority.loadOrCreate(directory: directory)
        let first = try EmulatorCredentials.apnsClientCertificate(directory: directory, authority: authority, topic: Self.topic)
        #expect(try CertificateAuthorityTests.mode(of: first.pemPath) == 0o600)
        #expect(try CertificateAuthorityTests.mode(of: first.pkcs12Path) == 0o600)
        let fromPEM = try ClientCertificate(contentsOfFile: first.pemPath, password: nil, keyFile: nil)
        let fromPKCS12 = try ClientCertificate(contentsOfFile: first.pkcs12Path, password: first.pkcs12Password, keyFile: nil)
        #expect(fromPEM.topic == Self.topic)
        #expect(fromPKCS12.notValidAfter == fromPEM.notValidAfter)

        let again = try EmulatorCredentials.apnsClientCertificate(directory: directory, authority: authority, topic: Self.topic)
        #expect(again.certificate.notValidAfter == first.certificate.notValidAfter, "reused")
        // Another topic, or a certificate close to its end, is issued anew.
        let other = try EmulatorCredentials.apnsClientCertificate(directory: directory, authority: authority, topic: "com.example.other")
        #expect(other.certificate.topic == "com.example.other")
        let later = try EmulatorCredentials.apnsClientCertificate(
            directory: directory, authority: authority, topic: "com.example.other", now: Date().addingTimeInterval(340 * 86400))
        #expect(later.certificate.notValidAfter > other.certificate.notValidAfter)
    }
}
