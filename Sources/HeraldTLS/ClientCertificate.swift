import Crypto
public import Foundation
import HeraldCore
public import NIOSSL
import SwiftASN1
import X509

/// A TLS client certificate with its private key, as APNs certificate authentication uses it:
/// loaded from a PKCS#12 (`.p12`) file and its password, or from a PEM certificate and a PEM
/// key; or issued by a ``CertificateAuthority``.
///
/// Apple puts the app's bundle id in the certificate subject's `UID` attribute; ``topic`` reads
/// it. Descriptions name the subject and the expiry, never the key.
public struct ClientCertificate: Sendable, CustomStringConvertible {
    /// The chain (leaf first) and the key, ready for a TLS configuration.
    public let identity: TLSIdentity
    /// The subject's `UID` attribute (OID 0.9.2342.19200300.100.1.1): the app's bundle id in
    /// an APNs certificate; `nil` if the subject has none.
    public let topic: String?
    /// The subject's common name, if any (Apple's read "Apple Push Services: <bundle id>").
    public let commonName: String?
    public let notValidBefore: Date
    public let notValidAfter: Date

    /// The `UID` attribute type of a distinguished name (RFC 4519).
    static let userIDAttribute: ASN1ObjectIdentifier = [0, 9, 2342, 19_200_300, 100, 1, 1]

    init(identity: TLSIdentity, leaf: Certificate) {
        self.identity = identity
        self.topic = Self.attribute(Self.userIDAttribute, of: leaf.subject)
        self.commonName = Self.attribute(ASN1ObjectIdentifier.RDNAttributeType.commonName, of: leaf.subject)
        self.notValidBefore = leaf.notValidBefore
        self.notValidAfter = leaf.notValidAfter
    }

    /// Reads a PKCS#12 archive (the `.p12` exported from Keychain Access) protected by
    /// `password` (empty for none).
    ///
    /// - Throws: ``HeraldTLSError`` with code ``HeraldTLSError/Code/invalidPKCS12`` when the bytes
    ///   are not PKCS#12 or the password is wrong (the two cannot be told apart), and
    ///   ``HeraldTLSError/Code/keyMismatch`` when the key is not the certificate's.
    public init(pkcs12 bytes: [UInt8], password: String) throws {
        let bundle: NIOSSLPKCS12Bundle
        do {
            bundle = try NIOSSLPKCS12Bundle(buffer: bytes, passphrase: Array(password.utf8))
        } catch {
            throw HeraldTLSError(
                code: .invalidPKCS12,
                message: "the certificate is not a PKCS#12 (.p12) archive, or its password is wrong")
        }
        guard let first = bundle.certificateChain.first else {
            throw HeraldTLSError(code: .invalidPKCS12, message: "the PKCS#12 archive holds no certificate")
        }
        try self.init(identity: TLSIdentity(certificateChain: bundle.certificateChain, privateKey: bundle.privateKey), leaf: first)
    }

    /// Reads PEM text: one or more certificates (the leaf first) and the leaf's private key.
    /// `privateKeyPEM` may be `nil` when `certificatePEM` holds the key too (one combined file).
    ///
    /// - Throws: ``HeraldTLSError`` (``HeraldTLSError/Code/invalidPEM`` or
    ///   ``HeraldTLSError/Code/keyMismatch``); messages never quote the key.
    public init(certificatePEM: String, privateKeyPEM: String?) throws {
        // Certificates and a key may share the text; each is parsed on its own.
        let blocks = Self.splitPEM(certificatePEM)
        let chain: [NIOSSLCertificate]
        do {
            chain = blocks.certificates.isEmpty ? [] : try NIOSSLCertificate.fromPEMBytes(Array(blocks.certificates.utf8))
        } catch {
            throw HeraldTLSError(code: .invalidPEM, message: "the certificate is not PEM (-----BEGIN CERTIFICATE-----)")
        }
        guard let first = chain.first else {
            throw HeraldTLSError(code: .invalidPEM, message: "the PEM text holds no certificate (-----BEGIN CERTIFICATE-----)")
        }
        guard let keyText = privateKeyPEM ?? blocks.privateKey, keyText.contains("PRIVATE KEY-----") else {
            throw HeraldTLSError(code: .invalidPEM, message: "no PEM private key was given for the certificate")
        }
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(bytes: Array(keyText.utf8), format: .pem)
        } catch {
            throw HeraldTLSError(code: .invalidPEM, message: "the certificate's key is not an unencrypted PEM private key")
        }
        try self.init(identity: TLSIdentity(certificateChain: chain, privateKey: key), leaf: first)
    }

    /// Reads a file that holds either a PKCS#12 archive or PEM text (told apart by its
    /// contents): a `.p12` is opened with `password`; PEM text takes its key from `keyFile`, or
    /// from the same file when that is `nil`.
    public init(contentsOfFile path: String, password: String?, keyFile: String?) throws {
        self = try Self.load(path, password: password, keyFile: keyFile)
    }

    private static func load(_ path: String, password: String?, keyFile: String?) throws -> ClientCertificate {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw HeraldTLSError(code: .fileSystem, message: "cannot read \(path)")
        }
        if let text = String(data: data, encoding: .utf8), text.contains("-----BEGIN ") {
            var key: String?
            if let keyFile {
                guard let keyData = FileManager.default.contents(atPath: keyFile),
                    let keyText = String(data: keyData, encoding: .utf8)
                else {
                    throw HeraldTLSError(code: .fileSystem, message: "cannot read \(keyFile)")
                }
                key = keyText
            }
            do {
                return try ClientCertificate(certificatePEM: text, privateKeyPEM: key)
            } catch let error as HeraldTLSError {
                throw HeraldTLSError(code: error.code, message: "\(path): \(error.message)")
            }
        } else {
            do {
                return try ClientCertificate(pkcs12: Array(data), password: password ?? "")
            } catch let error as HeraldTLSError {
                throw HeraldTLSError(code: error.code, message: "\(path): \(error.message)")
            }
        }
    }

    private init(identity: TLSIdentity, leaf: NIOSSLCertificate) throws {
        let certificate: Certificate
        do {
            certificate = try Certificate(derEncoded: try leaf.toDERBytes())
        } catch {
            throw HeraldTLSError(code: .invalidPEM, message: "the certificate cannot be parsed")
        }
        // A TLS context refuses a key that is not the certificate's.
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.certificateChain = identity.certificateChain.map { .certificate($0) }
        configuration.privateKey = .privateKey(identity.privateKey)
        do {
            _ = try NIOSSLContext(configuration: configuration)
        } catch {
            throw HeraldTLSError(code: .keyMismatch, message: "the private key does not belong to the certificate")
        }
        self.init(identity: identity, leaf: certificate)
    }

    /// Splits PEM text into its certificate blocks and its private-key block (the first one,
    /// `nil` if there is none), so that a combined file can be kept as certificate and key.
    public static func splitPEM(_ text: String) -> (certificates: String, privateKey: String?) {
        var certificates = ""
        var key: String?
        var block: [Substring] = []
        // A block glued to the one before it ("-----END …----------BEGIN …") starts a line.
        let text = text.replacingOccurrences(of: "----------", with: "-----\n-----")
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingWhitespace()
            if trimmed.hasPrefix("-----BEGIN ") { block = [] }
            block.append(Substring(trimmed))
            if trimmed.hasPrefix("-----END ") {
                let pem = block.joined(separator: "\n") + "\n"
                if trimmed.contains("PRIVATE KEY") {
                    if key == nil { key = pem }
                } else if trimmed.contains("CERTIFICATE") {
                    certificates += pem
                }
                block = []
            }
        }
        return (certificates, key)
    }

    /// Whether the certificate is expired at `now`, or will be within `interval` of it.
    public func expires(within interval: TimeInterval, of now: Date = Date()) -> Bool {
        notValidAfter.timeIntervalSince(now) < interval
    }

    public var description: String {
        let subject = topic.map { "UID \($0)" } ?? commonName.map { "CN \($0)" } ?? "no subject name"
        return "certificate \(subject), valid until \(Self.format(notValidAfter))"
    }

    /// `2027-01-31T12:00:00Z`.
    public static func format(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }

    static func attribute(_ type: ASN1ObjectIdentifier, of name: DistinguishedName) -> String? {
        for rdn in name {
            for attribute in rdn where attribute.type == type {
                if let value = String(attribute.value) { return value }
            }
        }
        return nil
    }
}

extension ClientCertificate {
    /// Checks `certificate` (a TLS client's leaf certificate) against `authority`: signed by
    /// its key and valid at `now`. Returns the certificate's details, or `nil` when it was not
    /// issued by `authority` or is outside its validity period.
    public static func verified(
        _ certificate: NIOSSLCertificate,
        issuedBy authority: CertificateAuthority,
        now: Date
    ) -> (topic: String?, notValidAfter: Date)? {
        guard let parsed = try? Certificate(derEncoded: try certificate.toDERBytes()),
            parsed.issuer == authority.subject,
            authority.publicKey.isValidSignature(parsed.signature, for: parsed),
            parsed.notValidBefore <= now, now <= parsed.notValidAfter
        else { return nil }
        return (attribute(userIDAttribute, of: parsed.subject), parsed.notValidAfter)
    }

    /// The validity period of a TLS client's leaf certificate, or `nil` if it cannot be parsed.
    public static func validity(of certificate: NIOSSLCertificate) -> ClosedRange<Date>? {
        guard let parsed = try? Certificate(derEncoded: try certificate.toDERBytes()),
            parsed.notValidBefore <= parsed.notValidAfter
        else { return nil }
        return parsed.notValidBefore...parsed.notValidAfter
    }
}
