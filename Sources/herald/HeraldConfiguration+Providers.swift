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
            apns: .init(endpoint: apns.endpoint, trustRoots: try roots(apns.caFile), connections: apns.connections),
            fcm: .init(endpoint: fcm.endpoint, tokenURI: fcm.tokenURI, trustRoots: try roots(fcm.caFile)),
            wns: .init(tokenURI: wns.tokenURI, trustRoots: try roots(wns.caFile)),
            webPush: .init(
                trustRoots: try roots(webPush.caFile),
                allowedEndpointHosts: webPush.allowedHosts ?? WebPushConfiguration.knownPushServiceHosts
            )
        )
    }

    /// The server's own push credentials, read from the files the settings name; platforms
    /// without settings are left out. `vapidKeyPEM` is Herald's VAPID key, used once
    /// `HERALD_WEBPUSH_SUBJECT` is set.
    func serverCredentials(vapidKeyPEM: String) throws -> HubCredentials {
        var credentials = HubCredentials()
        if apns.isConfigured {
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

    /// One line per configured platform saying where it delivers, for the start-up banner.
    func configuredPlatformLines(_ credentials: HubCredentials) -> [Platform: String] {
        var lines: [Platform: String] = [:]
        if let apns = credentials.apns {
            lines[.apns] = "apns    \(self.apns.endpoint ?? "\(apns.environment) APNs") (key \(apns.keyID), team \(apns.teamID))"
        }
        if let fcm = credentials.fcm {
            lines[.fcm] = "fcm     \(self.fcm.endpoint ?? FCMConfiguration.defaultEndpoint) (project \(fcm.projectID ?? "?"))"
        }
        if let wns = credentials.wns {
            lines[.wns] = "wns     \(self.wns.tokenURI ?? WNSConfiguration.defaultTokenURI) (package \(wns.packageSID.prefix(24)))"
        }
        if let webPush = credentials.webPush {
            let hosts = self.webPush.allowedHosts ?? WebPushConfiguration.knownPushServiceHosts
            lines[.webpush] = "webpush push services of \(hosts.count) known hosts (VAPID key \(webPush.applicationServerKey?.prefix(12) ?? "?")…)"
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
