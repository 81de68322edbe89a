import Foundation
import HeraldCore
import HeraldEmulator
import HeraldTLS
import Logging
import NIOCore
import Testing
import _CryptoExtras

@testable import HeraldPush

/// An FCM emulator on 127.0.0.1 port 0 and a matching service account.
struct FCMHarness {
    static let projectID = "herald-test"
    let authority: CertificateAuthority
    let emulator: FCMEmulator
    let account: FCMServiceAccount
    let emulatorClock: TestClock
    let clientClock: TestClock

    static func with(_ body: (FCMHarness) async throws -> Void) async throws {
        let authority = try CertificateAuthority.makeEphemeral()
        let key = try TestKeys.rsa()
        let email = "herald-push@\(projectID).iam.gserviceaccount.com"
        let start = Date()
        let emulatorClock = TestClock(start)
        var configuration = FCMEmulator.Configuration(
            identity: try authority.issueServerIdentity(hosts: ["127.0.0.1"]),
            projectID: projectID,
            serviceAccounts: [.init(clientEmail: email, publicKey: key.publicKey)]
        )
        configuration.now = emulatorClock.function
        let emulator = try await FCMEmulator.start(configuration: configuration, logger: Logger(label: "fcm-emulator"))
        let account = FCMServiceAccount(
            projectID: projectID, clientEmail: email, privateKey: key.pemRepresentation,
            tokenURI: emulator.tokenURI, privateKeyID: "key-1")
        let harness = FCMHarness(
            authority: authority, emulator: emulator, account: account, emulatorClock: emulatorClock,
            clientClock: TestClock(start))
        do {
            try await body(harness)
        } catch {
            try await emulator.shutdown()
            throw error
        }
        try await emulator.shutdown()
    }

    func configuration(account: FCMServiceAccount? = nil) throws -> FCMConfiguration {
        var configuration = FCMConfiguration(serviceAccount: account ?? self.account)
        configuration.endpoint = emulator.baseURL
        configuration.trustRoots = [try authority.sslCertificate]
        configuration.timeout = .seconds(20)
        // Not under test: a busy machine may take longer than the default to set up TLS.
        configuration.connectTimeout = .seconds(20)
        configuration.now = clientClock.function
        return configuration
    }

    func withProvider(_ configuration: FCMConfiguration? = nil, _ body: (FCMProvider) async throws -> Void) async throws {
        let provider = try FCMProvider(configuration: configuration ?? (try self.configuration()), logger: Logger(label: "fcm"))
        do {
            try await body(provider)
        } catch {
            try await provider.shutdown()
            throw error
        }
        try await provider.shutdown()
    }
}

func dataMessage(_ fields: [(String, String)]) -> PushNotification {
    PushNotification(body: .fcmMessage(.object([("data", .object(fields.map { ($0.0, JSONValue.string($0.1)) }))])))
}

@Suite(.timeLimit(.minutes(2))) struct FCMProviderIntegrationTests {
    @Test func deliveryLandsInTheInbox() async throws {
        try await FCMHarness.with { harness in
            let device = harness.emulator.registerDevice()
            try await harness.withProvider { provider in
                let result = await provider.send(dataMessage([("id", "42"), ("kind", "secure")]), to: PushTarget(handle: device))
                #expect(result == .delivered)
                let inbox = harness.emulator.notifications(for: device)
                try #require(inbox.count == 1)
                let message = try JSONDecoder().decode(JSONValue.self, from: Data(inbox[0].payload.utf8))
                #expect(message["token"] == .string(device))
                #expect(message["data"]?["id"] == .string("42"))
                #expect(message["data"]?["kind"] == .string("secure"))

                // A byte body holding the message fields works the same.
                let bytes = PushNotification(body: .bytes(ByteBuffer(string: #"{"notification":{"title":"Hi","body":"there"}}"#)))
                #expect(await provider.send(bytes, to: PushTarget(handle: device)) == .delivered)
                let second = try JSONDecoder().decode(
                    JSONValue.self, from: Data(try #require(harness.emulator.notifications(for: device).last).payload.utf8))
                #expect(second["notification"]?["title"] == .string("Hi"))
                #expect(second["token"] == .string(device))
            }
        }
    }

    @Test func manySendsOneTokenExchange() async throws {
        try await FCMHarness.with { harness in
            let devices = (0..<5).map { _ in harness.emulator.registerDevice() }
            try await harness.withProvider { provider in
                let message = dataMessage([("id", "1")])
                let results = await withTaskGroup(of: PushResult.self) { group in
                    for i in 0..<200 {
                        group.addTask { await provider.send(message, to: PushTarget(handle: devices[i % 5])) }
                    }
                    return await group.reduce(into: [PushResult]()) { $0.append($1) }
                }
                #expect(results.allSatisfy { $0 == .delivered })
                #expect(harness.emulator.acceptedCount == 200)
                #expect(provider.tokenExchangeCount == 1)

                // Reused until 5 minutes before expiry (3600 s), then replaced.
                harness.clientClock.advance(minutes: 54)
                harness.emulatorClock.advance(minutes: 54)
                #expect(await provider.send(message, to: PushTarget(handle: devices[0])) == .delivered)
                #expect(provider.tokenExchangeCount == 1)
                harness.clientClock.advance(minutes: 1)
                harness.emulatorClock.advance(minutes: 1)
                #expect(await provider.send(message, to: PushTarget(handle: devices[0])) == .delivered)
                #expect(provider.tokenExchangeCount == 2)
            }
        }
    }

    @Test func refusedAccessTokenIsRefreshedAndTheSendRepeatedOnce() async throws {
        try await FCMHarness.with { harness in
            let device = harness.emulator.registerDevice()
            try await harness.withProvider { provider in
                #expect(await provider.send(dataMessage([("n", "1")]), to: PushTarget(handle: device)) == .delivered)
                // Google's clock says the access token expired; ours says it is 30 minutes old.
                harness.emulatorClock.advance(minutes: 61)
                harness.clientClock.advance(minutes: 30)
                #expect(await provider.send(dataMessage([("n", "2")]), to: PushTarget(handle: device)) == .delivered)
                #expect(provider.tokenExchangeCount == 2)
                #expect(harness.emulator.notifications(for: device).count == 2)
            }
        }
    }

    /// Sends go over the provider's own HTTP/2 connections, no more than configured, and so
    /// does the token exchange when the token endpoint shares their origin (the emulator's);
    /// a 401 refreshes the access token and repeats the send over them too.
    @Test func sendsGoOverHTTP2OnTheConfiguredConnections() async throws {
        try await FCMHarness.with { harness in
            let devices = (0..<5).map { _ in harness.emulator.registerDevice() }
            var configuration = try harness.configuration()
            configuration.connections = 2
            try await harness.withProvider(configuration) { provider in
                let message = dataMessage([("id", "1")])
                let results = await withTaskGroup(of: PushResult.self) { group in
                    for i in 0..<200 {
                        group.addTask { await provider.send(message, to: PushTarget(handle: devices[i % 5])) }
                    }
                    return await group.reduce(into: [PushResult]()) { $0.append($1) }
                }
                #expect(results.allSatisfy { $0 == .delivered })
                #expect(harness.emulator.acceptedOverHTTP2Count == 200)
                #expect(provider.openConnections == 2)

                harness.emulatorClock.advance(minutes: 61)
                harness.clientClock.advance(minutes: 30)
                #expect(await provider.send(message, to: PushTarget(handle: devices[0])) == .delivered)
                #expect(provider.tokenExchangeCount == 2)
                #expect(harness.emulator.acceptedOverHTTP2Count == 201)
                #expect(provider.openConnections == 2)
            }
        }
    }

    /// A token endpoint on another origin is reached over AsyncHTTPClient; a send that gets no
    /// answer (the HTTP/2 client's connection refused) is retryable, as is a send after shutdown.
    @Test func aBatchGoesWithOneTokenAndAStaleTokenIsRefreshedOnceForAllOfIt() async throws {
        try await FCMHarness.with { harness in
            let devices = (0..<5).map { _ in harness.emulator.registerDevice() }
            var configuration = try harness.configuration()
            configuration.connections = 2
            try await harness.withProvider(configuration) { provider in
                let message = dataMessage([("id", "1")]).encodedOnceForEveryDevice()
                var batch = (0..<100).map { PushSend(message, to: PushTarget(handle: devices[$0 % 5])) }
                batch[7] = PushSend(message, to: PushTarget(handle: ""))
                let results = await provider.send(batch)
                #expect(results.count == 100)
                #expect(results[7].outcome == .badChannel, "refused before anything was sent")
                #expect(results.enumerated().allSatisfy { $0.offset == 7 || $0.element == .delivered })
                #expect(harness.emulator.acceptedOverHTTP2Count == 99)
                #expect(provider.tokenExchangeCount == 1)
                #expect(provider.openConnections == 2)

                // Every request of the next batch is refused with the stale token: one refresh,
                // each repeated once.
                harness.emulatorClock.advance(minutes: 61)
                harness.clientClock.advance(minutes: 30)
                let again = await provider.send(Array(batch[10..<60]))
                #expect(again.allSatisfy { $0 == .delivered })
                #expect(provider.tokenExchangeCount == 2)
                #expect(harness.emulator.acceptedOverHTTP2Count == 149)
                // Device 2 missed the send whose handle was emptied.
                #expect(devices.map { harness.emulator.notifications(for: $0).count } == [30, 30, 29, 30, 30])
            }
        }
    }

    @Test func sendWithoutAnAnswerIsUnreachable() async throws {
        try await FCMHarness.with { harness in
            let device = harness.emulator.registerDevice()
            var configuration = try harness.configuration()
            // Nothing listens on port 1; the token URI stays the emulator's.
            configuration.endpoint = "https://127.0.0.1:1"
            configuration.timeout = .seconds(5)
            let provider = try FCMProvider(configuration: configuration, logger: Logger(label: "fcm"))
            let result = await provider.send(dataMessage([("id", "1")]), to: PushTarget(handle: device))
            #expect(result.disposition == .retryable(retryAfter: nil))
            #expect(result.outcome == .pnsUnreachable)
            #expect(result.status == nil)
            #expect(provider.tokenExchangeCount == 1)
            #expect(provider.openConnections == 1)
            try await provider.shutdown()
            let afterShutdown = await provider.send(dataMessage([("id", "1")]), to: PushTarget(handle: device))
            #expect(afterShutdown.outcome == .pnsUnreachable)
        }
    }

    @Test func unregisteredIsAnExpiredChannel() async throws {
        try await FCMHarness.with { harness in
            let device = harness.emulator.registerDevice()
            harness.emulator.unregister(token: device)
            try await harness.withProvider { provider in
                let result = await provider.send(dataMessage([("id", "1")]), to: PushTarget(handle: device))
                #expect(result.disposition == .channelExpired)
                #expect(result.outcome == .expiredChannel)
                #expect(result.status == 404)
                #expect(result.reason == "UNREGISTERED")
            }
        }
    }

    @Test func invalidTokenAndMessageArePermanent() async throws {
        try await FCMHarness.with { harness in
            let device = harness.emulator.registerDevice()
            try await harness.withProvider { provider in
                let unknown = await provider.send(dataMessage([("id", "1")]), to: PushTarget(handle: "not-a-registered-token"))
                #expect(unknown.disposition == .permanentFailure)
                #expect(unknown.outcome == .invalidNotificationFormat)
                #expect(unknown.status == 400)
                #expect(unknown.reason == "INVALID_ARGUMENT")

                let nonStringData = PushNotification(body: .fcmMessage(.object([("data", .object([("n", .number(1))]))])))
                let invalid = await provider.send(nonStringData, to: PushTarget(handle: device))
                #expect(invalid.outcome == .invalidNotificationFormat)
                #expect(invalid.status == 400)

                let notObject = await provider.send(
                    PushNotification(body: .bytes(ByteBuffer(string: "[]"))), to: PushTarget(handle: device))
                #expect(notObject.disposition == .permanentFailure)
                #expect(notObject.outcome == .invalidNotificationFormat)
                #expect(notObject.status == nil)
            }
        }
    }

    @Test func wrongProjectIsAWrongToken() async throws {
        try await FCMHarness.with { harness in
            let device = harness.emulator.registerDevice()
            var account = harness.account
            account.projectID = "someone-else"
            try await harness.withProvider(try harness.configuration(account: account)) { provider in
                let result = await provider.send(dataMessage([("id", "1")]), to: PushTarget(handle: device))
                #expect(result.disposition == .permanentFailure)
                #expect(result.outcome == .wrongToken)
                #expect(result.status == 403)
                #expect(result.reason == "SENDER_ID_MISMATCH")
            }
        }
    }

    @Test(arguments: [
        (Fault.throttled.withRetryAfter(12), DeliveryOutcome.throttled, 12.0 as Double?, "QUOTA_EXCEEDED"),
        (Fault.unavailable.withRetryAfter(3), .pnsUnavailable, 3.0, "UNAVAILABLE"),
        (Fault.internalError, .pnsServerError, nil, "INTERNAL"),
    ])
    func faultsAreRetryable(_ fault: Fault, outcome: DeliveryOutcome, retryAfter: Double?, code: String) async throws {
        try await FCMHarness.with { harness in
            let device = harness.emulator.registerDevice()
            try await harness.withProvider { provider in
                harness.emulator.injectFaults(fault, count: 1)
                let result = await provider.send(dataMessage([("id", "1")]), to: PushTarget(handle: device))
                // Throttling is the credential's (a quota of the sender), not the device's.
                let expected: PushResult.Disposition = outcome == .throttled ? .credentialThrottled(retryAfter: retryAfter) : .retryable(retryAfter: retryAfter)
                #expect(result.disposition == expected)
                #expect(result.outcome == outcome)
                #expect(result.status == fault.status)
                #expect(result.reason == code)
                #expect(await provider.send(dataMessage([("id", "1")]), to: PushTarget(handle: device)) == .delivered)
            }
        }
    }

    @Test func refusedServiceAccountIsInvalidCredentialsWithoutFloodingTheTokenEndpoint() async throws {
        try await FCMHarness.with { harness in
            let device = harness.emulator.registerDevice()
            var account = harness.account
            account.clientEmail = "stranger@\(FCMHarness.projectID).iam.gserviceaccount.com"
            try await harness.withProvider(try harness.configuration(account: account)) { provider in
                let results = await withTaskGroup(of: PushResult.self) { group in
                    for _ in 0..<20 { group.addTask { await provider.send(dataMessage([("id", "1")]), to: PushTarget(handle: device)) } }
                    return await group.reduce(into: [PushResult]()) { $0.append($1) }
                }
                for result in results {
                    #expect(result.disposition == .permanentFailure)
                    #expect(result.outcome == .invalidCredentials)
                    #expect(result.reason == "invalid_grant")
                }
                #expect(provider.tokenExchangeCount == 1)
                #expect(harness.emulator.acceptedCount == 0)
            }
        }
    }

    @Test func emulatorCredentialsServiceAccountFileWorks() async throws {
        let credentials = try EmulatorCredentials.makeEphemeral()
        let authority = try CertificateAuthority.makeEphemeral()
        var configuration = FCMEmulator.Configuration(
            identity: try authority.issueServerIdentity(hosts: ["127.0.0.1"]),
            projectID: credentials.fcmProjectID,
            serviceAccounts: [credentials.fcmServiceAccount]
        )
        configuration.openDeviceRegistry = true
        let emulator = try await FCMEmulator.start(configuration: configuration, logger: Logger(label: "fcm-emulator"))
        do {
            let account = try FCMServiceAccount(json: try credentials.fcmServiceAccountJSON(tokenURI: emulator.tokenURI))
            #expect(account.tokenURI == emulator.tokenURI)
            var providerConfiguration = FCMConfiguration(serviceAccount: account)
            providerConfiguration.endpoint = emulator.baseURL
            providerConfiguration.trustRoots = [try authority.sslCertificate]
            providerConfiguration.connectTimeout = .seconds(30)
            let provider = try FCMProvider(configuration: providerConfiguration, logger: Logger(label: "fcm"))
            let token = String(repeating: "a", count: 22) + ":APA91b" + String(repeating: "b", count: 134)
            let result = await provider.send(dataMessage([("id", "1")]), to: PushTarget(handle: token))
            #expect(result == .delivered)
            try await provider.shutdown()
        } catch {
            try await emulator.shutdown()
            throw error
        }
        try await emulator.shutdown()
    }
}
