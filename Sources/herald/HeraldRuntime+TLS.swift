import Foundation
import HeraldCore
import HeraldHub
import HeraldPush
import HeraldServer
import HeraldTLS
import Logging
import NIOSSL

extension HeraldRuntime {
    /// The certificate and key the TLS listener serves: the configured ones, or one issued
    /// by Herald's local certificate authority in `<data-dir>/tls`, whose certificate is
    /// exported to `<data-dir>/tls/ca.pem` for clients to trust.
    func tlsIdentity() throws -> (configuration: TLSConfiguration, description: String) {
        if let certFile = configuration.tlsCertFile {
            guard let keyFile = configuration.tlsKeyFile else {
                throw ConfigurationError("HERALD_TLS_CERT_FILE needs HERALD_TLS_KEY_FILE: the certificate's private key")
            }
            let chain = try NIOSSLCertificate.fromPEMFile(certFile).map { NIOSSLCertificateSource.certificate($0) }
            let key = try NIOSSLPrivateKey(file: keyFile, format: .pem)
            var tls = TLSConfiguration.makeServerConfiguration(certificateChain: chain, privateKey: .privateKey(key))
            tls.applicationProtocols = ["http/1.1"]
            return (tls, "certificate \(certFile)")
        }
        let directory = "\(configuration.dataDirectory)/tls"
        let authority = try CertificateAuthority.loadOrCreate(directory: directory)
        var hosts = ["localhost", "127.0.0.1", "::1"]
        if !hosts.contains(configuration.host), configuration.host != "0.0.0.0", configuration.host != "::" {
            hosts.append(configuration.host)
        }
        if let endpoint = configuration.hubEndpoint, let host = URL(string: endpoint.replacingOccurrences(of: "sb://", with: "https://"))?.host,
            !hosts.contains(host)
        {
            hosts.append(host)
        }
        let identity = try authority.issueServerIdentity(hosts: hosts)
        // The listener speaks HTTP/1.1 only: advertising h2 would mislead clients.
        let caPath = authority.certificatePath ?? "\(directory)/\(CertificateAuthority.certificateFileName)"
        return (identity.makeServerConfiguration(applicationProtocols: ["http/1.1"]), "generated for \(hosts.joined(separator: ", ")); clients trust \(caPath)")
    }
}
