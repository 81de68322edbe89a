import Foundation
import HeraldCore
import HeraldHub
import HeraldPush
import HeraldTLS
import NIOSSL

extension HeraldConfiguration {
    /// Where the push services are (`HERALD_APNS_ENDPOINT`, `HERALD_FCM_CA_FILE`, …): the
    /// settings of the server's configured providers and of every hub's own.
    func pushServiceSettings() throws -> PushServiceSettings {
        func roots(_ file: String?) throws -> [NIOSSLCertificate]? {
            try file.map { try TrustRoots.certificates(pemFile: $0) }
        }
        return PushServiceSettings(
            apns: .init(
                endpoint: apns.endpoint, trustRoots: try roots(apns.caFile), connections: apns.connections,
                broadcastManagementEndpoint: apns.broadcastEndpoint),
            fcm: .init(endpoint: fcm.endpoint, tokenURI: fcm.tokenURI, trustRoots: try roots(fcm.caFile)),
            wns: .init(tokenURI: wns.tokenURI, trustRoots: try roots(wns.caFile), allowedChannelHosts: wns.allowedHosts),
            webPush: .init(trustRoots: try roots(webPush.caFile), allowedEndpointHosts: webPush.allowedHosts)
        )
    }

    /// How this node posts webhook events (`HERALD_WEBHOOK_ALLOWED_HOSTS`, …).
    func webhookPosterConfiguration() throws -> WebhookPoster.Configuration {
        var poster = WebhookPoster.Configuration()
        poster.allowedHosts = webhooks.allowedHosts
        poster.plainHTTPHosts = webhooks.plainHTTPHosts
        poster.trustRoots = try webhooks.caFile.map { try TrustRoots.certificates(pemFile: $0) }
        poster.timeout = .seconds(webhooks.timeoutSeconds)
        poster.connectTimeout = min(.seconds(5), poster.timeout)
        return poster
    }

    /// The server's own push credentials, read from the files the settings name; platforms
    /// without settings are left out. `vapidKeyPEM` is Herald's VAPID key, used once
    /// `HERALD_WEBPUSH_SUBJECT` is set.
    func serverCredentials(vapidKeyPEM: String) throws -> HubCredentials {
        var credentials = HubCredentials()
        if apns.usesCertificate {
            credentials.apns = try apnsCertificateCredentials()
        } else if apns.isConfigured {
            guard let keyFile = apns.keyFile, let keyID = apns.keyID, let teamID = apns.teamID else {
                throw ConfigurationError("APNs needs HERALD_APNS_KEY_FILE, HERALD_APNS_KEY_ID and HERALD_APNS_TEAM_ID together")
            }
            guard let topic = apns.topic else {
                throw ConfigurationError("APNs needs HERALD_APNS_TOPIC: the app's bundle id")
            }
            credentials.apns = HubCredentials.APNs(
                keyID: keyID, teamID: teamID, topic: topic, environment: apns.environment,
                privateKeyPEM: try Self.readText(keyFile, setting: "HERALD_APNS_KEY_FILE")
            )
        }
        if let file = fcm.serviceAccountFile {
            credentials.fcm = HubCredentials.FCM(
                serviceAccountJSON: try Self.readText(file, setting: "HERALD_FCM_SERVICE_ACCOUNT_FILE")
            )
        }
        if wns.isConfigured {
            guard let sid = wns.packageSID, let secret = wns.clientSecret else {
                throw ConfigurationError("WNS needs HERALD_WNS_PACKAGE_SID and HERALD_WNS_CLIENT_SECRET together")
            }
            credentials.wns = HubCredentials.WNS(packageSID: sid, clientSecret: secret)
        }
        if let subject = webPush.subject {
            credentials.webPush = HubCredentials.WebPush(subject: subject, vapidPrivateKeyPEM: vapidKeyPEM)
        }
        return credentials
    }

    /// The server's APNs certificate credentials, from `HERALD_APNS_CERT_FILE` (a `.p12` or
    /// PEM, told apart by its contents) and its password or key file; the topic defaults to
    /// the certificate's subject UID.
    private func apnsCertificateCredentials() throws -> HubCredentials.APNs {
        guard !apns.usesToken else {
            throw ConfigurationError(
                "APNs takes either HERALD_APNS_CERT_FILE (certificate authentication) or HERALD_APNS_KEY_FILE, HERALD_APNS_KEY_ID and HERALD_APNS_TEAM_ID (token authentication), not both"
            )
        }
        guard let certFile = apns.certFile else {
            throw ConfigurationError("HERALD_APNS_CERT_PASSWORD and HERALD_APNS_CERT_KEY_FILE need HERALD_APNS_CERT_FILE: the APNs certificate")
        }
        guard let data = FileManager.default.contents(atPath: certFile) else {
            throw ConfigurationError("cannot read HERALD_APNS_CERT_FILE \(certFile)")
        }
        var credentials: HubCredentials.APNs
        if let text = String(data: data, encoding: .utf8), text.contains("-----BEGIN ") {
            guard apns.certPassword == nil else {
                throw ConfigurationError(
                    "HERALD_APNS_CERT_PASSWORD goes with a .p12 HERALD_APNS_CERT_FILE; \(certFile) is PEM (its key: HERALD_APNS_CERT_KEY_FILE, or in the same file)"
                )
            }
            let key = try apns.certKeyFile.map { try Self.readText($0, setting: "HERALD_APNS_CERT_KEY_FILE") }
            let split = ClientCertificate.splitPEM(text)
            guard let keyPEM = key ?? split.privateKey else {
                throw ConfigurationError("HERALD_APNS_CERT_FILE \(certFile) holds no private key; give it with HERALD_APNS_CERT_KEY_FILE")
            }
            credentials = HubCredentials.APNs(
                certificatePEM: split.certificates, keyPEM: keyPEM, topic: "", environment: apns.environment)
        } else {
            guard apns.certKeyFile == nil else {
                throw ConfigurationError(
                    "HERALD_APNS_CERT_KEY_FILE goes with a PEM HERALD_APNS_CERT_FILE; \(certFile) is a .p12, which holds its key (give HERALD_APNS_CERT_PASSWORD)"
                )
            }
            credentials = HubCredentials.APNs(
                certificatePKCS12: Array(data), password: apns.certPassword ?? "", topic: "", environment: apns.environment)
        }
        let certificate: ClientCertificate?
        do {
            certificate = try credentials.clientCertificate()
        } catch {
            throw ConfigurationError("HERALD_APNS_CERT_FILE \(certFile): \(error.message)")
        }
        guard let topic = apns.topic ?? certificate?.topic else {
            throw ConfigurationError("APNs needs HERALD_APNS_TOPIC: the certificate's subject has no UID (bundle id) to take it from")
        }
        credentials.topic = topic
        return credentials
    }

    /// One line per configured platform saying where it delivers, for the start-up banner.
    func configuredPlatformLines(_ credentials: HubCredentials) -> [Platform: String] {
        var lines: [Platform: String] = [:]
        if let apns = credentials.apns {
            let signIn =
                apns.usesCertificate
                ? "certificate, topic \(apns.topic), expires \(apns.certificateExpiry.map(ClientCertificate.format) ?? "?")"
                : "key \(apns.keyID ?? "?"), team \(apns.teamID ?? "?")"
            lines[.apns] = "apns    \(self.apns.endpoint ?? "\(apns.environment) APNs") (\(signIn))"
        }
        if let fcm = credentials.fcm {
            lines[.fcm] = "fcm     \(self.fcm.endpoint ?? FCMConfiguration.defaultEndpoint) (project \(fcm.projectID ?? "?"))"
        }
        if let wns = credentials.wns {
            lines[.wns] = "wns     \(self.wns.tokenURI ?? WNSConfiguration.defaultTokenURI) (package \(wns.packageSID.prefix(24)))"
        }
        if let webPush = credentials.webPush {
            lines[.webpush] = "webpush push services at \(self.webPush.allowedHosts) (VAPID key \(webPush.applicationServerKey?.prefix(12) ?? "?")…)"
        }
        return lines
    }

    private static func readText(_ path: String, setting: String) throws -> String {
        guard let text = FileManager.default.contents(atPath: path).flatMap({ String(data: $0, encoding: .utf8) }) else {
            throw ConfigurationError("cannot read \(setting) \(path)")
        }
        return text
    }
}
