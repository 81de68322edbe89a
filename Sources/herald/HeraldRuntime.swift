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

/// A running Herald: the store, the push providers (real, or the built-in emulators for
/// platforms without credentials) and the hub. Shared by `serve`, `demo` and `bench`.
struct HeraldRuntime {
    let configuration: HeraldConfiguration
    let store: SQLiteStore
    let hub: Hub
    let providers: [any PushProvider]
    var apnsEmulator: APNsEmulator?
    var fcmEmulator: FCMEmulator?
    var emulatorDirectory: EmulatorDirectory?
    /// One line per platform saying how it is delivered, for the start-up banner.
    var platformLines: [String] = []

    /// Services to run beside the HTTP server: the emulators, which close on shutdown.
    var services: [any Service] {
        var services: [any Service] = []
        if let apnsEmulator { services.append(apnsEmulator) }
        if let fcmEmulator { services.append(fcmEmulator) }
        return services
    }

    static func start(
        _ configuration: HeraldConfiguration,
        hubConfiguration: Hub.Configuration = Hub.Configuration(),
        openDeviceRegistry: Bool = false,
        recordsPayloads: Bool = true,
        logger: Logger
    ) async throws -> HeraldRuntime {
        let dataDirectory = configuration.dataDirectory
        try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
        let store = try await SQLiteStore.open(path: "\(dataDirectory)/herald.sqlite", logger: logger)

        var providers: [any PushProvider] = []
        var lines: [String] = []
        var apnsEmulator: APNsEmulator?
        var fcmEmulator: FCMEmulator?
        var directory: EmulatorDirectory?
        let wantsEmulators = configuration.emulators == "auto"
        var authority: CertificateAuthority?
        var credentials: EmulatorCredentials?
        if wantsEmulators, !configuration.apns.isConfigured || !configuration.fcm.isConfigured {
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
            var fcm = FCMConfiguration(serviceAccount: try FCMServiceAccount(json: data))
            if let endpoint = configuration.fcm.endpoint { fcm.endpoint = endpoint }
            fcm.tokenURI = configuration.fcm.tokenURI
            if let caFile = configuration.fcm.caFile { fcm.trustRoots = try TrustRoots.certificates(pemFile: caFile) }
            providers.append(try FCMProvider(configuration: fcm, logger: logger))
            lines.append("fcm     \(fcm.endpoint) (project \(fcm.serviceAccount.projectID))")
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
        lines.append("wns     not available yet in this version")
        lines.append("webpush not available yet in this version")

        if let authority, apnsEmulator != nil || fcmEmulator != nil {
            directory = EmulatorDirectory(
                apns: apnsEmulator?.baseURL,
                apnsTopic: apnsEmulator == nil ? nil : configuration.emulatorTopic,
                fcm: fcmEmulator?.baseURL,
                caCertificatePEM: authority.certificatePEM
            )
        }
        let hub = Hub(store: store, providers: providers, configuration: hubConfiguration, logger: logger)
        return HeraldRuntime(
            configuration: configuration,
            store: store,
            hub: hub,
            providers: providers,
            apnsEmulator: apnsEmulator,
            fcmEmulator: fcmEmulator,
            emulatorDirectory: directory,
            platformLines: lines
        )
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
        var apns = APNsConfiguration(
            environment: settings.environment == "sandbox" ? .sandbox : .production,
            teamID: teamID,
            keyID: keyID,
            privateKeyPEM: pem,
            topic: topic
        )
        if let endpoint = settings.endpoint { apns.endpoint = endpoint }
        if let caFile = settings.caFile { apns.trustRoots = try TrustRoots.certificates(pemFile: caFile) }
        apns.connections = settings.connections
        return try APNsProvider(configuration: apns, logger: logger)
    }

    /// Closes the providers and the store; the emulators close with their services.
    func shutdown() async {
        for provider in providers { try? await provider.shutdown() }
        try? await apnsEmulator?.shutdown()
        try? await fcmEmulator?.shutdown()
        try? await store.close()
    }
}
