import Crypto
import Foundation
import HeraldCore
import HeraldEmulator
import HeraldHub
import HeraldMetrics
import HeraldPostgres
import HeraldPush
import HeraldSQLite
import HeraldServer
import HeraldStore
import HeraldTLS
import Logging
import ServiceLifecycle

/// A running Herald: the push providers (real, or the built-in emulators for platforms
/// without credentials), the hubs of the data directory's catalog, and among them the app
/// backend's hub, open. Shared by `serve`, `demo` and `bench`.
///
/// Everything it opens runs as a service, in the order that lets each stop after what uses
/// it: the emulators and the server's providers (``services``), then the hub registry
/// (which owns the hubs' stores, workers and own providers), then the HTTP server.
/// `buildApplication` runs them in that order.
struct HeraldRuntime {
    let configuration: HeraldConfiguration
    let catalog: HubCatalog
    /// Opens every hub and runs their workers (run it as a service).
    let registry: HubRegistry
    /// The name of the hub that keeps the app backend's devices, accounts and content.
    let appHubName: String
    /// The app backend's hub's engine.
    let appHubEngine: HubEngine
    /// Where the app backend keeps its accounts, sessions and content: its hub's store, as the
    /// registry opened it from the storage.
    let appStore: any AppBackendStore
    /// The server's own providers, which hubs without credentials of their own deliver through.
    let providers: [any PushProvider]
    let emulators: BuiltInEmulators?
    /// One line per platform saying how it is delivered, for the start-up banner.
    let platformLines: [String]
    /// What the providers and hubs record, and `GET /metrics` serves; `nil` when started
    /// without (`herald bench` compares the two).
    let metrics: HeraldMetrics?
    /// The APNs provider tokens of this process's providers, kept with the hubs.
    let apnsTokens: APNsTokenCache
    /// This node's lasting name, held while the runtime runs.
    let node: NodeIdentity
    /// Posts every hub's webhook events.
    let webhookPoster: WebhookPoster

    var apnsEmulator: APNsEmulator? { emulators?.apns }
    var fcmEmulator: FCMEmulator? { emulators?.fcm }
    var webPushEmulator: WebPushEmulator? { emulators?.webPush }
    var wnsEmulator: WNSEmulator? { emulators?.wns }

    /// The emulators and the server's providers, in the order they start: what the hub
    /// registry delivers through.
    var services: [any Service] {
        (emulators?.services ?? []) + providers.map { $0 as any Service } + [webhookPoster]
    }

    /// Where the built-in emulators listen, for `GET /emulators` and the device simulator.
    var emulatorDirectory: EmulatorDirectory? {
        guard let emulators, !emulators.services.isEmpty else { return nil }
        let webPush = providers.lazy.compactMap { $0 as? WebPushProvider }.first
        return EmulatorDirectory(
            apns: emulators.apns?.baseURL,
            apnsTopic: emulators.apns == nil ? nil : configuration.emulatorTopic,
            fcm: emulators.fcm?.baseURL,
            webpush: emulators.webPush?.baseURL,
            wns: emulators.wns?.baseURL,
            vapidPublicKey: webPush?.applicationServerKey,
            caCertificatePEM: emulators.authority.certificatePEM
        )
    }

    /// - Parameter storage: Where the hubs are: the data directory's by default; a caller
    ///   with a database (``HeraldConfiguration/withHubStorage(logger:_:)``) passes it.
    static func start(
        _ configuration: HeraldConfiguration,
        storage: (any HubStorage)? = nil,
        engineConfiguration: HubEngine.Configuration? = nil,
        openDeviceRegistry: Bool = false,
        recordsPayloads: Bool = true,
        recordsMetrics: Bool = true,
        logger: Logger
    ) async throws -> HeraldRuntime {
        let dataDirectory = configuration.dataDirectory
        // Device tokens, keys and password hashes live here: no other local user may enter.
        try SecureFile.ensureDirectory(dataDirectory)

        // The server's providers: from its configured credentials, and from the emulators'
        // for the other platforms (unless HERALD_EMULATORS=off).
        let vapidKey = try await vapidKeyPEM(configuration, storage: storage)
        let credentials = try configuration.serverCredentials(vapidKeyPEM: vapidKey)
        let metrics = recordsMetrics ? HeraldMetrics() : nil
        let storage = storage ?? DirectoryHubStorage(dataDirectory: dataDirectory)
        // APNs provider tokens outlive the process and are shared by every node on the storage.
        let apnsTokens = APNsTokenCache(storage: HubStorageProviderTokens(storage: storage), logger: logger)
        let factory = PushProviderFactory(
            settings: try configuration.pushServiceSettings(), logger: logger, metrics: metrics, apnsTokens: apnsTokens)
        var providers = try factory.providers(for: credentials)
        var lines = configuration.configuredPlatformLines(credentials)
        let unconfigured = Set(Platform.allCases.filter { !credentials.isConfigured($0) })
        var emulators: BuiltInEmulators?
        if configuration.emulators == "auto", !unconfigured.isEmpty {
            var options = BuiltInEmulators.Options(directory: "\(dataDirectory)/emulator")
            options.apnsPort = configuration.emulatorAPNsPort
            options.apnsBroadcastPort = configuration.emulatorAPNsBroadcastPort
            options.fcmPort = configuration.emulatorFCMPort
            options.wnsPort = configuration.emulatorWNSPort
            options.webPushPort = configuration.emulatorWebPushPort
            options.topic = configuration.emulatorTopic
            options.apnsConnections = configuration.apns.connections
            options.openDeviceRegistry = openDeviceRegistry
            options.recordsPayloads = recordsPayloads
            let started = try await BuiltInEmulators.start(unconfigured, options: options, vapidKeyPEM: vapidKey, logger: logger)
            do {
                providers += try PushProviderFactory(
                    settings: started.settings, logger: logger, metrics: metrics, apnsTokens: apnsTokens
                ).providers(for: started.credentials)
            } catch {
                await started.shutdown()
                throw error
            }
            lines.merge(started.lines) { configured, _ in configured }
            emulators = started
        } else {
            for platform in unconfigured { lines[platform] = Self.notConfiguredLine(platform) }
        }

        let catalog = HubCatalog(storage: storage)
        let appHubName = configuration.localAppHubName
        let node = NodeIdentity.acquire(dataDirectory: dataDirectory, logger: logger)
        var engineConfiguration = engineConfiguration ?? configuration.engineConfiguration
        engineConfiguration.nodeName = node.name
        let webhookPoster: WebhookPoster
        do {
            if let given = engineConfiguration.webhookPoster {
                webhookPoster = given
            } else {
                webhookPoster = WebhookPoster(configuration: try configuration.webhookPosterConfiguration())
            }
        } catch {
            for provider in providers { try? await provider.shutdown() }
            await emulators?.shutdown()
            node.release()
            throw error
        }
        engineConfiguration.webhookPoster = webhookPoster
        // Devices of an emulated platform name the emulator's host.
        if let emulators {
            if emulators.wns != nil {
                engineConfiguration.channelHosts.wns.formUnion(emulators.settings.wns.allowedChannelHosts)
            }
            if emulators.webPush != nil {
                engineConfiguration.channelHosts.webPush.formUnion(emulators.settings.webPush.allowedEndpointHosts)
            }
        }
        let registry = HubRegistry(
            catalog: catalog, serverProviders: providers, factory: factory,
            engineConfiguration: engineConfiguration, metrics: metrics, logger: logger
        )
        let appHubEngine: HubEngine
        let appStore: any AppBackendStore
        do {
            try await catalog.prepareAppHub(named: appHubName, logger: logger)
            guard let opened = try await registry.engine(named: appHubName),
                let store = try await registry.appBackendStore(named: appHubName)
            else {
                throw ConfigurationError("the app backend's hub '\(appHubName)' could not be opened")
            }
            appHubEngine = opened
            appStore = store
        } catch {
            await registry.close()
            for provider in providers { try? await provider.shutdown() }
            try? await webhookPoster.shutdown()
            await emulators?.shutdown()
            node.release()
            throw error
        }
        // Releases before the bytes of rich content were in the store kept them in files.
        let richFiles = "\(dataDirectory)/rich"
        if FileManager.default.fileExists(atPath: richFiles) {
            do {
                let moved = try await appStore.importRichContentFiles(directory: richFiles)
                if moved > 0 {
                    logger.info("Moved the rich content files of an earlier release into the store", metadata: ["herald.count": "\(moved)"])
                }
            } catch {
                logger.error("Could not move the rich content files of an earlier release into the store", metadata: ["error": "\(error)"])
            }
        }
        return HeraldRuntime(
            configuration: configuration,
            catalog: catalog,
            registry: registry,
            appHubName: appHubName,
            appHubEngine: appHubEngine,
            appStore: appStore,
            providers: providers,
            emulators: emulators,
            platformLines: Platform.allCases.compactMap { lines[$0] },
            metrics: metrics,
            apnsTokens: apnsTokens,
            node: node,
            webhookPoster: webhookPoster
        )
    }

    /// The banner's line for a platform with neither credentials nor an emulator.
    static func notConfiguredLine(_ platform: Platform) -> String {
        switch platform {
        case .apns: "apns    not configured: APNs devices can register, sends count as PnsNotConfigured"
        case .fcm: "fcm     not configured: FCM devices can register, sends count as PnsNotConfigured"
        case .wns: "wns     not configured: set HERALD_WNS_PACKAGE_SID and HERALD_WNS_CLIENT_SECRET"
        case .webpush: "webpush not configured: set HERALD_WEBPUSH_SUBJECT"
        }
    }

    /// The HTTP server's configuration: the settings, the emulators, and the secure-payload
    /// key (``securePayloadKey(_:)``).
    func serverConfiguration() throws -> ServerConfiguration {
        var server = ServerConfiguration()
        server.host = configuration.host
        server.port = configuration.port
        server.insecureDemoAuth = configuration.insecureDemoAuth
        server.allowSignUp = configuration.allowSignUp
        server.tokenLifetime = .seconds(configuration.tokenLifetimeSeconds)
        server.bcryptCost = UInt8(configuration.bcryptCost)
        server.emulators = emulatorDirectory
        server.secureKey = try Self.securePayloadKey(configuration)
        server.secureRetention = .seconds(configuration.secureRetentionSeconds)
        server.richRetention = .seconds(configuration.secureRetentionSeconds)
        server.richPushEnabled = true
        server.richMaxBytes = configuration.richMaxBytes
        server.publicURL = configuration.publicURL
        server.tlsPort = configuration.tlsPort
        server.hubRequestsPerSecond = configuration.hubRequestsPerSecond
        server.metricsToken = configuration.metricsToken
        server.hubEndpoint = configuration.hubConnectionEndpoint
        server.consoleEnabled = configuration.consoleEnabled
        server.consoleSampleInterval = .seconds(configuration.consoleSampleSeconds)
        server.version = Herald.version
        server.nodeName = node.name ?? ProcessInfo.processInfo.hostName
        // Raised here, once, before the listeners open: the soft limit's default is too low for a server.
        let openFiles = FileDescriptorLimit.raise()
        server.connectionLimits.maximumConnections =
            configuration.maximumConnections
            ?? FileDescriptorLimit.defaultMaximumConnections(limit: openFiles)
        server.connectionLimits.idleTimeout = .seconds(configuration.idleTimeoutSeconds)
        server.connectionLimits.bodyTimeout = .seconds(configuration.bodyTimeoutSeconds)
        server.connectionLimits.maximumConnectionsPerClient = configuration.maximumConnectionsPerClient
        server.signUpsPerMinute = configuration.signUpsPerMinute
        server.consoleIdleTimeout = .seconds(configuration.consoleIdleTimeoutSeconds)
        return server
    }

    /// Herald's VAPID key: from `HERALD_WEBPUSH_VAPID_KEY_FILE` if set; otherwise, on a
    /// database, the one every node on it shares (this node's own file, or a new key, is
    /// proposed when the database has none yet: web apps subscribe with its public key, so the
    /// nodes must not differ); otherwise `<data-dir>/keys/vapid-private.pem`.
    static func vapidKeyPEM(_ configuration: HeraldConfiguration, storage: (any HubStorage)?) async throws -> String {
        let localPath = "\(configuration.dataDirectory)/keys/vapid-private.pem"
        if let path = configuration.webPush.vapidKeyFile { return try loadOrCreateVAPIDKey(path) }
        guard let storage, storage.isSharedByNodes else { return try loadOrCreateVAPIDKey(localPath) }
        let local = FileManager.default.contents(atPath: localPath).flatMap { String(data: $0, encoding: .utf8) }
        return try await storage.replaceSharedValue(
            named: "webpush.vapid-private-key", expected: nil, with: local ?? P256.Signing.PrivateKey().pemRepresentation)
    }

    /// Checks that this node seals secure payloads with the key the other nodes on the database
    /// use (by its fingerprint: the key itself never goes into the database, so that the
    /// database and its backups never hold what opens the payloads they keep).
    static func checkSharedSecureKey(_ configuration: HeraldConfiguration, storage: any HubStorage) async throws {
        guard storage.isSharedByNodes else { return }
        let key = try securePayloadKey(configuration)
        let shared = try await storage.replaceSharedValue(named: "secure-payload-key.fingerprint", expected: nil, with: key.fingerprint)
        guard shared == key.fingerprint else {
            let remedy =
                configuration.securePayloadKeyFile != nil
                ? "give every node the same key file in HERALD_SECURE_PAYLOAD_KEY_FILE"
                : "copy keys/secure-payload.key from one of them into \(configuration.dataDirectory)/keys/ (mode 0600), or give every node the same key file in HERALD_SECURE_PAYLOAD_KEY_FILE,"
            throw ConfigurationError(
                "this node's secure-payload key (\(secureKeyDescription(configuration)), fingerprint \(key.fingerprint)) is not the one the other nodes on \(storage.location) seal with (fingerprint \(shared)): \(remedy) and start again"
            )
        }
    }

    /// This node's secure-payload key: read from `HERALD_SECURE_PAYLOAD_KEY_FILE` if set (a
    /// startup error, naming the variable, when that file is missing, unreadable or not a
    /// 256-bit key); otherwise `<data-dir>/keys/secure-payload.key`, created if missing.
    static func securePayloadKey(_ configuration: HeraldConfiguration) throws -> SecurePayloadKey {
        guard let file = configuration.securePayloadKeyFile else { return try SecurePayloadKey.loadOrCreate(path: secureKeyPath(configuration)) }
        do {
            return try SecurePayloadKey.read(path: file)
        } catch {
            throw ConfigurationError("HERALD_SECURE_PAYLOAD_KEY_FILE: \(error.message)")
        }
    }

    /// Where this node's secure-payload key comes from, for messages.
    static func secureKeyDescription(_ configuration: HeraldConfiguration) -> String {
        configuration.securePayloadKeyFile.map { "HERALD_SECURE_PAYLOAD_KEY_FILE=\($0)" } ?? secureKeyPath(configuration)
    }

    /// Where this node's secure-payload key is kept when `HERALD_SECURE_PAYLOAD_KEY_FILE` is not set.
    static func secureKeyPath(_ configuration: HeraldConfiguration) -> String {
        "\(configuration.dataDirectory)/keys/secure-payload.key"
    }

    /// Herald's VAPID key: read from `path`, or created there (PKCS#8 PEM, mode 0600).
    static func loadOrCreateVAPIDKey(_ path: String) throws -> String {
        if let data = FileManager.default.contents(atPath: path), let pem = String(data: data, encoding: .utf8) {
            return pem
        }
        try SecureFile.ensureDirectory((path as NSString).deletingLastPathComponent)
        let pem = P256.Signing.PrivateKey().pemRepresentation
        try SecureFile.write(pem, to: path)
        return pem
    }

    /// The app backend's devices: in its hub of the catalog, or, with
    /// `HERALD_APP_HUB_CONNECTION_STRING`, in a hub reached through the hub REST API.
    var userDevices: any UserDevices {
        HubRegistryUserDevices(registry: registry, hubName: appHubName)
    }

    /// Closes what ``services`` would have closed, for a runtime whose services did not run
    /// (or ended by an error): the hubs, the providers, the emulators. Calling it after they
    /// ran does no harm.
    func shutdown() async {
        await registry.close()
        for provider in providers { try? await provider.shutdown() }
        try? await webhookPoster.shutdown()
        await emulators?.shutdown()
        node.release()
    }
}
