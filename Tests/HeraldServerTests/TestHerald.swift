import Crypto
import Foundation
import HeraldClient
import HeraldCore
import HeraldEmulator
import HeraldHub
import HeraldMetrics
import HeraldPush
import HeraldSQLite
import HeraldServer
import HeraldStore
import HeraldTLS
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Synchronization
import Testing

/// A complete Herald for tests: a data directory in a temporary directory with the app
/// backend's hub in its catalog, APNs, FCM, WNS and Web Push emulators over real sockets, real
/// providers, hubs with fast retries, and the app built by the same function as the binary. Secure push has a key and rich push a directory in
/// the temporary directory; their expiry follows ``clock``.
struct TestHerald {
    static let topic = "com.example.tests"
    /// One set of emulator credentials for every test: making an RSA key for each would spend
    /// a fifth of the suite's CPU time, blocking the threads that the other tests run on.
    static let sharedCredentials = Result { try EmulatorCredentials.makeEphemeral() }
    static let appHubName = HubCatalog.defaultAppHubName
    /// The data directory.
    let directory: String
    let catalog: HubCatalog
    /// Opens the hubs of ``catalog`` with ``providers``; run by the app.
    let registry: HubRegistry
    /// The app backend's hub's engine.
    let appHubEngine: HubEngine
    /// The app backend's accounts, sessions and content, as the binary gets them.
    let appStore: any AppBackendStore
    let apns: APNsEmulator
    let fcm: FCMEmulator
    let wns: WNSEmulator
    let webPush: WebPushEmulator
    let providers: [any PushProvider]
    var server: ServerConfiguration
    /// The clock of secure and rich content expiry (``ServerConfiguration/now``).
    let clock: ServerTestClock
    /// What the providers, the hubs and the server record: a registry of this test's own.
    let metrics: HeraldMetrics
    /// The CA the emulators' certificates come from, which the providers trust.
    let authority: CertificateAuthority
    /// The emulators' host: the only one WNS channels and Web Push endpoints may name here.
    static let emulatorHost = "127.0.0.1"

    static func withHerald<T>(
        configure: (inout ServerConfiguration) -> Void = { _ in },
        configureHubs: (inout HubEngine.Configuration) -> Void = { _ in },
        _ body: (TestHerald) async throws -> T
    ) async throws -> T {
        var logger = Logger(label: "test")
        logger.logLevel = .warning
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-test-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }

        let authority = try CertificateAuthority.makeEphemeral()
        let credentials = try sharedCredentials.get()
        var apnsConfiguration = APNsEmulator.Configuration(
            identity: try authority.issueServerIdentity(hosts: ["127.0.0.1"]),
            signingKeys: [credentials.apnsSigningKey]
        )
        apnsConfiguration.topics = [topic]
        let apns = try await APNsEmulator.start(configuration: apnsConfiguration, logger: logger)
        let fcm = try await FCMEmulator.start(
            configuration: .init(
                identity: try authority.issueServerIdentity(hosts: ["127.0.0.1"]),
                projectID: credentials.fcmProjectID,
                serviceAccounts: [credentials.fcmServiceAccount]
            ),
            logger: logger
        )
        var apnsClient = APNsConfiguration(
            teamID: credentials.apnsTeamID,
            keyID: credentials.apnsKeyID,
            privateKeyPEM: credentials.apnsPrivateKeyPEM,
            topic: topic
        )
        apnsClient.endpoint = apns.baseURL
        apnsClient.broadcastManagementEndpoint = try #require(apns.broadcastBaseURL)
        apnsClient.trustRoots = [try authority.sslCertificate]
        apnsClient.connections = 1
        var fcmClient = FCMConfiguration(
            serviceAccount: FCMServiceAccount(
                projectID: credentials.fcmProjectID,
                clientEmail: credentials.fcmClientEmail,
                privateKey: credentials.fcmPrivateKeyPEM,
                tokenURI: fcm.tokenURI
            )
        )
        fcmClient.endpoint = fcm.baseURL
        fcmClient.trustRoots = [try authority.sslCertificate]
        let wns = try await WNSEmulator.start(
            configuration: .init(identity: try authority.issueServerIdentity(hosts: ["127.0.0.1"]), apps: [credentials.wnsApp]),
            logger: logger
        )
        var wnsClient = WNSConfiguration(packageSID: credentials.wnsPackageSID, clientSecret: credentials.wnsClientSecret)
        wnsClient.tokenURI = wns.tokenURI
        wnsClient.trustRoots = [try authority.sslCertificate]
        wnsClient.allowedChannelHosts = [emulatorHost]
        let webPush = try await WebPushEmulator.start(
            configuration: .init(identity: try authority.issueServerIdentity(hosts: ["127.0.0.1"])), logger: logger
        )
        var webPushClient = WebPushConfiguration(
            vapidPrivateKey: P256.Signing.PrivateKey().pemRepresentation, subject: "mailto:tests@example.com"
        )
        webPushClient.trustRoots = [try authority.sslCertificate]
        webPushClient.allowedEndpointHosts = [emulatorHost]
        // Not under test: a busy machine may take longer than the default to set up TLS.
        apnsClient.connectTimeout = .seconds(30)
        fcmClient.connectTimeout = .seconds(30)
        wnsClient.connectTimeout = .seconds(30)
        webPushClient.connectTimeout = .seconds(30)
        let metrics = HeraldMetrics()
        let providers: [any PushProvider] = [
            try APNsProvider(configuration: apnsClient, logger: logger, metrics: metrics),
            try FCMProvider(configuration: fcmClient, logger: logger, metrics: metrics),
            try WNSProvider(configuration: wnsClient, logger: logger, metrics: metrics),
            try WebPushProvider(configuration: webPushClient, logger: logger, metrics: metrics),
        ]
        var engineConfiguration = HubEngine.Configuration()
        engineConfiguration.retry = RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(5), maxDelay: .milliseconds(20))
        engineConfiguration.pollInterval = .milliseconds(100)
        engineConfiguration.channelHosts = PushChannelHosts(wns: [emulatorHost], webPush: [emulatorHost])
        configureHubs(&engineConfiguration)
        let catalog = HubCatalog(dataDirectory: directory)
        try await catalog.prepareAppHub(named: appHubName, logger: logger)
        let registry = HubRegistry(
            catalog: catalog, serverProviders: providers, factory: PushProviderFactory(logger: logger, metrics: metrics),
            engineConfiguration: engineConfiguration, metrics: metrics, logger: logger
        )
        let appHubEngine = try #require(try await registry.engine(named: appHubName))
        let appStore = try #require(try await registry.appBackendStore(named: appHubName))
        var server = ServerConfiguration()
        server.port = 0
        server.bcryptCost = 4
        // Sends here finish in well under a second; a busy machine may need more than the
        // default 10 s, after which the notify routes answer with the state so far.
        server.notifyWait = .seconds(60)
        server.secureKey = try SecurePayloadKey.loadOrCreate(path: directory + "/keys/secure-payload.key")
        server.richPushEnabled = true
        // Tests sign many users up from one address; CallerLimitsTests sets the limit it tests.
        server.signUpsPerMinute = 10_000
        let clock = ServerTestClock()
        server.now = { clock.now }
        configure(&server)
        let herald = TestHerald(
            directory: directory, catalog: catalog, registry: registry, appHubEngine: appHubEngine, appStore: appStore, apns: apns, fcm: fcm, wns: wns,
            webPush: webPush, providers: providers, server: server,
            clock: clock, metrics: metrics, authority: authority
        )
        do {
            let result = try await body(herald)
            await herald.close()
            return result
        } catch {
            await herald.close()
            throw error
        }
    }

    /// The app backend's hub's store: the registry opens hubs on SQLite.
    var store: SQLiteStore { appHubEngine.store as! SQLiteStore }

    /// The app backend's devices, as the binary has them.
    var devices: HubRegistryUserDevices { HubRegistryUserDevices(registry: registry, hubName: Self.appHubName) }

    func close() async {
        await registry.close()
        for provider in providers { try? await provider.shutdown() }
        try? await apns.shutdown()
        try? await fcm.shutdown()
        try? await wns.shutdown()
        try? await webPush.shutdown()
    }

    func application(console: Console? = nil) -> some ApplicationProtocol {
        var logger = Logger(label: "test")
        logger.logLevel = .warning
        return buildApplication(hubs: registry, devices: devices, appStore: appStore, configuration: server, console: console, logger: logger)
    }
}

extension HTTPFields {
    static func basic(_ user: String, _ password: String) -> HTTPFields {
        [.authorization: "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()]
    }

    static func bearer(_ token: String) -> HTTPFields {
        [.authorization: "Bearer \(token)"]
    }
}

extension ByteBuffer {
    static func json(_ text: String) -> ByteBuffer { ByteBuffer(string: text) }
    var string: String { String(buffer: self) }
}

extension TestClientProtocol {
    /// Signs up and signs in; returns bearer headers.
    func signUp(_ user: String, password: String = "password-123") async throws -> HTTPFields {
        try await execute(
            uri: "/api/accounts", method: .post, body: .json(#"{"username":"\#(user)","password":"\#(password)"}"#)
        ) { response in
            guard response.status == .created else { throw TestFailure("sign-up \(user): \(response.status) \(response.body.string)") }
        }
        return try await execute(
            uri: "/api/token", method: .post, body: .json(#"{"username":"\#(user)","password":"\#(password)"}"#)
        ) { response in
            guard response.status == .ok else { throw TestFailure("sign-in \(user): \(response.status)") }
            return .bearer(try JSONDecoder().decode(TokenBody.self, from: response.body).token)
        }
    }

    /// POST /api/register?handle= then PUT; returns the registration id.
    func register(_ headers: HTTPFields, handle: String, platform: String = "apns", tags: [String] = []) async throws -> String {
        let id = try await execute(uri: "/api/register?handle=\(handle)", method: .post, headers: headers) { response in
            guard response.status == .ok else { throw TestFailure("POST /api/register: \(response.status) \(response.body.string)") }
            return try JSONDecoder().decode(String.self, from: response.body)
        }
        let tagList = try String(decoding: JSONEncoder().encode(tags), as: UTF8.self)
        try await execute(
            uri: "/api/register/\(id)", method: .put, headers: headers,
            body: .json(#"{"Platform":"\#(platform)","Handle":"\#(handle)","Tags":\#(tagList)}"#)
        ) { response in
            guard response.status == .ok else { throw TestFailure("PUT /api/register: \(response.status) \(response.body.string)") }
        }
        return id
    }
}

struct TokenBody: Decodable { var token: String }

/// The real time plus an offset that tests move forward.
final class ServerTestClock: Sendable {
    private let offset = Mutex<TimeInterval>(0)

    var now: Date { Date().addingTimeInterval(offset.withLock { $0 }) }

    func advance(by duration: Duration) {
        offset.withLock { $0 += Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18 }
    }
}

/// A client of the app backend at `base`, signed up and signed in as `user` (password:
/// `<user>-password`).
func signedUpClient(_ user: String, at base: URL) async throws -> HeraldClient {
    let client = HeraldClient(baseURL: base)
    try await client.signUp(username: user, password: "\(user)-password")
    try await client.signIn(username: user, password: "\(user)-password")
    return client
}

/// Signs alice and bob up on the app backend at `base`; returns alice signed in on two
/// devices and bob on one.
func signInAliceTwiceAndBob(at base: URL) async throws -> (HeraldClient, HeraldClient, HeraldClient) {
    let setup = HeraldClient(baseURL: base)
    try await setup.signUp(username: "alice", password: "alice-password")
    try await setup.signUp(username: "bob", password: "bob-password")
    let clients = (HeraldClient(baseURL: base), HeraldClient(baseURL: base), HeraldClient(baseURL: base))
    try await clients.0.signIn(username: "alice", password: "alice-password")
    try await clients.1.signIn(username: "alice", password: "alice-password")
    try await clients.2.signIn(username: "bob", password: "bob-password")
    return clients
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

extension JSONDecoder {
    func decode<T: Decodable>(_ type: T.Type, from buffer: ByteBuffer) throws -> T {
        try decode(type, from: Data(buffer.readableBytesView))
    }
}
