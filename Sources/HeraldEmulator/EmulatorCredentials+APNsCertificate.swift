public import Foundation
public import HeraldTLS

/// The APNs emulator's client certificate for its demo topic, on disk: what a provider
/// presents for certificate authentication instead of signing provider tokens.
public struct EmulatorAPNsCertificate: Sendable {
    /// The certificate and its private key in one PEM file (mode 0600), for
    /// `HERALD_APNS_CERT_FILE` alone, `curl --cert` or Python's `ssl.load_cert_chain`.
    public let pemPath: String
    /// The same as a PKCS#12 archive (mode 0600), protected by ``pkcs12Password``.
    public let pkcs12Path: String
    public let pkcs12Password: String
    public let certificate: ClientCertificate
}

extension EmulatorCredentials {
    public static let apnsCertificatePEMFileName = "apns-client.pem"
    public static let apnsCertificatePKCS12FileName = "apns-client.p12"
    /// The password of ``apnsCertificatePKCS12FileName``: the file is a local test credential.
    public static let apnsCertificatePKCS12Password = "herald"

    /// The client certificate for `topic` in `directory`, issued by `authority`: the one on
    /// disk while it was issued by `authority` for `topic` and is valid for 30 more days,
    /// otherwise a new one (valid a year), written over the old files.
    public static func apnsClientCertificate(
        directory: String,
        authority: CertificateAuthority,
        topic: String,
        now: Date = Date()
    ) throws -> EmulatorAPNsCertificate {
        try SecureFile.ensureDirectory(directory)
        let pemPath = (directory as NSString).appendingPathComponent(apnsCertificatePEMFileName)
        let pkcs12Path = (directory as NSString).appendingPathComponent(apnsCertificatePKCS12FileName)
        let password = apnsCertificatePKCS12Password
        if let pem = try SecureFile.read(pemPath), FileManager.default.fileExists(atPath: pkcs12Path),
            let existing = try? ClientCertificate(certificatePEM: pem, privateKeyPEM: nil),
            let leaf = existing.identity.certificateChain.first,
            let verified = ClientCertificate.verified(leaf, issuedBy: authority, now: now),
            verified.topic == topic, !existing.expires(within: 30 * 86400, of: now)
        {
            return EmulatorAPNsCertificate(pemPath: pemPath, pkcs12Path: pkcs12Path, pkcs12Password: password, certificate: existing)
        }
        let issued = try authority.issueAPNsClientCertificate(topic: topic, now: now)
        try SecureFile.write(issued.certificatePEM + issued.privateKeyPEM, to: pemPath, mode: 0o600)
        try SecureFile.write(bytes: issued.pkcs12(password: password), to: pkcs12Path, mode: 0o600)
        return EmulatorAPNsCertificate(
            pemPath: pemPath, pkcs12Path: pkcs12Path, pkcs12Password: password, certificate: issued.certificate)
    }
}
