import Foundation
import HeraldCore
import HeraldEmulator
import HeraldHub
import HeraldTLS
import Logging
import ServiceLifecycle

/// The push-service emulators that `herald serve` runs in-process for the platforms it has
/// no credentials for, and that `herald emulate` runs as a process of their own: each listens
/// on its own port with a certificate of a local CA kept in `directory` (for `serve`,
/// `<data-dir>/emulator`), and accepts the credentials kept beside it.
struct BuiltInEmulators {
    var apns: APNsEmulator?
    var fcm: FCMEmulator?
    var wns: WNSEmulator?
    var webPush: WebPushEmulator?
    /// Where the emulators are, for the providers that deliver to them.
    var settings = PushServiceSettings()
    /// The credentials the emulators accept, for the providers that deliver to them.
    var credentials = HubCredentials()
    let authority: CertificateAuthority
    /// One line per emulated platform, for the start-up banner.
    var lines: [Platform: String] = [:]
    /// The credentials' files (the APNs key, the FCM service account) are kept here.
    var keys: EmulatorCredentials?
    /// The APNs emulator's client certificate for its topic (PEM and .p12 files), which it
    /// accepts instead of a provider token.
    var apnsCertificate: EmulatorAPNsCertificate?

    /// The emulators, as services: each closes its listener at graceful shutdown.
    var services: [any Service] {
        let services: [(any Service)?] = [apns, fcm, wns, webPush]
        return services.compactMap { $0 }
    }

    /// What the emulators are started with.
    struct Options {
        /// Where the CA and the credentials are kept (created if missing).
        var directory: String
        /// The address they listen on.
        var host = "127.0.0.1"
        var apnsPort = 0
        /// The APNs emulator's broadcast channel management API.
        var apnsBroadcastPort = 0
        var fcmPort = 0
        var wnsPort = 0
        var webPushPort = 0
        /// The bundle id the APNs emulator's devices belong to.
        var topic = "com.example.herald-demo"
        /// HTTP/2 connections for the APNs providers that deliver to it.
        var apnsConnections = 4
        /// Accept any well-formed device token, registered or not (APNs, FCM).
        var openDeviceRegistry = false
        /// Keep what each device received (off: count accepted sends only).
        var recordsPayloads = true
        /// Payloads kept per device, the newest; every one is counted.
        var inboxLimit = 100
    }

    /// Starts an emulator for each of `platforms`. `vapidKeyPEM` is Herald's VAPID key,
    /// which the Web Push emulator's subscriptions are made for.
    static func start(
        _ platforms: Set<Platform>,
        options: Options,
        vapidKeyPEM: String,
        logger: Logger
    ) async throws -> BuiltInEmulators {
        let directory = options.directory
        let authority = try CertificateAuthority.loadOrCreate(directory: directory)
        let keys = try EmulatorCredentials.loadOrCreate(directory: directory)
        let trustRoots = [try authority.sslCertificate]
        var emulators = BuiltInEmulators(authority: authority)
        emulators.keys = keys
        let hosts = Array(Set(["localhost", "127.0.0.1", options.host]))
        func identity() throws -> TLSIdentity { try authority.issueServerIdentity(hosts: hosts) }

        if platforms.contains(.apns) {
            var settings = APNsEmulator.Configuration(identity: try identity(), signingKeys: [keys.apnsSigningKey])
            settings.host = options.host
            settings.port = options.apnsPort
            settings.broadcastPort = options.apnsBroadcastPort
            settings.topics = [options.topic]
            settings.clientCertificateAuthority = authority
            emulators.apnsCertificate = try EmulatorCredentials.apnsClientCertificate(
                directory: directory, authority: authority, topic: options.topic)
            settings.openDeviceRegistry = options.openDeviceRegistry
            settings.recordsPayloads = options.recordsPayloads
            settings.inboxLimit = options.inboxLimit
            let emulator = try await APNsEmulator.start(configuration: settings, logger: logger)
            emulators.apns = emulator
            emulators.settings.apns = .init(
                endpoint: emulator.baseURL, trustRoots: trustRoots, connections: options.apnsConnections,
                broadcastManagementEndpoint: emulator.broadcastBaseURL
            )
            emulators.credentials.apns = HubCredentials.APNs(
                keyID: keys.apnsKeyID, teamID: keys.apnsTeamID, topic: options.topic,
                privateKeyPEM: keys.apnsPrivateKeyPEM
            )
            emulators.lines[.apns] =
                "apns    built-in emulator at \(emulator.baseURL), broadcast channels at \(emulator.broadcastBaseURL ?? "-") (no APNs credentials configured)"
        }
        if platforms.contains(.fcm) {
            var settings = FCMEmulator.Configuration(
                identity: try identity(), projectID: keys.fcmProjectID, serviceAccounts: [keys.fcmServiceAccount]
            )
            settings.host = options.host
            settings.port = options.fcmPort
            settings.openDeviceRegistry = options.openDeviceRegistry
            settings.recordsPayloads = options.recordsPayloads
            settings.inboxLimit = options.inboxLimit
            let emulator = try await FCMEmulator.start(configuration: settings, logger: logger)
            emulators.fcm = emulator
            emulators.settings.fcm = .init(endpoint: emulator.baseURL, tokenURI: emulator.tokenURI, trustRoots: trustRoots)
            let account = try keys.fcmServiceAccountJSON(tokenURI: emulator.tokenURI)
            emulators.credentials.fcm = HubCredentials.FCM(serviceAccountJSON: String(decoding: account, as: UTF8.self))
            emulators.lines[.fcm] = "fcm     built-in emulator at \(emulator.baseURL) (no FCM credentials configured)"
        }
        if platforms.contains(.wns) {
            var settings = WNSEmulator.Configuration(identity: try identity(), apps: [keys.wnsApp])
            settings.host = options.host
            settings.port = options.wnsPort
            settings.recordsPayloads = options.recordsPayloads
            settings.inboxLimit = options.inboxLimit
            let emulator = try await WNSEmulator.start(configuration: settings, logger: logger)
            emulators.wns = emulator
            // Channel URIs name the emulator's own host: the access token goes there only.
            emulators.settings.wns = .init(
                tokenURI: emulator.tokenURI, trustRoots: trustRoots, allowedChannelHosts: [Self.host(of: emulator.baseURL)])
            emulators.credentials.wns = HubCredentials.WNS(packageSID: keys.wnsPackageSID, clientSecret: keys.wnsClientSecret)
            emulators.lines[.wns] = "wns     built-in emulator at \(emulator.baseURL) (no WNS credentials configured)"
        }
        if platforms.contains(.webpush) {
            var settings = WebPushEmulator.Configuration(identity: try identity())
            settings.host = options.host
            settings.port = options.webPushPort
            settings.recordsPayloads = options.recordsPayloads
            settings.inboxLimit = options.inboxLimit
            let emulator = try await WebPushEmulator.start(configuration: settings, logger: logger)
            emulators.webPush = emulator
            // Subscriptions name the emulator's own host.
            emulators.settings.webPush = .init(trustRoots: trustRoots, allowedEndpointHosts: [Self.host(of: emulator.baseURL)])
            emulators.credentials.webPush = HubCredentials.WebPush(subject: "mailto:push@localhost", vapidPrivateKeyPEM: vapidKeyPEM)
            emulators.lines[.webpush] = "webpush built-in emulator at \(emulator.baseURL) (HERALD_WEBPUSH_SUBJECT not set)"
        }
        return emulators
    }

    /// The host of an emulator's base URL.
    static func host(of baseURL: String) -> String {
        URLComponents(string: baseURL)?.host ?? "127.0.0.1"
    }

    /// Closes every emulator (for a runtime whose services never ran).
    func shutdown() async {
        try? await apns?.shutdown()
        try? await fcm?.shutdown()
        try? await wns?.shutdown()
        try? await webPush?.shutdown()
    }
}
