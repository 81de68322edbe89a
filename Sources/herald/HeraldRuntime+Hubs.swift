import Foundation
import HeraldCore
import HeraldHub
import HeraldPush
import HeraldServer
import HeraldTLS
import Logging
import NIOSSL

extension HeraldRuntime {
    /// The push providers of one hub: made from the hub's own credentials where it has
    /// them (`herald hub set-credentials`), the server's otherwise, emulators included. A
    /// hub's own credentials go to the endpoints, and trust the CAs, that the server's
    /// settings name (`HERALD_APNS_ENDPOINT`, `HERALD_FCM_CA_FILE`, …).
    static func providers(
        for definition: HubDefinition,
        serverProviders: [any PushProvider],
        configuration: HeraldConfiguration,
        logger: Logger
    ) throws -> [any PushProvider] {
        var byPlatform: [Platform: any PushProvider] = [:]
        for provider in serverProviders { byPlatform[provider.platform] = provider }
        let credentials = definition.credentials
        if let apns = credentials.apns {
            byPlatform[.apns] = try makeAPNsProvider(
                teamID: apns.teamID, keyID: apns.keyID, privateKeyPEM: apns.privateKeyPEM, topic: apns.topic,
                environment: apns.environment, settings: configuration.apns, logger: logger
            )
        }
        if let fcm = credentials.fcm {
            let account = try FCMServiceAccount(json: Data(fcm.serviceAccountJSON.utf8))
            byPlatform[.fcm] = try makeFCMProvider(account, settings: configuration.fcm, logger: logger).provider
        }
        if let wns = credentials.wns {
            byPlatform[.wns] = try makeWNSProvider(
                packageSID: wns.packageSID, clientSecret: wns.clientSecret, settings: configuration.wns, logger: logger
            ).provider
        }
        if let webPush = credentials.webPush {
            byPlatform[.webpush] = try makeWebPushProvider(
                vapidPrivateKeyPEM: webPush.vapidPrivateKeyPEM, subject: webPush.subject, settings: configuration.webPush,
                logger: logger
            ).provider
        }
        return Array(byPlatform.values)
    }

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
