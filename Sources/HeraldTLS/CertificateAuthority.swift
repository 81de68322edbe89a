import Crypto
public import Foundation
public import NIOSSL
import SwiftASN1
import X509

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A small local certificate authority: one P-256 root that signs leaf certificates for local TLS
/// servers (the push-service emulators), so that clients trust them by adding one PEM file.
public struct CertificateAuthority: Sendable {
    /// The common name of every CA this type creates.
    public static let commonName = "Herald Local CA"
    /// File names inside the directory given to ``loadOrCreate(directory:)``.
    public static let certificateFileName = "ca.pem"
    public static let privateKeyFileName = "ca-key.pem"

    private let certificate: Certificate
    private let privateKey: P256.Signing.PrivateKey

    /// The CA certificate, PEM encoded.
    public let certificatePEM: String
    /// Where `ca.pem` is, if on disk.
    public let certificatePath: String?

    private init(certificate: Certificate, privateKey: P256.Signing.PrivateKey, path: String?) throws {
        self.certificate = certificate
        self.privateKey = privateKey
        self.certificatePEM = try certificate.serializeAsPEM().pemString
        self.certificatePath = path
    }

    /// Loads `ca.pem` + `ca-key.pem` from `directory`, or creates them (P-256, 10 years, CN "Herald Local CA").
    /// Key files are written with mode 0600.
    ///
    /// Creates `directory` if needed. Throws ``HeraldTLSError`` if only one of the two files exists or
    /// the key does not belong to the certificate: it never silently replaces an existing CA.
    public static func loadOrCreate(directory: String) throws -> CertificateAuthority {
        try SecureFile.ensureDirectory(directory)
        let certificatePath = (directory as NSString).appendingPathComponent(certificateFileName)
        let keyPath = (directory as NSString).appendingPathComponent(privateKeyFileName)

        switch (try SecureFile.read(certificatePath), try SecureFile.read(keyPath)) {
        case (let certificatePEM?, let keyPEM?):
            let certificate: Certificate
            let key: P256.Signing.PrivateKey
            do {
                certificate = try Certificate(pemEncoded: certificatePEM)
            } catch {
                throw HeraldTLSError(code: .invalidPEM, message: "\(certificatePath) holds no certificate")
            }
            do {
                key = try P256.Signing.PrivateKey(pemRepresentation: keyPEM)
            } catch {
                throw HeraldTLSError(code: .invalidPEM, message: "\(keyPath) holds no P-256 private key")
            }
            guard certificate.publicKey == Certificate.PublicKey(key.publicKey) else {
                throw HeraldTLSError(
                    code: .keyMismatch,
                    message: "\(keyPath) is not the key of \(certificatePath)"
                )
            }
            return try CertificateAuthority(certificate: certificate, privateKey: key, path: certificatePath)
        case (nil, nil):
            let authority = try makeRoot(path: certificatePath)
            // The key first: a certificate without its key would be refused on the next start.
            try SecureFile.write(authority.privateKey.pemRepresentation, to: keyPath, mode: 0o600)
            try SecureFile.write(authority.certificatePEM, to: certificatePath, mode: 0o644)
            return authority
        case (nil, _?):
            throw HeraldTLSError(code: .keyMismatch, message: "\(keyPath) exists but \(certificatePath) does not")
        case (_?, nil):
            throw HeraldTLSError(code: .keyMismatch, message: "\(certificatePath) exists but \(keyPath) does not")
        }
    }

    /// A CA that lives in memory only, for tests.
    public static func makeEphemeral() throws -> CertificateAuthority {
        try makeRoot(path: nil)
    }

    private static func makeRoot(path: String?) throws -> CertificateAuthority {
        let key = P256.Signing.PrivateKey()
        let now = Date()
        let name = try DistinguishedName {
            CommonName(commonName)
            OrganizationName("Herald")
        }
        let publicKey = Certificate.PublicKey(key.publicKey)
        let certificate = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: publicKey,
            notValidBefore: now.addingTimeInterval(-3600),
            notValidAfter: now.addingTimeInterval(10 * 365.25 * 86400),
            issuer: name,
            subject: name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(digitalSignature: true, keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(hash: publicKey)
            },
            issuerPrivateKey: Certificate.PrivateKey(key)
        )
        return try CertificateAuthority(certificate: certificate, privateKey: key, path: path)
    }

    /// The CA's subject: the issuer of every certificate it signs.
    var subject: DistinguishedName { certificate.subject }
    /// The CA's public key, which verifies the certificates it signs.
    var publicKey: Certificate.PublicKey { certificate.publicKey }

    /// The CA certificate, for `TLSConfiguration.trustRoots = .certificates([…])`.
    public var sslCertificate: NIOSSLCertificate {
        get throws {
            try NIOSSLCertificate(bytes: try derBytes(of: certificate), format: .der)
        }
    }

    /// A leaf certificate for a TLS server (SAN: DNS names and IP addresses), signed by this CA, 1 year.
    ///
    /// Each entry of `hosts` that parses as an IPv4 or IPv6 address becomes an IP address SAN, every
    /// other entry a DNS name. An empty list means `["localhost", "127.0.0.1", "::1"]`. The chain is
    /// the leaf alone: clients trust the CA itself.
    public func issueServerIdentity(hosts: [String]) throws -> TLSIdentity {
        let hosts = hosts.isEmpty ? ["localhost", "127.0.0.1", "::1"] : hosts
        var names: [GeneralName] = []
        for host in hosts {
            if let address = Self.ipAddressBytes(host) {
                names.append(.ipAddress(ASN1OctetString(contentBytes: ArraySlice(address))))
            } else if Self.isValidDNSName(host) {
                names.append(.dnsName(host.lowercased()))
            } else {
                throw HeraldTLSError(code: .invalidHost, message: "\(host) is neither a DNS name nor an IP address")
            }
        }

        let leafKey = P256.Signing.PrivateKey()
        let now = Date()
        let subject = try DistinguishedName {
            CommonName(hosts[0])
            OrganizationName("Herald")
        }
        let leaf = try signLeaf(
            key: leafKey, subject: subject, now: now, notValidAfter: now.addingTimeInterval(365 * 86400),
            keyUsage: KeyUsage(digitalSignature: true, keyEncipherment: true), purpose: .serverAuth, names: names
        )

        let sslLeaf = try NIOSSLCertificate(bytes: try derBytes(of: leaf), format: .der)
        let sslKey = try NIOSSLPrivateKey(bytes: Array(leafKey.pemRepresentation.utf8), format: .pem)
        return TLSIdentity(certificateChain: [sslLeaf], privateKey: sslKey)
    }

    /// A TLS client certificate in the shape of Apple's APNs certificates, signed by this CA:
    /// the subject's `UID` is `topic` (the app's bundle id) and its common name
    /// "Apple Push Services: <topic>"; extended key usage client authentication; valid from an
    /// hour before `now` until `notValidAfter` (a year from `now` by default).
    ///
    /// Returns the certificate with its key, PEM (PKCS#8 key) and as a ``ClientCertificate``;
    /// ``IssuedClientCertificate/pkcs12(password:)`` makes the `.p12` form.
    public func issueAPNsClientCertificate(
        topic: String,
        now: Date = Date(),
        notValidAfter: Date? = nil
    ) throws -> IssuedClientCertificate {
        let leafKey = P256.Signing.PrivateKey()
        let subject = DistinguishedName([
            RelativeDistinguishedName(.init(type: ClientCertificate.userIDAttribute, utf8String: topic)),
            RelativeDistinguishedName(.init(type: ASN1ObjectIdentifier.RDNAttributeType.commonName, utf8String: "Apple Push Services: \(topic)")),
            RelativeDistinguishedName(.init(type: ASN1ObjectIdentifier.RDNAttributeType.organizationName, utf8String: "Herald")),
        ])
        let leaf = try signLeaf(
            key: leafKey, subject: subject, now: now, notValidAfter: notValidAfter ?? now.addingTimeInterval(365 * 86400),
            keyUsage: KeyUsage(digitalSignature: true), purpose: .clientAuth, names: nil
        )
        // Each ends with a newline, so that the two can be joined into one file.
        let certificatePEM = try leaf.serializeAsPEM().pemString + "\n"
        let keyPEM = leafKey.pemRepresentation + (leafKey.pemRepresentation.hasSuffix("\n") ? "" : "\n")
        return IssuedClientCertificate(
            certificatePEM: certificatePEM,
            privateKeyPEM: keyPEM,
            certificate: try ClientCertificate(certificatePEM: certificatePEM, privateKeyPEM: keyPEM)
        )
    }

    /// A leaf certificate for `key`, signed by this CA: not a CA itself, valid from an hour
    /// before `now` until `notValidAfter`, for one `purpose`, with `names` as its subject
    /// alternative names (none when `nil`), and key identifiers that chain it to this CA.
    private func signLeaf(
        key: P256.Signing.PrivateKey,
        subject: DistinguishedName,
        now: Date,
        notValidAfter: Date,
        keyUsage: KeyUsage,
        purpose: ExtendedKeyUsage.Usage,
        names: [GeneralName]?
    ) throws -> Certificate {
        let publicKey = Certificate.PublicKey(key.publicKey)
        let authorityKeyID = try certificate.extensions.subjectKeyIdentifier?.keyIdentifier
        return try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: publicKey,
            notValidBefore: now.addingTimeInterval(-3600),
            notValidAfter: notValidAfter,
            issuer: certificate.subject,
            subject: subject,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(keyUsage)
                try ExtendedKeyUsage([purpose])
                if let names {
                    SubjectAlternativeNames(names)
                }
                SubjectKeyIdentifier(hash: publicKey)
                if let authorityKeyID {
                    AuthorityKeyIdentifier(keyIdentifier: authorityKeyID)
                }
            },
            issuerPrivateKey: Certificate.PrivateKey(privateKey)
        )
    }

    private func derBytes(of certificate: Certificate) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        return serializer.serializedBytes
    }

    /// The 4 or 16 network-order bytes of an IP address literal, or `nil`.
    static func ipAddressBytes(_ host: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { Array($0) }
        }
        return nil
    }

    static func isValidDNSName(_ host: String) -> Bool {
        guard !host.isEmpty, host.utf8.count <= 253 else { return false }
        return host.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { label in
            !label.isEmpty && label.utf8.count <= 63
                && label.utf8.allSatisfy { byte in
                    (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                        || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                        || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                        || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "*") || byte == UInt8(ascii: "_")
                }
        }
    }
}

/// A client certificate a ``CertificateAuthority`` issued, in the forms clients load.
public struct IssuedClientCertificate: Sendable {
    /// The certificate, PEM.
    public let certificatePEM: String
    /// Its private key, PKCS#8 PEM.
    public let privateKeyPEM: String
    public let certificate: ClientCertificate

    /// The certificate and its key as a PKCS#12 archive (a `.p12` file) protected by `password`.
    public func pkcs12(password: String) throws -> [UInt8] {
        let bundle = NIOSSLPKCS12Bundle(
            certificateChain: certificate.identity.certificateChain,
            privateKey: certificate.identity.privateKey)
        return try bundle.serialize(passphrase: Array(password.utf8))
    }
}
