public import NIOSSL

/// A certificate chain and its private key: what a TLS server presents.
public struct TLSIdentity: Sendable {
    /// The leaf certificate first, then any intermediates.
    public var certificateChain: [NIOSSLCertificate]
    public var privateKey: NIOSSLPrivateKey

    public init(certificateChain: [NIOSSLCertificate], privateKey: NIOSSLPrivateKey) {
        self.certificateChain = certificateChain
        self.privateKey = privateKey
    }

    /// A server TLS configuration presenting this identity, offering `applicationProtocols` in ALPN.
    public func makeServerConfiguration(applicationProtocols: [String] = ["h2", "http/1.1"]) -> TLSConfiguration {
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: certificateChain.map { .certificate($0) },
            privateKey: .privateKey(privateKey)
        )
        configuration.applicationProtocols = applicationProtocols
        configuration.minimumTLSVersion = .tlsv12
        return configuration
    }
}
