import Crypto
import Foundation
import HeraldCore
import HeraldEmulator
import HeraldTLS
import HeraldTestSupport
import Logging
import NIOCore
import Testing

@testable import HeraldPush

/// A Web Push emulator on 127.0.0.1 port 0 and a VAPID key for the provider.
struct WebPushProviderHarness {
    static let subject = "mailto:ops@herald.test"
    let authority: CertificateAuthority
    let emulator: WebPushEmulator
    let vapidKey: P256.Signing.PrivateKey
    let emulatorClock: TestClock
    let clientClock: TestClock

    static func with(
        _ configure: (inout WebPushEmulator.Configuration) -> Void = { _ in },
        _ body: (WebPushProviderHarness) async throws -> Void
    ) async throws {
        let authority = try CertificateAuthority.makeEphemeral()
        let start = Date()
        let emulatorClock = TestClock(start)
        var configuration = WebPushEmulator.Configuration(
            identity: try authority.issueServerIdentity(hosts: ["127.0.0.1", "localhost"]))
        configuration.now = emulatorClock.function
        configure(&configuration)
        let emulator = try await WebPushEmulator.start(configuration: configuration, logger: Logger(label: "webpush-emulator"))
        let harness = WebPushProviderHarness(
            authority: authority, emulator: emulator, vapidKey: P256.Signing.PrivateKey(), emulatorClock: emulatorClock,
            clientClock: TestClock(start))
        do {
            try await body(harness)
        } catch {
            try await emulator.shutdown()
            throw error
        }
        try await emulator.shutdown()
    }

    func configuration() throws -> WebPushConfiguration {
        var configuration = WebPushConfiguration(vapidPrivateKey: vapidKey.pemRepresentation, subject: Self.subject)
        configuration.trustRoots = [try authority.sslCertificate]
        configuration.timeout = .seconds(20)
        // Not under test: a busy machine may take longer than the default to set up TLS.
        configuration.connectTimeout = .seconds(20)
        configuration.now = clientClock.function
        return configuration
    }

    func withProvider(_ configuration: WebPushConfiguration? = nil, _ body: (WebPushProvider) async throws -> Void) async throws {
        let provider = try WebPushProvider(configuration: configuration ?? (try self.configuration()), logger: Logger(label: "webpush"))
        do {
            try await body(provider)
        } catch {
            try await provider.shutdown()
            throw error
        }
        try await provider.shutdown()
    }
}

extension WebPushSubscription {
    var target: PushTarget { PushTarget(handle: endpoint, webPushKeys: keys) }
}

func webPushMessage(_ text: String, headers: [(name: String, value: String)] = []) -> PushNotification {
    PushNotification(body: .bytes(ByteBuffer(string: text)), headers: headers)
}

@Suite(.timeLimit(.minutes(2))) struct WebPushProviderIntegrationTests {
    @Test func deliveredPlaintextAndHeadersReachTheBrowser() async throws {
        try await WebPushProviderHarness.with { harness in
            let subscription = harness.emulator.subscribe()
            try await harness.withProvider { provider in
                let text = #"{"title":"Herald","body":"Grüße aus dem Test"}"#
                let result = await provider.send(webPushMessage(text), to: subscription.target)
                #expect(result.disposition == .delivered)
                #expect(result.outcome == .success)
                #expect(result.status == 201)

                let tagged = webPushMessage(
                    "second", headers: [("TTL", "60"), ("Urgency", "High"), ("topic", "scores"), ("apns-priority", "10")])
                #expect(await provider.send(tagged, to: subscription.target).disposition == .delivered)

                let inbox = harness.emulator.notifications(for: subscription)
                try #require(inbox.count == 2)
                #expect(inbox[0].payload == text)
                #expect(inbox[0].headers == ["ttl": "86400"])
                #expect(inbox[1].payload == "second")
                #expect(inbox[1].headers == ["ttl": "60", "urgency": "high", "topic": "scores"])
            }
        }
    }

    @Test func oneVAPIDTokenPerPushServiceUntilNearItsExpiry() async throws {
        try await WebPushProviderHarness.with { harness in
            let subscriptions = (0..<4).map { _ in harness.emulator.subscribe() }
            try await harness.withProvider { provider in
                try await withThrowingTaskGroup(of: PushResult.self) { group in
                    for (index, subscription) in subscriptions.enumerated() {
                        group.addTask { await provider.send(webPushMessage("n\(index)"), to: subscription.target) }
                    }
                    for try await result in group { #expect(result.disposition == .delivered) }
                }
                #expect(provider.vapid.signatureCount == 1)

                // 11 hours later the 12-hour token is still used; past 11 h it is replaced.
                harness.clientClock.advance(minutes: 10 * 60)
                harness.emulatorClock.advance(minutes: 10 * 60)
                #expect(await provider.send(webPushMessage("later"), to: subscriptions[0].target).disposition == .delivered)
                #expect(provider.vapid.signatureCount == 1)
                harness.clientClock.advance(minutes: 61)
                harness.emulatorClock.advance(minutes: 61)
                #expect(await provider.send(webPushMessage("renewed"), to: subscriptions[0].target).disposition == .delivered)
                #expect(provider.vapid.signatureCount == 2)
                #expect(harness.emulator.acceptedCount == 6)
            }
        }
    }

    @Test func theVAPIDTokenNamesTheOriginAndExpiresIn12Hours() async throws {
        let key = P256.Signing.PrivateKey()
        let clock = TestClock()
        var configuration = WebPushConfiguration(vapidPrivateKey: key.pemRepresentation, subject: "https://herald.test/contact")
        configuration.now = clock.function
        let provider = try WebPushProvider(configuration: configuration, logger: Logger(label: "webpush"))
        do {
            try checkToken(provider, key: key, clock: clock)
        } catch {
            try await provider.shutdown()
            throw error
        }
        try await provider.shutdown()
    }

    private func checkToken(_ provider: WebPushProvider, key: P256.Signing.PrivateKey, clock: TestClock) throws {
        let endpoint = try #require(WebPushEndpoint("https://Push.Example.NET:443/wpush/v2/abc?x=1"))
        #expect(endpoint.origin == "https://push.example.net")
        let authorization = try provider.vapid.authorization(origin: endpoint.origin)
        let parts = authorization.split(separator: " ")
        try #require(parts.count == 3)
        #expect(parts[0] == "vapid")
        #expect(parts[2] == "k=" + provider.applicationServerKey)
        #expect(provider.applicationServerKey == JSONWebToken.base64URL(key.publicKey.x963Representation))
        let jwt = try DecodedJWT(parts[1].dropFirst(2).dropLast())
        #expect(jwt.header["alg"] as? String == "ES256")
        #expect(jwt.header["typ"] as? String == "JWT")
        #expect(jwt.claims["aud"] as? String == "https://push.example.net")
        #expect(jwt.claims["sub"] as? String == "https://herald.test/contact")
        #expect(jwt.claims["exp"] as? Int == Int(clock.now.timeIntervalSince1970) + 12 * 3600)
        #expect(jwt.claimsText.contains("\"aud\":\"https://push.example.net\""))
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: jwt.signature)
        #expect(key.publicKey.isValidSignature(signature, for: jwt.signingInput))

        // Another push service gets its own token.
        let other = try provider.vapid.authorization(origin: "https://fcm.googleapis.com")
        #expect(other != authorization)
        #expect(try provider.vapid.authorization(origin: endpoint.origin) == authorization)
        #expect(provider.vapid.signatureCount == 2)
    }

    @Test func vapidKeysLoadFromPEMRawAndDER() throws {
        let key = P256.Signing.PrivateKey()
        let forms = [
            key.pemRepresentation,
            "\n" + key.pemRepresentation + "\n",
            JSONWebToken.base64URL(key.rawRepresentation),
            JSONWebToken.base64URL(key.derRepresentation),
            try sec1PEM(key),
        ]
        for form in forms {
            let loaded = try WebPushVAPID.privateKey(from: form)
            #expect(loaded.publicKey.x963Representation == key.publicKey.x963Representation)
        }
        for bad in ["", "not a key", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----", JSONWebToken.base64URL([1, 2, 3])] {
            expectError(
                PushProviderError.invalidPrivateKey(
                    "the VAPID key is neither a PEM P-256 private key nor a base64url raw or DER P-256 private key")
            ) {
                try WebPushVAPID.privateKey(from: bad)
            }
        }
    }

    /// The SEC1 (`EC PRIVATE KEY`) PEM that `openssl ecparam -genkey` writes: the OCTET STRING
    /// that follows the curve's OID in swift-crypto's PKCS#8 DER.
    private func sec1PEM(_ key: P256.Signing.PrivateKey) throws -> String {
        let pkcs8 = [UInt8](key.derRepresentation)
        let prime256v1: [UInt8] = [0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]
        let oidEnd = try #require((0...(pkcs8.count - 8)).first { Array(pkcs8[$0..<($0 + 8)]) == prime256v1 }) + 8
        try #require(pkcs8[oidEnd] == 0x04 && pkcs8[oidEnd + 1] < 0x80)
        let sec1 = pkcs8[(oidEnd + 2)..<(oidEnd + 2 + Int(pkcs8[oidEnd + 1]))]
        return "-----BEGIN EC PRIVATE KEY-----\n"
            + Data(sec1).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
            + "\n-----END EC PRIVATE KEY-----\n"
    }

    @Test func configurationIsValidated() throws {
        let pem = P256.Signing.PrivateKey().pemRepresentation
        func expectInvalid(_ change: (inout WebPushConfiguration) -> Void) {
            var configuration = WebPushConfiguration(vapidPrivateKey: pem, subject: "mailto:ops@herald.test")
            change(&configuration)
            #expect(throws: PushProviderError.self) {
                _ = try WebPushProvider(configuration: configuration, logger: Logger(label: "webpush"))
            }
        }
        expectInvalid { $0.subject = "ops@herald.test" }
        expectInvalid { $0.subject = "http://herald.test" }
        expectInvalid { $0.tokenLifetime = .seconds(25 * 3600) }
        expectInvalid { $0.defaultTTL = -1 }
        expectInvalid { $0.connections = 0 }
        expectInvalid { $0.vapidPrivateKey = "nope" }
    }

    @Test func unsubscribedAndUnknownSubscriptionsAreExpiredChannels() async throws {
        try await WebPushProviderHarness.with { harness in
            let subscription = harness.emulator.subscribe()
            try await harness.withProvider { provider in
                #expect(await provider.send(webPushMessage("hi"), to: subscription.target).disposition == .delivered)
                harness.emulator.unregister(subscription)
                let gone = await provider.send(webPushMessage("hi"), to: subscription.target)
                #expect(gone.disposition == .channelExpired)
                #expect(gone.outcome == .expiredChannel)
                #expect(gone.status == 410)
                #expect(gone.reason == "Unsubscribed")

                var unknown = subscription.target
                unknown.handle = harness.emulator.baseURL + "/push/never-issued"
                let notFound = await provider.send(webPushMessage("hi"), to: unknown)
                #expect(notFound.disposition == .channelExpired)
                #expect(notFound.status == 404)
            }
        }
    }

    @Test func refusedVAPIDIsInvalidCredentials() async throws {
        try await WebPushProviderHarness.with { harness in
            let restricted = harness.emulator.subscribe(applicationServerKey: P256.Signing.PrivateKey().publicKey)
            let open = harness.emulator.subscribe()
            try await harness.withProvider { provider in
                let mismatch = await provider.send(webPushMessage("hi"), to: restricted.target)
                #expect(mismatch.disposition == .permanentFailure)
                #expect(mismatch.outcome == .invalidCredentials)
                #expect(mismatch.status == 403)
                #expect(mismatch.reason == "KeyMismatch")

                // Reached by another name: the token's aud is not the emulator's origin.
                var renamed = open.target
                renamed.handle = open.endpoint.replacingOccurrences(of: "127.0.0.1", with: "localhost")
                let audience = await provider.send(webPushMessage("hi"), to: renamed)
                #expect(audience.outcome == .invalidCredentials)
                #expect(audience.reason == "BadAudience")

                // The push service's clock is a day ahead: the token has expired.
                harness.emulatorClock.advance(minutes: 24 * 60)
                let expired = await provider.send(webPushMessage("hi"), to: open.target)
                #expect(expired.outcome == .invalidCredentials)
                #expect(expired.reason == "ExpiredToken")
                #expect(harness.emulator.acceptedCount == 0)
            }
        }
    }

    @Test func sizeLimits() async throws {
        try await WebPushProviderHarness.with({ $0.maxMessageSize = 1000 }) { harness in
            let subscription = harness.emulator.subscribe()
            try await harness.withProvider { provider in
                // Over Web Push's 3993-byte plaintext limit: refused before sending.
                let tooLarge = await provider.send(webPushMessage(String(repeating: "a", count: 3994)), to: subscription.target)
                #expect(tooLarge.disposition == .permanentFailure)
                #expect(tooLarge.outcome == .invalidNotificationSize)
                #expect(tooLarge.status == nil)

                // Within it, but over this push service's limit: its 413.
                let refused = await provider.send(webPushMessage(String(repeating: "b", count: 2000)), to: subscription.target)
                #expect(refused.disposition == .permanentFailure)
                #expect(refused.outcome == .invalidNotificationSize)
                #expect(refused.status == 413)

                let fits = await provider.send(webPushMessage(String(repeating: "c", count: 1000 - 103)), to: subscription.target)
                #expect(fits.disposition == .delivered)
                #expect(harness.emulator.notifications(for: subscription).map(\.payload.count) == [897])
            }
        }
    }

    @Test func theLargestPlaintextIsDelivered() async throws {
        try await WebPushProviderHarness.with { harness in
            let subscription = harness.emulator.subscribe()
            try await harness.withProvider { provider in
                let text = String(repeating: "z", count: PayloadLimits.webPushPlaintext)
                #expect(await provider.send(webPushMessage(text), to: subscription.target).disposition == .delivered)
                #expect(harness.emulator.notifications(for: subscription).first?.payload == text)
            }
        }
    }

    @Test func badSubscriptionsAndHeadersAreRefusedLocally() async throws {
        try await WebPushProviderHarness.with { harness in
            let subscription = harness.emulator.subscribe()
            var configuration = try harness.configuration()
            configuration.allowedEndpointHosts = ["127.0.0.1", ".push.example.net"]
            try await harness.withProvider(configuration) { provider in
                func send(_ target: PushTarget, _ notification: PushNotification = webPushMessage("hi")) async -> PushResult {
                    await provider.send(notification, to: target)
                }
                let noKeys = await send(PushTarget(handle: subscription.endpoint))
                #expect(noKeys.outcome == .badChannel)
                #expect(noKeys.disposition == .permanentFailure)

                let badKeys: [WebPushKeys] = [
                    WebPushKeys(p256dh: "AAAA", auth: subscription.auth),
                    WebPushKeys(p256dh: subscription.p256dh, auth: "AAAA"),
                    WebPushKeys(p256dh: "not base64!", auth: subscription.auth),
                    WebPushKeys(p256dh: String(subscription.p256dh.dropLast(2)) + "AA", auth: subscription.auth),
                ]
                for keys in badKeys {
                    #expect(await send(PushTarget(handle: subscription.endpoint, webPushKeys: keys)).outcome == .badChannel)
                }
                for endpoint in [
                    "http://127.0.0.1/push/x", "127.0.0.1/push/x", "", "https://user:pw@127.0.0.1/push/x", "https://evil.example/x",
                ] {
                    let result = await send(PushTarget(handle: endpoint, webPushKeys: subscription.keys))
                    #expect(result.outcome == .badChannel, "\(endpoint)")
                }
                let fcmMessage = PushNotification(body: .fcmMessage(.object([])))
                #expect(await send(subscription.target, fcmMessage).outcome == .invalidNotificationFormat)
                for header in [("TTL", "-5"), ("TTL", "soon"), ("Urgency", "asap"), ("Topic", "no spaces allowed")] {
                    let result = await send(subscription.target, webPushMessage("hi", headers: [header]))
                    #expect(result.outcome == .invalidNotificationFormat, "\(header)")
                }
                #expect(harness.emulator.acceptedCount == 0)
                #expect(await send(subscription.target).disposition == .delivered)
            }
        }
    }

    @Test(arguments: [
        (Fault.throttled.withRetryAfter(7), DeliveryOutcome.throttled, 7.0 as Double?),
        (Fault.unavailable, .pnsUnavailable, nil),
        (Fault.internalError.withRetryAfter(2), .pnsServerError, 2.0),
    ])
    func throttlingAndOutagesAreRetryable(fault: Fault, outcome: DeliveryOutcome, retryAfter: Double?) async throws {
        try await WebPushProviderHarness.with { harness in
            let subscription = harness.emulator.subscribe()
            harness.emulator.injectFaults(fault, count: 1)
            try await harness.withProvider { provider in
                let result = await provider.send(webPushMessage("hi"), to: subscription.target)
                // Throttling is the credential's (a quota of the sender), not the device's.
                let expected: PushResult.Disposition = outcome == .throttled ? .credentialThrottled(retryAfter: retryAfter) : .retryable(retryAfter: retryAfter)
                #expect(result.disposition == expected)
                #expect(result.outcome == outcome)
                #expect(result.status == fault.status)
                #expect(result.reason == fault.reason)
                #expect(await provider.send(webPushMessage("hi"), to: subscription.target).disposition == .delivered)
            }
        }
    }

    @Test func unreachableServiceAndShutDownProviderAreUnreachable() async throws {
        var subscription: WebPushSubscription?
        var configuration: WebPushConfiguration?
        try await WebPushProviderHarness.with { harness in
            subscription = harness.emulator.subscribe()
            configuration = try harness.configuration()
        }
        var short = try #require(configuration)
        short.timeout = .seconds(2)
        let provider = try WebPushProvider(configuration: short, logger: Logger(label: "webpush"))
        let gone = await provider.send(webPushMessage("hi"), to: try #require(subscription).target)
        #expect(gone.disposition == .retryable(retryAfter: nil))
        #expect(gone.outcome == .pnsUnreachable)
        try await provider.shutdown()
        let closed = await provider.send(webPushMessage("hi"), to: try #require(subscription).target)
        #expect(closed.outcome == .pnsUnreachable)
    }

    static let classificationTable: [Expected] = [
        Expected(201, nil, .delivered, .success),
        Expected(200, nil, .delivered, .success),
        Expected(202, nil, .delivered, .success),
        Expected(404, "NoSuchSubscription", .channelExpired, .expiredChannel),
        Expected(410, "Unsubscribed", .channelExpired, .expiredChannel),
        Expected(400, "BadTTL", .permanent, .invalidNotificationFormat),
        Expected(415, nil, .permanent, .invalidNotificationFormat),
        Expected(401, "BadAuthorization", .permanent, .invalidCredentials),
        Expected(403, "BadSignature", .permanent, .invalidCredentials),
        Expected(413, "PayloadTooLarge", .permanent, .invalidNotificationSize),
        Expected(429, nil, .credentialThrottled, .throttled),
        Expected(500, nil, .retryable, .pnsServerError),
        Expected(502, nil, .retryable, .pnsServerError),
        Expected(503, nil, .retryable, .pnsUnavailable),
        Expected(418, nil, .permanent, .unknownError),
    ]

    @Test(arguments: classificationTable)
    func classification(_ expected: Expected) {
        expected.check(WebPushProvider.classify(status: expected.status, reason: expected.reason, retryAfter: 3), retryAfter: 3)
    }

    @Test func endpointOrigins() {
        let cases: [(String, String?)] = [
            ("https://fcm.googleapis.com/fcm/send/abc", "https://fcm.googleapis.com"),
            ("https://Updates.Push.Services.Mozilla.com/wpush/v2/x", "https://updates.push.services.mozilla.com"),
            ("https://127.0.0.1:8443/push/x", "https://127.0.0.1:8443"),
            ("https://[::1]:8443/push/x", "https://[::1]:8443"),
            ("https://web.push.apple.com:443/QGuQ", "https://web.push.apple.com"),
            ("http://fcm.googleapis.com/x", nil),
            ("mailto:a@b", nil),
            ("https:///nohost", nil),
        ]
        for (url, origin) in cases {
            #expect(WebPushEndpoint(url)?.origin == origin, "\(url)")
        }
    }
}
