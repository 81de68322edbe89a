import Crypto
import Foundation
import HeraldCore
import HeraldEmulator
import HeraldHub
import HeraldHubWire
import HeraldPush
import HeraldSQLite
import HeraldStore
import HeraldTLS
import Logging
import NIOCore
import Testing

/// APNs provider tokens across restarts, and a provider that APNs refuses a token update:
/// through the emulator, which refuses a key's new token more often than Apple allows.
@Suite("Hub: APNs provider tokens across restarts and refused token updates")
struct HubAPNsTokenTests {
    static let topic = "com.example.token-tests"

    /// An APNs emulator, the data directory of a "server", and a store of devices.
    final class Harness: Sendable {
        let authority: CertificateAuthority
        let credentials: EmulatorCredentials
        let emulator: APNsEmulator
        let directory: String
        let storage: DirectoryHubStorage
        let store: SQLiteStore

        init(minimumTokenInterval: TimeInterval) async throws {
            authority = try CertificateAuthority.makeEphemeral()
            credentials = try EmulatorCredentials.makeEphemeral()
            var configuration = APNsEmulator.Configuration(
                identity: try authority.issueServerIdentity(hosts: ["127.0.0.1"]),
                signingKeys: [credentials.apnsSigningKey]
            )
            configuration.topics = [HubAPNsTokenTests.topic]
            configuration.minimumProviderTokenInterval = minimumTokenInterval
            emulator = try await APNsEmulator.start(configuration: configuration, logger: hubTestLogger)
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-token-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            storage = DirectoryHubStorage(dataDirectory: directory)
            store = try await SQLiteStore.open(path: directory + "/devices.sqlite", logger: hubTestLogger)
        }

        /// A provider as a newly started process makes it: a cache of its own, backed by the
        /// data directory unless `keepsTokens` is off (as every release before did).
        func provider(keepsTokens: Bool = true, pause: Duration = .seconds(60)) throws -> APNsProvider {
            var client = APNsConfiguration(
                environment: .sandbox, teamID: credentials.apnsTeamID, keyID: credentials.apnsKeyID,
                privateKeyPEM: credentials.apnsPrivateKeyPEM, topic: HubAPNsTokenTests.topic)
            client.endpoint = emulator.baseURL
            client.trustRoots = [try authority.sslCertificate]
            client.connections = 1
            client.connectTimeout = .seconds(30)
            client.tokenUpdatePause = pause
            let cache = APNsTokenCache(storage: keepsTokens ? HubStorageProviderTokens(storage: storage) : nil, logger: hubTestLogger)
            return try APNsProvider(configuration: client, logger: hubTestLogger, tokenCache: cache)
        }

        /// Another process with the same key, and no shared storage, has APNs accept a token of
        /// its own (a send to `handle`): the next new token is refused as an update too soon.
        func acceptTokenElsewhere(sendingTo handle: String) async throws {
            let elsewhere = try provider(keepsTokens: false)
            let result = await elsewhere.send(PushNotification(body: .bytes(.init(string: #"{"aps":{}}"#))), to: PushTarget(handle: handle))
            try await elsewhere.shutdown()
            #expect(result == .delivered)
        }

        func register(_ count: Int, tag: String) async throws -> [String] {
            let handles = (0..<count).map { _ in emulator.registerDevice(topic: HubAPNsTokenTests.topic) }
            try await store.insertRegistrations(
                handles.enumerated().map { Registration(id: "\(tag)-\($0.offset)", platform: .apns, handle: $0.element, tags: [tag]) })
            return handles
        }

        func broadcast(
            _ tag: String, via provider: APNsProvider, configure: (inout HubEngine.Configuration) -> Void = { _ in }
        )
            async throws -> NotificationRecord
        {
            var configuration = HubEngine.Configuration()
            configure(&configuration)
            let engine = HubEngine(store: store, providers: [provider], configuration: configuration, logger: hubTestLogger)
            let payload = try PlatformPayload.hubNative(
                platform: .apns, legacyGCM: false, body: Data(#"{"aps":{"alert":"hello"}}"#.utf8), headers: [])
            let accepted = try await engine.enqueue(tagExpression: tag, payloads: [payload])
            while try await engine.deliverNext() {}
            return try #require(try await engine.notification(id: accepted.id))
        }

        func close() async {
            try? await store.close()
            try? await emulator.shutdown()
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    /// A hub given another tenant's team and key ids (they are public) with a key of its own,
    /// on the same server: its token is refused by APNs, and it neither poisons nor uses the
    /// tenant's stored token, whose devices are all reached.
    @Test func anotherTenantsIDsWithAJunkKeyCannotPoisonTheToken() async throws {
        let harness = try await Harness(minimumTokenInterval: 0)
        defer { Task { await harness.close() } }
        let handles = try await harness.register(5, tag: "all")

        var junk = APNsConfiguration(
            environment: .sandbox, teamID: harness.credentials.apnsTeamID, keyID: harness.credentials.apnsKeyID,
            privateKeyPEM: P256.Signing.PrivateKey().pemRepresentation, topic: HubAPNsTokenTests.topic)
        junk.endpoint = harness.emulator.baseURL
        junk.trustRoots = [try harness.authority.sslCertificate]
        junk.connections = 1
        let intruder = try APNsProvider(
            configuration: junk, logger: hubTestLogger,
            tokenCache: APNsTokenCache(storage: HubStorageProviderTokens(storage: harness.storage), logger: hubTestLogger))
        let refused = await intruder.send(PushNotification(body: .bytes(.init(string: #"{"aps":{}}"#))), to: PushTarget(handle: handles[0]))
        try await intruder.shutdown()
        #expect(refused.outcome == .invalidCredentials)

        // The tenant's node starts after it, on the same storage.
        let tenant = try harness.provider()
        let record = try await harness.broadcast("all", via: tenant)
        try await tenant.shutdown()
        #expect(record.counts.count(.success, .apns) == 5, "\(record.counts)")
        for handle in handles { #expect(harness.emulator.notifications(for: handle).count == 1) }
    }

    @Test func aRestartedServerDeliversWithTheTokenItStored() async throws {
        let harness = try await Harness(minimumTokenInterval: 20 * 60)
        defer { Task { await harness.close() } }
        let first = try await harness.register(20, tag: "before")
        let second = try await harness.register(20, tag: "after")

        let before = try harness.provider()
        let delivered = try await harness.broadcast("before", via: before)
        try await before.shutdown()
        #expect(delivered.counts.count(.success, .apns) == 20)

        // The process restarts: a new provider and token cache, the same data directory.
        let after = try harness.provider()
        let record = try await harness.broadcast("after", via: after)
        try await after.shutdown()
        #expect(record.state == .completed)
        #expect(record.counts.count(.success, .apns) == 20)
        #expect(record.counts.count(.throttled, .apns) == 0)
        for handle in first + second { #expect(harness.emulator.notifications(for: handle).count == 1) }

        let fingerprint = APNsTokenCache.fingerprint(harness.credentials.apnsPrivateKey.publicKey)
        let stored = try await harness.storage.sharedValue(
            named: "apns.provider-token.\(harness.credentials.apnsTeamID).\(harness.credentials.apnsKeyID).\(fingerprint)")
        #expect(stored != nil)
        let mode = try FileManager.default.attributesOfItem(atPath: harness.storage.sharedValuesPath)[.posixPermissions] as? Int
        #expect(mode == 0o600, "the token is a credential: private to the service's user")
    }

    @Test func aRefusedTokenUpdatePausesTheProviderAndEveryDeviceIsReachedAfterIt() async throws {
        // A token store that was lost (or another deployment with the same key): the new
        // token is refused until 2 seconds after the last one APNs accepted.
        let harness = try await Harness(minimumTokenInterval: 2)
        defer { Task { await harness.close() } }
        let handles = try await harness.register(300, tag: "all")
        try await harness.acceptTokenElsewhere(sendingTo: handles[0])

        let provider = try harness.provider(keepsTokens: false, pause: .milliseconds(300))
        let record = try await harness.broadcast("all", via: provider)
        try await provider.shutdown()
        #expect(provider.problem == nil, "the pause ended when APNs took the token")
        #expect(record.state == .completed)
        #expect(record.counts.count(.success, .apns) == 300)
        #expect(record.counts.total == 300)
        for handle in handles.dropFirst() { #expect(harness.emulator.notifications(for: handle).count == 1) }
    }

    @Test func devicesNotReachedBeforeTheNotificationGoesStaleAreAbandonedNotCompleted() async throws {
        let harness = try await Harness(minimumTokenInterval: 20 * 60)
        defer { Task { await harness.close() } }
        let handles = try await harness.register(10, tag: "all")
        try await harness.acceptTokenElsewhere(sendingTo: handles[0])

        let provider = try harness.provider(keepsTokens: false, pause: .milliseconds(200))
        let record = try await harness.broadcast("all", via: provider) { $0.abandonAfter = .seconds(1) }
        try await provider.shutdown()
        #expect(record.state == .abandoned)
        #expect(record.counts.count(.abandoned, .apns) == 10)
        #expect(record.counts.count(.success, .apns) == 0)
    }

    @Test func shutdownDuringAPauseHandsThePageBack() async throws {
        let harness = try await Harness(minimumTokenInterval: 20 * 60)
        defer { Task { await harness.close() } }
        let handles = try await harness.register(10, tag: "all")
        try await harness.acceptTokenElsewhere(sendingTo: handles[0])

        let provider = try harness.provider(keepsTokens: false, pause: .seconds(60))
        let engine = HubEngine(store: harness.store, providers: [provider], logger: hubTestLogger)
        let payload = try PlatformPayload.hubNative(
            platform: .apns, legacyGCM: false, body: Data(#"{"aps":{"alert":"hello"}}"#.utf8), headers: [])
        let accepted = try await engine.enqueue(tagExpression: "all", payloads: [payload])
        let delivering = Task { try await engine.deliverNext() }
        // The pause begins once APNs has refused the token (sooner or later on a loaded machine).
        let waitingSince = ContinuousClock.now
        while provider.problem == nil, ContinuousClock.now - waitingSince < .seconds(20) {
            try await Task.sleep(for: .milliseconds(20))
        }
        let problem = try #require(provider.problem, "/ready names the paused provider")
        #expect(problem.contains("TooManyProviderTokenUpdates"))
        engine.interruptDelivery()
        let started = ContinuousClock.now
        _ = try? await delivering.value
        #expect(ContinuousClock.now - started < .seconds(5), "shutdown does not wait out the pause")
        try await provider.shutdown()

        let record = try #require(try await engine.notification(id: accepted.id))
        #expect(!record.state.isFinal, "not reported as delivered")
        #expect(record.cursor == nil, "the page is sent again by whoever resumes it")
        #expect(record.counts.total == 0)
    }
}
