public import NIOSSL

/// Loading certificates to trust, for `TLSConfiguration.trustRoots = .certificates(…)`.
public enum TrustRoots {
    /// Certificates from a PEM file (one or more), for TLSConfiguration.trustRoots.
    public static func certificates(pemFile: String) throws -> [NIOSSLCertificate] {
        let certificates: [NIOSSLCertificate]
        do {
            certificates = try NIOSSLCertificate.fromPEMFile(pemFile)
        } catch {
            throw HeraldTLSError(code: .invalidPEM, message: "cannot load certificates from \(pemFile)")
        }
        guard !certificates.isEmpty else {
            throw HeraldTLSError(code: .invalidPEM, message: "no certificate in \(pemFile)")
        }
        return certificates
    }

    /// Certificates from PEM text (one or more).
    public static func certificates(pem: String) throws -> [NIOSSLCertificate] {
        let certificates: [NIOSSLCertificate]
        do {
            certificates = try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8))
        } catch {
            throw HeraldTLSError(code: .invalidPEM, message: "cannot parse PEM certificates")
        }
        guard !certificates.isEmpty else {
            throw HeraldTLSError(code: .invalidPEM, message: "no certificate in PEM text")
        }
        return certificates
    }
}
