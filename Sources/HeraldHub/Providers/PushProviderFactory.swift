import Foundation
import HeraldCore
public import HeraldMetrics
public import HeraldPush
import HeraldTLS
public import Logging

/// Makes push providers: one small function per platform, from that platform's credentials
/// (the server's, or a hub's own) and the settings that say where the service is.
///
/// Every provider Herald runs is made here: the server's (from its configuration, or from
/// the emulators' credentials) and those of hubs with credentials of their own.
public struct PushProviderFactory: Sendable {
    public var settings: PushServiceSettings
    public var logger: Logger
    /// Where the providers record their requests and token refreshes.
    public var metrics: HeraldMetrics?
    /// Where APNs provider tokens are kept and shared: the server passes one backed by its
    /// hub storage, so a restart or another node goes on with the token in use.
    public var apnsTokens: APNsTokenCache

    public init(
        settings: PushServiceSettings = PushServiceSettings(),
        logger: Logger,
        metrics: HeraldMetrics? = nil,
        apnsTokens: APNsTokenCache = .shared
    ) {
        self.settings = settings
        self.logger = logger
        self.metrics = metrics
        self.apnsTokens = apnsTokens
    }

    /// One provider for each platform that `credentials` configure.
    public func providers(for credentials: HubCredentials) throws -> [any PushProvider] {
        var providers: [any PushProvider] = []
        if let apns = credentials.apns { providers.append(try apnsProvider(apns)) }
        if let fcm = credentials.fcm { providers.append(try fcmProvider(fcm)) }
        if let wns = credentials.wns { providers.append(try wnsProvider(wns)) }
        if let webPush = credentials.webPush { providers.append(try webPushProvider(webPush)) }
        return providers
    }

    public func apnsProvider(_ credentials: HubCredentials.APNs) throws -> APNsProvider {
        let environment: APNsConfiguration.Environment = credentials.environment == "sandbox" ? .sandbox : .production
        var apns: APNsConfiguration
        if let certificate = try credentials.clientCertificate() {
            apns = APNsConfiguration(environment: environment, clientCertificate: certificate, topic: credentials.topic)
            warnIfExpiring(certificate, topic: credentials.topic)
        } else {
            apns = APNsConfiguration(
                environment: environment,
                teamID: credentials.teamID ?? "",
                keyID: credentials.keyID ?? "",
                privateKeyPEM: credentials.privateKeyPEM ?? "",
                topic: credentials.topic
            )
        }
        if let endpoint = settings.apns.endpoint { apns.endpoint = endpoint }
        if let endpoint = settings.apns.broadcastManagementEndpoint { apns.broadcastManagementEndpoint = endpoint }
        apns.trustRoots = settings.apns.trustRoots
        apns.connections = settings.apns.connections
        return try APNsProvider(configuration: apns, logger: logger, tokenCache: apnsTokens, metrics: metrics)
    }

    /// How long before its expiry a client certificate is warned about when a provider is made.
    public static let certificateExpiryWarning: Duration = .seconds(30 * 86400)

    /// Logs a warning when `certificate` expires within ``certificateExpiryWarning`` (or has).
    func warnIfExpiring(_ certificate: ClientCertificate, topic: String, now: Date = Date()) {
        guard certificate.expires(within: Double(Self.certificateExpiryWarning.components.seconds), of: now) else { return }
        let days = Int((certificate.notValidAfter.timeIntervalSince(now) / 86400).rounded(.down))
        logger.warning(
            days < 0 ? "the APNs client certificate has expired" : "the APNs client certificate expires within 30 days",
            metadata: [
                "apns.topic": "\(topic)", "apns.certificate": "\(certificate)",
                "apns.certificate.not_after": "\(ClientCertificate.format(certificate.notValidAfter))",
                "apns.certificate.days_left": "\(max(days, 0))",
            ])
    }

    /// - Throws: `badRequest` for a service account whose `token_uri` is not on the settings'
    ///   allowed token hosts, when the settings name no token URL of their own.
    public func fcmProvider(_ credentials: HubCredentials.FCM) throws -> FCMProvider {
        let account = try FCMServiceAccount(json: Data(credentials.serviceAccountJSON.utf8))
        if settings.fcm.tokenURI == nil, settings.fcm.allowedTokenHosts.allowedHost(ofHTTPSURL: account.tokenURI) == nil {
            throw HeraldError.badRequest(
                "the FCM service account's token_uri is not a Google token endpoint (\(settings.fcm.allowedTokenHosts)); the server sets another with HERALD_FCM_TOKEN_URI"
            )
        }
        var fcm = FCMConfiguration(serviceAccount: account)
        if let endpoint = settings.fcm.endpoint { fcm.endpoint = endpoint }
        fcm.tokenURI = settings.fcm.tokenURI
        fcm.trustRoots = settings.fcm.trustRoots
        return try FCMProvider(configuration: fcm, logger: logger, metrics: metrics)
    }

    public func wnsProvider(_ credentials: HubCredentials.WNS) throws -> WNSProvider {
        var wns = WNSConfiguration(packageSID: credentials.packageSID, clientSecret: credentials.clientSecret)
        if let tokenURI = settings.wns.tokenURI { wns.tokenURI = tokenURI }
        wns.trustRoots = settings.wns.trustRoots
        wns.allowedChannelHosts = settings.wns.allowedChannelHosts
        return try WNSProvider(configuration: wns, logger: logger, metrics: metrics)
    }

    public func webPushProvider(_ credentials: HubCredentials.WebPush) throws -> WebPushProvider {
        var webPush = WebPushConfiguration(vapidPrivateKey: credentials.vapidPrivateKeyPEM, subject: credentials.subject)
        webPush.trustRoots = settings.webPush.trustRoots
        webPush.allowedEndpointHosts = settings.webPush.allowedEndpointHosts
        return try WebPushProvider(configuration: webPush, logger: logger, metrics: metrics)
    }
}
