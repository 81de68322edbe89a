import Crypto
import Foundation
import HeraldCore
import HeraldEmulator
import HeraldHub
import HeraldPush
import HeraldServer
import HeraldStore
import HeraldTLS
import Logging
import ServiceLifecycle

/// A running Herald: the push providers (real, or the built-in emulators for platforms
/// without credentials), the hubs of the data directory's catalog, and among them the app
/// backend's hub, open. Shared by `serve`, `demo` and `bench`.
struct HeraldRuntime {
    let configuration: HeraldConfiguration
    let catalog: HubCatalog
    /// Opens every hub and runs their workers (run it as a service).
    let registry: HubRegistry
    /// The name of the hub that keeps the app backend's devices, accounts and content.
    let appHubName: String
    /// The app backend's hub's engine.
    let hub: HubEngine
    /// The server's own providers, which hubs without credentials of their own deliver through.
    let providers: [any PushProvider]
    var apnsEmulator: APNsEmulator?
    var fcmEmulator: FCMEmulator?
    var webPushEmulator: WebPushEmulator?
    var wnsEmulator: WNSEmulator?
    var emulatorDirectory: EmulatorDirectory?
    /// One line per platform saying how it is delivered, for the start-up banner.
    var platformLines: [String] = []

    /// Services to run beside the HTTP server: the emulators, which close on shutdown.
    var services: [any Service] {
        var services: [any Service] = []
        if let apnsEmulator { services.append(apnsEmulator) }
        if let fcmEmulator { services.append(fcmEmulator) }
        if let webPushEmulator { services.append(webPushEmulator) }
        if let wnsEmulator { services.append(wnsEmulator) }
        return services
    }

    static func start(
        _ configuration: HeraldConfiguration,
        hubConfiguration: HubEngine.Configuration = HubEngine.Configuration(),
        openDeviceRegistry: Bool = false,
        recordsPayloads: Bool = true,
        logger: Logger
    ) async throws -> HeraldRuntime {
        let dataDirectory = configuration.dataDirectory
        try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)

        var providers: [any PushProvider] = []
        var lines: [String] = []
        var apnsEmulator: APNsEmulator?
        var fcmEmulator: FCMEmulator?
        var directory: EmulatorDirectory?
        let wantsEmulators = configuration.emulators == "auto"
        var authority: CertificateAuthority?
        var credentials: EmulatorCredentials?
        if wantsEmulators, !configuration.apns.isConfigured || !configuration.fcm.isConfigured || !configuration.webPush.isConfigured
            || !configuration.wns.isConfigured
        {
            authority = try CertificateAuthority.loadOrCreate(directory: "\(dataDirectory)/emulator")
            credentials = try EmulatorCredentials.loadOrCreate(directory: "\(dataDirectory)/emulator")
        }

        // APNs
        if configuration.apns.isConfigured {
            providers.append(try makeAPNsProvider(configuration.apns, logger: logger))
            let endpoint = configuration.apns.endpoint ?? "\(configuration.apns.environment) APNs"
            lines.append("apns    \(endpoint) (key \(configuration.apns.keyID ?? "?"), team \(configuration.apns.teamID ?? "?"))")
        } else if let authority, let credentials {
            var emulatorConfiguration = APNsEmulator.Configuration(
                identity: try authority.issueServerIdentity(hosts: ["localhost", "127.0.0.1"]),
                signingKeys: [credentials.apnsSigningKey]
            )
            emulatorConfiguration.port = configuration.emulatorAPNsPort
            emulatorConfiguration.topics = [configuration.emulatorTopic]
            emulatorConfiguration.openDeviceRegistry = openDeviceRegistry
            emulatorConfiguration.recordsPayloads = recordsPayloads
            let emulator = try await APNsEmulator.start(configuration: emulatorConfiguration, logger: logger)
            var apns = APNsConfiguration(
                teamID: credentials.apnsTeamID,
                keyID: credentials.apnsKeyID,
                privateKeyPEM: credentials.apnsPrivateKeyPEM,
                topic: configuration.emulatorTopic
            )
            apns.endpoint = emulator.baseURL
            apns.trustRoots = [try authority.sslCertificate]
            apns.connections = configuration.apns.connections
            providers.append(try APNsProvider(configuration: apns, logger: logger))
            apnsEmulator = emulator
            lines.append("apns    built-in emulator at \(emulator.baseURL) (no APNs credentials configured)")
        } else {
            lines.append("apns    not configured: APNs devices can register, sends count as PnsNotConfigured")
        }

        // FCM
        if configuration.fcm.isConfigured, let file = configuration.fcm.serviceAccountFile {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw ConfigurationError("cannot read HERALD_FCM_SERVICE_ACCOUNT_FILE \(file)")
            }
            let fcm = try Self.makeFCMProvider(FCMServiceAccount(json: data), settings: configuration.fcm, logger: logger)
            providers.append(fcm.provider)
            lines.append("fcm     \(fcm.configuration.endpoint) (project \(fcm.configuration.serviceAccount.projectID))")
        } else if let authority, let credentials {
            var emulatorConfiguration = FCMEmulator.Configuration(
                identity: try authority.issueServerIdentity(hosts: ["localhost", "127.0.0.1"]),
                projectID: credentials.fcmProjectID,
                serviceAccounts: [credentials.fcmServiceAccount]
            )
            emulatorConfiguration.port = configuration.emulatorFCMPort
            emulatorConfiguration.openDeviceRegistry = openDeviceRegistry
            emulatorConfiguration.recordsPayloads = recordsPayloads
            let emulator = try await FCMEmulator.start(configuration: emulatorConfiguration, logger: logger)
            var fcm = FCMConfiguration(
                serviceAccount: FCMServiceAccount(
                    projectID: credentials.fcmProjectID,
                    clientEmail: credentials.fcmClientEmail,
                    privateKey: credentials.fcmPrivateKeyPEM,
                    tokenURI: emulator.tokenURI
                )
            )
            fcm.endpoint = emulator.baseURL
            fcm.trustRoots = [try authority.sslCertificate]
            providers.append(try FCMProvider(configuration: fcm, logger: logger))
            fcmEmulator = emulator
            lines.append("fcm     built-in emulator at \(emulator.baseURL) (no FCM credentials configured)")
        } else {
            lines.append("fcm     not configured: FCM devices can register, sends count as PnsNotConfigured")
        }
        // WNS
        var wnsEmulator: WNSEmulator?
        if configuration.wns.isConfigured {
            guard let sid = configuration.wns.packageSID, let secret = configuration.wns.clientSecret else {
                throw ConfigurationError("WNS needs HERALD_WNS_PACKAGE_SID and HERALD_WNS_CLIENT_SECRET together")
            }
            let wns = try Self.makeWNSProvider(packageSID: sid, clientSecret: secret, settings: configuration.wns, logger: logger)
            providers.append(wns.provider)
            lines.append("wns     \(wns.configuration.tokenURI) (package \(sid.prefix(24)))")
        } else if let authority, let credentials {
            var emulatorConfiguration = WNSEmulator.Configuration(
                identity: try authority.issueServerIdentity(hosts: ["localhost", "127.0.0.1"]),
                apps: [credentials.wnsApp]
            )
            emulatorConfiguration.port = configuration.emulatorWNSPort
            emulatorConfiguration.recordsPayloads = recordsPayloads
            let emulator = try await WNSEmulator.start(configuration: emulatorConfiguration, logger: logger)
            var wns = WNSConfiguration(packageSID: credentials.wnsPackageSID, clientSecret: credentials.wnsClientSecret)
            wns.tokenURI = emulator.tokenURI
            wns.trustRoots = [try authority.sslCertificate]
            providers.append(try WNSProvider(configuration: wns, logger: logger))
            wnsEmulator = emulator
            lines.append("wns     built-in emulator at \(emulator.baseURL) (no WNS credentials configured)")
        } else {
            lines.append("wns     not configured: set HERALD_WNS_PACKAGE_SID and HERALD_WNS_CLIENT_SECRET")
        }

        // Web Push: Herald's own VAPID key; real push services once a contact is configured.
        var webPushEmulator: WebPushEmulator?
        var vapidPublicKey: String?
        let vapidKey = try loadOrCreateVAPIDKey(configuration.webPush.vapidKeyFile ?? "\(dataDirectory)/keys/vapid-private.pem")
        if let subject = configuration.webPush.subject {
            let webPush = try Self.makeWebPushProvider(
                vapidPrivateKeyPEM: vapidKey, subject: subject, settings: configuration.webPush, logger: logger
            )
            let provider = webPush.provider
            providers.append(provider)
            vapidPublicKey = provider.applicationServerKey
            lines.append("webpush push services of \(webPush.configuration.allowedEndpointHosts?.count ?? 0) known hosts (VAPID key \(provider.applicationServerKey.prefix(12))…)")
        } else if let authority {
            var emulatorConfiguration = WebPushEmulator.Configuration(
                identity: try authority.issueServerIdentity(hosts: ["localhost", "127.0.0.1"])
            )
            emulatorConfiguration.port = configuration.emulatorWebPushPort
            emulatorConfiguration.recordsPayloads = recordsPayloads
            let emulator = try await WebPushEmulator.start(configuration: emulatorConfiguration, logger: logger)
            var webPush = WebPushConfiguration(vapidPrivateKey: vapidKey, subject: "mailto:push@localhost")
            webPush.trustRoots = [try authority.sslCertificate]
            let provider = try WebPushProvider(configuration: webPush, logger: logger)
            providers.append(provider)
            vapidPublicKey = provider.applicationServerKey
            webPushEmulator = emulator
            lines.append("webpush built-in emulator at \(emulator.baseURL) (HERALD_WEBPUSH_SUBJECT not set)")
        } else {
            lines.append("webpush not configured: set HERALD_WEBPUSH_SUBJECT")
        }

        if let authority, apnsEmulator != nil || fcmEmulator != nil || webPushEmulator != nil || wnsEmulator != nil {
            directory = EmulatorDirectory(
                apns: apnsEmulator?.baseURL,
                apnsTopic: apnsEmulator == nil ? nil : configuration.emulatorTopic,
                fcm: fcmEmulator?.baseURL,
                webpush: webPushEmulator?.baseURL,
                wns: wnsEmulator?.baseURL,
                vapidPublicKey: vapidPublicKey,
                caCertificatePEM: authority.certificatePEM
            )
        }
        let catalog = HubCatalog(dataDirectory: dataDirectory)
        let appHubName = configuration.localAppHubName
        try await catalog.prepareAppHub(named: appHubName, logger: logger)
        let serverProviders = providers
        let registry = HubRegistry(catalog: catalog, hubConfiguration: hubConfiguration, logger: logger) { definition in
            try Self.providers(for: definition, serverProviders: serverProviders, configuration: configuration, logger: logger)
        }
        guard let hub = try await registry.hub(named: appHubName) else {
            throw ConfigurationError("the app backend's hub '\(appHubName)' could not be opened")
        }
        return HeraldRuntime(
            configuration: configuration,
            catalog: catalog,
            registry: registry,
            appHubName: appHubName,
            hub: hub,
            providers: providers,
            apnsEmulator: apnsEmulator,
            fcmEmulator: fcmEmulator,
            webPushEmulator: webPushEmulator,
            wnsEmulator: wnsEmulator,
            emulatorDirectory: directory,
            platformLines: lines
        )
    }

    /// The HTTP server's configuration: the settings, the emulators, and the secure-payload
    /// key and rich-content directory in the data directory.
    func serverConfiguration() throws -> ServerConfiguration {
        var server = ServerConfiguration()
        server.host = configuration.host
        server.port = configuration.port
        server.insecureDemoAuth = configuration.insecureDemoAuth
        server.allowSignUp = configuration.allowSignUp
        server.tokenLifetime = .seconds(configuration.tokenLifetimeSeconds)
        server.bcryptCost = UInt8(configuration.bcryptCost)
        server.emulators = emulatorDirectory
        server.secureKey = try SecurePayloadKey.loadOrCreate(path: "\(configuration.dataDirectory)/keys/secure-payload.key")
        server.secureRetention = .seconds(configuration.secureRetentionSeconds)
        server.richRetention = .seconds(configuration.secureRetentionSeconds)
        server.richDirectory = "\(configuration.dataDirectory)/rich"
        server.richMaxBytes = configuration.richMaxBytes
        server.publicURL = configuration.publicURL
        server.tlsPort = configuration.tlsPort
        server.hubRequestsPerSecond = configuration.hubRequestsPerSecond
        return server
    }

    /// Herald's VAPID key: read from `path`, or created there (PKCS#8 PEM, mode 0600).
    static func loadOrCreateVAPIDKey(_ path: String) throws -> String {
        if let data = FileManager.default.contents(atPath: path), let pem = String(data: data, encoding: .utf8) {
            return pem
        }
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true
        )
        let pem = P256.Signing.PrivateKey().pemRepresentation
        try SecureFile.write(pem, to: path)
        return pem
    }

    static func makeAPNsProvider(_ settings: HeraldConfiguration.APNs, logger: Logger) throws -> APNsProvider {
        guard let keyFile = settings.keyFile, let keyID = settings.keyID, let teamID = settings.teamID else {
            throw ConfigurationError("APNs needs HERALD_APNS_KEY_FILE, HERALD_APNS_KEY_ID and HERALD_APNS_TEAM_ID together")
        }
        guard let topic = settings.topic else {
            throw ConfigurationError("APNs needs HERALD_APNS_TOPIC: the app's bundle id")
        }
        guard let pem = FileManager.default.contents(atPath: keyFile).flatMap({ String(data: $0, encoding: .utf8) }) else {
            throw ConfigurationError("cannot read HERALD_APNS_KEY_FILE \(keyFile)")
        }
        return try makeAPNsProvider(
            teamID: teamID, keyID: keyID, privateKeyPEM: pem, topic: topic, environment: settings.environment,
            settings: settings, logger: logger
        )
    }

    /// An APNs provider for one signing key and topic (the server's, or a hub's own), with
    /// the server's endpoint, CA and connection settings.
    static func makeAPNsProvider(
        teamID: String, keyID: String, privateKeyPEM: String, topic: String, environment: String,
        settings: HeraldConfiguration.APNs, logger: Logger
    ) throws -> APNsProvider {
        var apns = APNsConfiguration(
            environment: environment == "sandbox" ? .sandbox : .production,
            teamID: teamID,
            keyID: keyID,
            privateKeyPEM: privateKeyPEM,
            topic: topic
        )
        if let endpoint = settings.endpoint { apns.endpoint = endpoint }
        if let caFile = settings.caFile { apns.trustRoots = try TrustRoots.certificates(pemFile: caFile) }
        apns.connections = settings.connections
        return try APNsProvider(configuration: apns, logger: logger)
    }

    /// An FCM provider for one service account (the server's, or a hub's own), with the
    /// server's endpoint, token URI and CA settings.
    static func makeFCMProvider(
        _ account: FCMServiceAccount, settings: HeraldConfiguration.FCM, logger: Logger
    ) throws -> (provider: FCMProvider, configuration: FCMConfiguration) {
        var fcm = FCMConfiguration(serviceAccount: account)
        if let endpoint = settings.endpoint { fcm.endpoint = endpoint }
        fcm.tokenURI = settings.tokenURI
        if let caFile = settings.caFile { fcm.trustRoots = try TrustRoots.certificates(pemFile: caFile) }
        return (try FCMProvider(configuration: fcm, logger: logger), fcm)
    }

    /// A WNS provider for one app (the server's, or a hub's own), with the server's token URI
    /// and CA settings.
    static func makeWNSProvider(
        packageSID: String, clientSecret: String, settings: HeraldConfiguration.WNS, logger: Logger
    ) throws -> (provider: WNSProvider, configuration: WNSConfiguration) {
        var wns = WNSConfiguration(packageSID: packageSID, clientSecret: clientSecret)
        if let tokenURI = settings.tokenURI { wns.tokenURI = tokenURI }
        if let caFile = settings.caFile { wns.trustRoots = try TrustRoots.certificates(pemFile: caFile) }
        return (try WNSProvider(configuration: wns, logger: logger), wns)
    }

    /// A Web Push provider for one VAPID key (the server's, or a hub's own), with the server's
    /// CA and allowed push-service hosts.
    static func makeWebPushProvider(
        vapidPrivateKeyPEM: String, subject: String, settings: HeraldConfiguration.WebPush, logger: Logger
    ) throws -> (provider: WebPushProvider, configuration: WebPushConfiguration) {
        var webPush = WebPushConfiguration(vapidPrivateKey: vapidPrivateKeyPEM, subject: subject)
        if let caFile = settings.caFile { webPush.trustRoots = try TrustRoots.certificates(pemFile: caFile) }
        webPush.allowedEndpointHosts = settings.allowedHosts ?? WebPushConfiguration.knownPushServiceHosts
        return (try WebPushProvider(configuration: webPush, logger: logger), webPush)
    }

    /// The app backend's devices: in its hub of the catalog, or, with
    /// `HERALD_APP_HUB_CONNECTION_STRING`, in a hub reached through the hub REST API.
    var userDevices: any UserDevices {
        RegistryUserDevices(registry: registry, hubName: appHubName)
    }

    /// Closes the hubs (if the registry did not run) and the providers; the emulators close
    /// with their services.
    func shutdown() async {
        await registry.close()
        for provider in providers { try? await provider.shutdown() }
        try? await apnsEmulator?.shutdown()
        try? await fcmEmulator?.shutdown()
        try? await webPushEmulator?.shutdown()
        try? await wnsEmulator?.shutdown()
    }
}
