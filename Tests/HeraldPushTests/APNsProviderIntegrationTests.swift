import Crypto
import Foundation
import HeraldCore
import HeraldEmulator
import HeraldTLS
import Logging
import NIOCore
import Testing

@testable import HeraldPush

/// An APNs emulator on 127.0.0.1 port 0 and what a provider needs to talk to it.
struct APNsHarness {
    static let topic = "com.example.herald"
    let authority: CertificateAuthority
    let emulator: APNsEmulator
    let key: P256.Signing.PrivateKey
    let teamID: String
    let keyID: String
    /// The emulator's clock and the provider's clock, moved independently.
    let emulatorClock: TestClock
    let clientClock: TestClock
    let tokenCache: APNsTokenCache

    /// Runs `body` against a fresh emulator and shuts it down afterwards.
    static func with(
        clientCertificates: Bool = false,
        _ configure: (inout APNsEmulator.Configuration) -> Void = { _ in },
        _ body: (APNsHarness) async throws -> Void
    ) async throws {
        let authority = try CertificateAuthority.makeEphemeral()
        let key = P256.Signing.PrivateKey()
        let teamID = "TEAM" + String(UInt32.random(in: 100_000...999_999))
        let keyID = "KEY" + String(UInt32.random(in: 1_000_000...9_999_999))
        let start = Date()
        let emulatorClock = TestClock(start)
        var configuration = APNsEmulator.Configuration(
            identity: try authority.issueServerIdentity(hosts: ["127.0.0.1", "localhost"]),
            signingKeys: [.init(keyID: keyID, teamID: teamID, publicKey: key.publicKey)]
        )
        configuration.now = emulatorClock.function
        if clientCertificates { configuration.clientCertificateAuthority = authority }
        configure(&configuration)
        let emulator = try await APNsEmulator.start(configuration: configuration, logger: Logger(label: "apns-emulator"))
        let clientClock = TestClock(start)
        let harness = APNsHarness(
            authority: authority, emulator: emulator, key: key, teamID: teamID, keyID: keyID,
            emulatorClock: emulatorClock, clientClock: clientClock, tokenCache: APNsTokenCache(now: clientClock.function))
        do {
            try await body(harness)
        } catch {
            try await emulator.shutdown()
            throw error
        }
        try await emulator.shutdown()
    }

    func configuration(connections: Int = 2) throws -> APNsConfiguration {
        var configuration = APNsConfiguration(
            environment: .sandbox, teamID: teamID, keyID: keyID, privateKeyPEM: key.pemRepresentation, topic: Self.topic)
        configuration.endpoint = emulator.baseURL
        configuration.trustRoots = [try authority.sslCertificate]
        configuration.connections = connections
        configuration.timeout = .seconds(20)
        // Not under test: a busy machine may take longer than the default to set up TLS.
        configuration.connectTimeout = .seconds(20)
        return configuration
    }

    /// Runs `body` with a provider and shuts the provider down afterwards.
    func withProvider(
        _ configuration: APNsConfiguration? = nil,
        _ body: (APNsProvider) async throws -> Void
    ) async throws {
        let provider = try APNsProvider(
            configuration: configuration ?? (try self.configuration()), logger: Logger(label: "apns"), tokenCache: tokenCache)
        do {
            try await body(provider)
        } catch {
            try await provider.shutdown()
            throw error
        }
        try await provider.shutdown()
    }
}

func alert(_ text: String, headers: [(name: String, value: String)] = []) throws -> PushNotification {
    struct Payload: Encodable {
        struct APS: Encodable { var alert: String }
        var aps: APS
    }
    let data = try JSONEncoder().encode(Payload(aps: .init(alert: text)))
    return PushNotification(body: .bytes(ByteBuffer(bytes: data)), headers: headers)
}

@Suite(.timeLimit(.minutes(2))) struct APNsProviderIntegrationTests {
    @Test func deliveryLandsInTheInboxWithHeadersAndPayload() async throws {
        try await APNsHarness.with { harness in
            let device = harness.emulator.registerDevice(topic: APNsHarness.topic)
            try await harness.withProvider { provider in
                let notification = try alert(
                    "Hello",
                    headers: [
                        ("apns-priority", "10"), ("APNS-Collapse-Id", "greeting"), ("apns-expiration", "0"),
                        ("x-not-for-apple", "dropped"),
                    ])
                let result = await provider.send(notification, to: PushTarget(handle: device))
                #expect(result == .delivered)

                let inbox = harness.emulator.notifications(for: device)
                try #require(inbox.count == 1)
                let received = inbox[0]
                #expect(received.payload == #"{"aps":{"alert":"Hello"}}"#)
                #expect(received.headers["apns-topic"] == APNsHarness.topic)
                #expect(received.headers["apns-push-type"] == "alert")
                #expect(received.headers["apns-priority"] == "10")
                #expect(received.headers["apns-collapse-id"] == "greeting")
                #expect(received.headers["apns-expiration"] == "0")
                #expect(received.headers["x-not-for-apple"] == nil)

                // The notification's own topic and push type win over the defaults.
                let silent = PushNotification(
                    body: .bytes(ByteBuffer(string: #"{"aps":{"content-available":1},"id":"n1"}"#)),
                    headers: [("apns-push-type", "background"), ("apns-priority", "5"), ("apns-topic", APNsHarness.topic)])
                #expect(await provider.send(silent, to: PushTarget(handle: device)) == .delivered)
                let second = try #require(harness.emulator.notifications(for: device).last)
                #expect(second.headers["apns-push-type"] == "background")
                #expect(second.headers["apns-priority"] == "5")
                #expect(second.payload == #"{"aps":{"content-available":1},"id":"n1"}"#)
            }
        }
    }

    @Test func concurrentSendsShareOneProviderToken() async throws {
        try await APNsHarness.with { harness in
            let devices = (0..<4).map { _ in harness.emulator.registerDevice(topic: APNsHarness.topic) }
            // Two providers of the same key, four connections in all: a second token for the
            // key within 20 minutes would be refused with 429 TooManyProviderTokenUpdates.
            try await harness.withProvider(try harness.configuration(connections: 3)) { first in
                try await harness.withProvider(try harness.configuration(connections: 1)) { second in
                    let notification = try alert("fan-out")
                    let results = await withTaskGroup(of: PushResult.self) { group in
                        for i in 0..<400 {
                            let provider = i.isMultiple(of: 2) ? first : second
                            group.addTask { await provider.send(notification, to: PushTarget(handle: devices[i % 4])) }
                        }
                        return await group.reduce(into: [PushResult]()) { $0.append($1) }
                    }
                    #expect(results.count == 400)
                    #expect(results.allSatisfy { $0 == .delivered })
                    #expect(harness.emulator.acceptedCount == 400)
                    #expect(devices.map { harness.emulator.notifications(for: $0).count } == [100, 100, 100, 100])
                    #expect(first.tokenEntry === second.tokenEntry)
                }
            }
        }
    }

    @Test func unregisteredDeviceIsAnExpiredChannel() async throws {
        try await APNsHarness.with { harness in
            let device = harness.emulator.registerDevice(topic: APNsHarness.topic)
            harness.emulator.unregister(token: device)
            try await harness.withProvider { provider in
                let result = await provider.send(try alert("gone"), to: PushTarget(handle: device))
                #expect(result.disposition == .channelExpired)
                #expect(result.outcome == .expiredChannel)
                #expect(result.status == 410)
                #expect(result.reason == "Unregistered")
            }
        }
    }

    @Test func unknownTokenIsABadChannelNotAnExpiredOne() async throws {
        try await APNsHarness.with { harness in
            let other = harness.emulator.registerDevice(topic: "com.example.other")
            try await harness.withProvider { provider in
                let unknown = String(repeating: "ab", count: 32)
                let bad = await provider.send(try alert("x"), to: PushTarget(handle: unknown))
                #expect(bad.disposition == .permanentFailure)
                #expect(bad.outcome == .badChannel)
                #expect(bad.status == 400)
                #expect(bad.reason == "BadDeviceToken")

                let wrongTopic = await provider.send(try alert("x"), to: PushTarget(handle: other))
                #expect(wrongTopic.disposition == .permanentFailure)
                #expect(wrongTopic.outcome == .wrongToken)
                #expect(wrongTopic.reason == "DeviceTokenNotForTopic")
            }
        }
    }

    @Test func formatAndSizeErrorsArePermanent() async throws {
        try await APNsHarness.with { harness in
            let device = harness.emulator.registerDevice(topic: APNsHarness.topic)
            try await harness.withProvider { provider in
                let badPriority = await provider.send(try alert("x", headers: [("apns-priority", "7")]), to: PushTarget(handle: device))
                #expect(badPriority.disposition == .permanentFailure)
                #expect(badPriority.outcome == .invalidNotificationFormat)
                #expect(badPriority.reason == "BadPriority")

                let padding = String(repeating: "x", count: 4097 - #"{"aps":{"alert":""}}"#.utf8.count)
                let tooLarge = await provider.send(try alert(padding), to: PushTarget(handle: device))
                #expect(tooLarge.disposition == .permanentFailure)
                #expect(tooLarge.outcome == .invalidNotificationSize)
                #expect(tooLarge.status == 413)

                let atLimit = String(repeating: "x", count: 4096 - #"{"aps":{"alert":""}}"#.utf8.count)
                #expect(await provider.send(try alert(atLimit), to: PushTarget(handle: device)) == .delivered)
            }
        }
    }

    @Test func throttlingAndOutagesAreRetryableWithRetryAfter() async throws {
        try await APNsHarness.with { harness in
            let device = harness.emulator.registerDevice(topic: APNsHarness.topic)
            try await harness.withProvider { provider in
                harness.emulator.injectFaults(Fault.throttled.withRetryAfter(7), count: 1)
                let throttled = await provider.send(try alert("x"), to: PushTarget(handle: device))
                #expect(throttled.disposition == .retryable(retryAfter: 7))
                #expect(throttled.outcome == .throttled)
                #expect(throttled.status == 429)
                #expect(throttled.reason == "TooManyRequests")

                harness.emulator.injectFaults(.unavailable, count: 1)
                let unavailable = await provider.send(try alert("x"), to: PushTarget(handle: device))
                #expect(unavailable.disposition == .retryable(retryAfter: nil))
                #expect(unavailable.outcome == .pnsUnavailable)

                harness.emulator.injectFaults(.internalError, count: 1)
                let internalError = await provider.send(try alert("x"), to: PushTarget(handle: device))
                #expect(internalError.outcome == .pnsServerError)

                #expect(await provider.send(try alert("x"), to: PushTarget(handle: device)) == .delivered)
            }
        }
    }

    @Test func expiredProviderTokenIsRefreshedOnce() async throws {
        try await APNsHarness.with { harness in
            let device = harness.emulator.registerDevice(topic: APNsHarness.topic)
            var configuration = try harness.configuration()
            configuration.tokenLifetime = .seconds(60 * 60)
            try await harness.withProvider(configuration) { provider in
                #expect(await provider.send(try alert("1"), to: PushTarget(handle: device)) == .delivered)
                let first = try await #require(provider.tokenEntry).token(key: harness.key, lifetime: 3600)

                // APNs' clock says the token is 61 minutes old; ours says 30 (still in its lifetime).
                harness.emulatorClock.advance(minutes: 61)
                harness.clientClock.advance(minutes: 30)
                let notification = try alert("2")
                let results = await withTaskGroup(of: PushResult.self) { group in
                    for _ in 0..<10 { group.addTask { await provider.send(notification, to: PushTarget(handle: device)) } }
                    return await group.reduce(into: [PushResult]()) { $0.append($1) }
                }
                // Sends that used the old token get a retryable 403; any that started after the
                // first 403 already use the single new token. Never a second new token (APNs would
                // answer 429 TooManyProviderTokenUpdates).
                var expired = 0
                for result in results where result != .delivered {
                    #expect(result.disposition == .retryable(retryAfter: nil))
                    #expect(result.outcome == .invalidCredentials)
                    #expect(result.status == 403)
                    #expect(result.reason == "ExpiredProviderToken")
                    expired += 1
                }
                #expect(expired >= 1)

                #expect(await provider.send(notification, to: PushTarget(handle: device)) == .delivered)
                let second = try await #require(provider.tokenEntry).token(key: harness.key, lifetime: 3600)
                #expect(second.generation == first.generation + 1)
                #expect(second.issuedAt == harness.clientClock.now)
                #expect(harness.emulator.notifications(for: device).count == 2 + (10 - expired))
            }
        }
    }

    @Test func unknownKeyIsRefusedCredentials() async throws {
        try await APNsHarness.with { harness in
            let device = harness.emulator.registerDevice(topic: APNsHarness.topic)
            var configuration = try harness.configuration()
            configuration.privateKeyPEM = P256.Signing.PrivateKey().pemRepresentation
            configuration.keyID = "UNKNOWNKEY"
            try await harness.withProvider(configuration) { provider in
                let result = await provider.send(try alert("x"), to: PushTarget(handle: device))
                #expect(result.disposition == .permanentFailure)
                #expect(result.outcome == .invalidCredentials)
                #expect(result.status == 403)
                #expect(result.reason == "InvalidProviderToken")
            }
        }
    }

    @Test func emulatorGoneIsUnreachable() async throws {
        var saved: APNsConfiguration?
        var device = ""
        var cache: APNsTokenCache?
        try await APNsHarness.with { harness in
            device = harness.emulator.registerDevice(topic: APNsHarness.topic)
            saved = try harness.configuration()
            // AsyncHTTPClient retries refused connections until the request's deadline.
            saved?.timeout = .seconds(2)
            cache = harness.tokenCache
        }
        let provider = try APNsProvider(
            configuration: try #require(saved), logger: Logger(label: "apns"), tokenCache: try #require(cache))
        let result = await provider.send(try alert("x"), to: PushTarget(handle: device))
        #expect(result.disposition == .retryable(retryAfter: nil))
        #expect(result.outcome == .pnsUnreachable)
        try await provider.shutdown()
    }
}
