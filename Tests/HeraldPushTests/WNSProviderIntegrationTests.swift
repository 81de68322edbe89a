import Foundation
import HeraldCore
import HeraldEmulator
import HeraldTLS
import Logging
import NIOCore
import Testing

@testable import HeraldPush

/// A WNS emulator on 127.0.0.1 port 0 with one app, and clocks for it and for the provider.
struct WNSHarness {
    static let packageSID = "ms-app://s-1-15-2-2972962901-2322836549-3722629029-1345238579-3987825745-2155616079-650196962"
    /// '+', '/' and '=' must survive form encoding.
    static let clientSecret = "Vex8L9WOFZuj95euaLrvSH7XyoDhLJc7+/x="

    let authority: CertificateAuthority
    let emulator: WNSEmulator
    let emulatorClock: TestClock
    let clientClock: TestClock

    static func with(
        configure: (inout WNSEmulator.Configuration) -> Void = { _ in },
        _ body: (WNSHarness) async throws -> Void
    ) async throws {
        let authority = try CertificateAuthority.makeEphemeral()
        let start = Date()
        let emulatorClock = TestClock(start)
        var configuration = WNSEmulator.Configuration(
            identity: try authority.issueServerIdentity(hosts: ["127.0.0.1"]),
            apps: [.init(clientID: packageSID, clientSecret: clientSecret)]
        )
        configuration.now = emulatorClock.function
        configure(&configuration)
        let emulator = try await WNSEmulator.start(configuration: configuration, logger: Logger(label: "wns-emulator"))
        let harness = WNSHarness(
            authority: authority, emulator: emulator, emulatorClock: emulatorClock, clientClock: TestClock(start))
        do {
            try await body(harness)
        } catch {
            try await emulator.shutdown()
            throw error
        }
        try await emulator.shutdown()
    }

    func configuration(clientID: String = packageSID, clientSecret: String = clientSecret) throws -> WNSConfiguration {
        var configuration = WNSConfiguration(packageSID: clientID, clientSecret: clientSecret)
        configuration.tokenURI = emulator.tokenURI
        configuration.trustRoots = [try authority.sslCertificate]
        // The emulator's channels are on its own host.
        configuration.allowedChannelHosts = ["127.0.0.1"]
        configuration.timeout = .seconds(20)
        // Not under test: a busy machine may take longer than the default to set up TLS.
        configuration.connectTimeout = .seconds(20)
        configuration.now = clientClock.function
        return configuration
    }

    func withProvider(_ configuration: WNSConfiguration? = nil, _ body: (WNSProvider) async throws -> Void) async throws {
        let provider = try WNSProvider(configuration: configuration ?? (try self.configuration()), logger: Logger(label: "wns"))
        do {
            try await body(provider)
        } catch {
            try await provider.shutdown()
            throw error
        }
        try await provider.shutdown()
    }

    /// Moves both clocks.
    func advance(minutes: Double) {
        emulatorClock.advance(minutes: minutes)
        clientClock.advance(minutes: minutes)
    }
}

let toastXML =
    #"<toast launch="{&quot;id&quot;:&quot;42&quot;}"><visual><binding template="ToastGeneric"><text>From Ann</text><text>Hi &amp; bye</text></binding></visual></toast>"#

func wnsNotification(_ body: String, type: String? = nil, headers: [(String, String)] = []) -> PushNotification {
    var all = headers.map { (name: $0.0, value: $0.1) }
    if let type { all.insert((name: "X-WNS-Type", value: type), at: 0) }
    return PushNotification(body: .bytes(ByteBuffer(string: body)), headers: all)
}

@Suite(.timeLimit(.minutes(2))) struct WNSProviderIntegrationTests {
    @Test func toastIsTheDefaultAndLandsInTheInbox() async throws {
        try await WNSHarness.with { harness in
            let channel = harness.emulator.registerChannel()
            #expect(channel.hasPrefix(harness.emulator.baseURL + "/w/?token="))
            try await harness.withProvider { provider in
                #expect(provider.platform == .wns)
                // The hub's rendered toast carries Content-Type as a header too; the provider sets its own.
                let notification = wnsNotification(toastXML, headers: [("Content-Type", "text/xml")])
                #expect(await provider.send(notification, to: PushTarget(handle: channel)) == .delivered)
                let inbox = harness.emulator.notifications(for: channel)
                try #require(inbox.count == 1)
                #expect(inbox[0].token == channel)
                #expect(inbox[0].payload == toastXML)
                #expect(inbox[0].headers["x-wns-type"] == "wns/toast")
                #expect(inbox[0].headers["content-type"] == "text/xml")
                #expect(inbox[0].id.count == 16)
            }
        }
    }

    @Test(arguments: [
        ("wns/tile", #"<tile><visual><binding template="TileMedium"><text>7 new</text></binding></visual></tile>"#, "text/xml"),
        ("wns/badge", #"<badge value="7"/>"#, "text/xml"),
        ("WNS/Toast", toastXML, "text/xml"),
    ])
    func xmlTypesAreSentWithTheirType(_ type: String, _ body: String, _ contentType: String) async throws {
        try await WNSHarness.with { harness in
            let channel = harness.emulator.registerChannel()
            try await harness.withProvider { provider in
                let notification = wnsNotification(
                    body, type: type,
                    headers: [
                        ("x-wns-ttl", "3600"), ("X-WNS-Tag", "inbox"), ("X-WNS-Group", "mail"),
                        ("X-WNS-Cache-Policy", "cache"), ("X-WNS-RequestForStatus", "true"),
                        ("X-WNS-Unknown", "not passed on"),
                    ])
                #expect(await provider.send(notification, to: PushTarget(handle: channel)) == .delivered)
                let received = try #require(harness.emulator.notifications(for: channel).first)
                #expect(received.payload == body)
                #expect(received.headers["x-wns-type"] == type.lowercased())
                #expect(received.headers["content-type"] == contentType)
                #expect(received.headers["x-wns-ttl"] == "3600")
                #expect(received.headers["x-wns-tag"] == "inbox")
                #expect(received.headers["x-wns-group"] == "mail")
                #expect(received.headers["x-wns-cache-policy"] == "cache")
                #expect(received.headers["x-wns-requestforstatus"] == "true")
                #expect(received.headers["x-wns-unknown"] == nil)
            }
        }
    }

    @Test func rawIsSentAsOctetsUntouched() async throws {
        try await WNSHarness.with { harness in
            let channel = harness.emulator.registerChannel()
            try await harness.withProvider { provider in
                let bytes: [UInt8] = [0x00, 0xFF, 0x7B, 0x22, 0x69, 0x64, 0x22, 0x3A, 0x34, 0x32, 0x7D, 0x0A]
                let notification = PushNotification(
                    body: .bytes(ByteBuffer(bytes: bytes)), headers: [(name: "X-WNS-Type", value: "wns/raw")])
                #expect(await provider.send(notification, to: PushTarget(handle: channel)) == .delivered)
                let received = try #require(harness.emulator.notifications(for: channel).first)
                #expect(received.headers["content-type"] == "application/octet-stream")
                #expect(received.headers["x-wns-type"] == "wns/raw")
                #expect(Data(base64Encoded: received.payload) == Data(bytes))
            }
        }
    }

    @Test func manySendsOneTokenExchange() async throws {
        try await WNSHarness.with { harness in
            let channels = (0..<5).map { _ in harness.emulator.registerChannel() }
            try await harness.withProvider { provider in
                let notification = wnsNotification(toastXML)
                let results = await withTaskGroup(of: PushResult.self) { group in
                    for i in 0..<200 {
                        group.addTask { await provider.send(notification, to: PushTarget(handle: channels[i % 5])) }
                    }
                    return await group.reduce(into: [PushResult]()) { $0.append($1) }
                }
                #expect(results.allSatisfy { $0 == .delivered })
                #expect(harness.emulator.acceptedCount == 200)
                #expect(provider.tokenExchangeCount == 1)
                #expect(harness.emulator.tokenRequestCount == 1)

                // One after the other, too: the cached token is reused.
                for i in 0..<10 {
                    #expect(await provider.send(notification, to: PushTarget(handle: channels[i % 5])) == .delivered)
                }
                #expect(provider.tokenExchangeCount == 1)

                // Reused until 5 minutes before expiry (86400 s), then replaced.
                harness.advance(minutes: 24 * 60 - 6)
                #expect(await provider.send(notification, to: PushTarget(handle: channels[0])) == .delivered)
                #expect(provider.tokenExchangeCount == 1)
                harness.advance(minutes: 1)
                #expect(await provider.send(notification, to: PushTarget(handle: channels[0])) == .delivered)
                #expect(provider.tokenExchangeCount == 2)
                #expect(harness.emulator.tokenRequestCount == 2)
            }
        }
    }

    @Test func expiredAccessTokenIsRefreshedAndTheSendRepeatedOnce() async throws {
        try await WNSHarness.with { harness in
            let channel = harness.emulator.registerChannel()
            try await harness.withProvider { provider in
                #expect(await provider.send(wnsNotification(toastXML), to: PushTarget(handle: channel)) == .delivered)
                // WNS's clock says the access token expired; ours says it is 12 hours old.
                harness.emulatorClock.advance(minutes: 25 * 60)
                harness.clientClock.advance(minutes: 12 * 60)
                #expect(await provider.send(wnsNotification(toastXML), to: PushTarget(handle: channel)) == .delivered)
                #expect(provider.tokenExchangeCount == 2)
                #expect(harness.emulator.notifications(for: channel).count == 2)
            }
        }
    }

    @Test func aSecond401IsInvalidCredentials() async throws {
        // Every token the emulator issues is already expired: refresh once, then give up.
        try await WNSHarness.with(configure: { $0.accessTokenLifetime = 0 }) { harness in
            let channel = harness.emulator.registerChannel()
            try await harness.withProvider { provider in
                let result = await provider.send(wnsNotification(toastXML), to: PushTarget(handle: channel))
                #expect(result.disposition == .permanentFailure)
                #expect(result.outcome == .invalidCredentials)
                #expect(result.status == 401)
                #expect(result.reason == "Token expired")
                #expect(provider.tokenExchangeCount == 2)
                #expect(harness.emulator.acceptedCount == 0)
            }
        }
    }

    @Test func expiredAndUnknownChannelsAreExpiredChannels() async throws {
        try await WNSHarness.with { harness in
            let channel = harness.emulator.registerChannel()
            harness.emulator.expire(channel: channel)
            try await harness.withProvider { provider in
                let gone = await provider.send(wnsNotification(toastXML), to: PushTarget(handle: channel))
                #expect(gone.disposition == .channelExpired)
                #expect(gone.outcome == .expiredChannel)
                #expect(gone.status == 410)

                let unknown = await provider.send(
                    wnsNotification(toastXML), to: PushTarget(handle: harness.emulator.baseURL + "/w/?token=nobody"))
                #expect(unknown.disposition == .channelExpired)
                #expect(unknown.status == 404)
            }
        }
    }

    @Test(arguments: [
        (Fault.throttled.withRetryAfter(30), 406, DeliveryOutcome.throttled, 30.0 as Double?, "channelthrottled"),
        (Fault.unavailable.withRetryAfter(3), 503, .pnsUnavailable, 3.0, "ServiceUnavailable"),
        (Fault.internalError, 500, .pnsServerError, nil, "InternalServerError"),
    ])
    func faultsAreRetryable(
        _ fault: Fault, status: Int, outcome: DeliveryOutcome, retryAfter: Double?, reason: String
    )
        async throws
    {
        try await WNSHarness.with { harness in
            let channel = harness.emulator.registerChannel()
            try await harness.withProvider { provider in
                harness.emulator.injectFaults(fault, count: 1)
                let result = await provider.send(wnsNotification(toastXML), to: PushTarget(handle: channel))
                // Throttling is the credential's (a quota of the sender), not the device's.
                let expected: PushResult.Disposition = outcome == .throttled ? .credentialThrottled(retryAfter: retryAfter) : .retryable(retryAfter: retryAfter)
                #expect(result.disposition == expected)
                #expect(result.outcome == outcome)
                #expect(result.status == status)
                #expect(result.reason == reason)
                #expect(await provider.send(wnsNotification(toastXML), to: PushTarget(handle: channel)) == .delivered)
            }
        }
    }

    @Test func oversizeIsRefusedWithoutSending() async throws {
        try await WNSHarness.with { harness in
            let channel = harness.emulator.registerChannel()
            try await harness.withProvider { provider in
                let fits = wnsNotification(String(repeating: "x", count: 5000), type: "wns/raw")
                #expect(await provider.send(fits, to: PushTarget(handle: channel)) == .delivered)

                let tooLarge = wnsNotification(String(repeating: "x", count: 5001), type: "wns/raw")
                let result = await provider.send(tooLarge, to: PushTarget(handle: channel))
                #expect(result.disposition == .permanentFailure)
                #expect(result.outcome == .invalidNotificationSize)
                #expect(result.status == nil)
                #expect(harness.emulator.acceptedCount == 1)
                #expect(harness.emulator.notifications(for: channel).count == 1)
            }
        }
    }

    @Test func badInputIsRefusedLocally() async throws {
        try await WNSHarness.with { harness in
            let channel = harness.emulator.registerChannel()
            try await harness.withProvider { provider in
                let unknownType = await provider.send(wnsNotification("x", type: "wns/notification"), to: PushTarget(handle: channel))
                #expect(unknownType.disposition == .permanentFailure)
                #expect(unknownType.outcome == .invalidNotificationFormat)
                #expect(unknownType.status == nil)

                let fcmBody = PushNotification(body: .fcmMessage(.object([("data", .object([]))])))
                #expect(await provider.send(fcmBody, to: PushTarget(handle: channel)).outcome == .invalidNotificationFormat)

                let injected = wnsNotification(toastXML, headers: [("X-WNS-Tag", "a\r\nX-Evil: 1")])
                #expect(await provider.send(injected, to: PushTarget(handle: channel)).outcome == .invalidNotificationFormat)

                for handle in ["http://127.0.0.1/w/?token=x", "not a url", "", "https:///w"] {
                    let result = await provider.send(wnsNotification(toastXML), to: PushTarget(handle: handle))
                    #expect(result.disposition == .permanentFailure, "\(handle)")
                    #expect(result.outcome == .badChannel, "\(handle)")
                }
                #expect(provider.tokenExchangeCount == 0)
                #expect(harness.emulator.acceptedCount == 0)
            }
        }
    }

    @Test func malformedXMLIsAPermanentFormatError() async throws {
        try await WNSHarness.with { harness in
            let channel = harness.emulator.registerChannel()
            try await harness.withProvider { provider in
                let result = await provider.send(wnsNotification("<toast><visual></toast>"), to: PushTarget(handle: channel))
                #expect(result.disposition == .permanentFailure)
                #expect(result.outcome == .invalidNotificationFormat)
                #expect(result.status == 400)
                #expect(result.reason?.isEmpty == false)

                let tileAsToast = await provider.send(
                    wnsNotification("<tile><visual/></tile>", type: "wns/toast"), to: PushTarget(handle: channel))
                #expect(tileAsToast.status == 400)
            }
        }
    }

    @Test func droppedWhileOfflineIsCountedAsDropped() async throws {
        try await WNSHarness.with { harness in
            let channel = harness.emulator.registerChannel()
            harness.emulator.setConnected(false, channel: channel)
            try await harness.withProvider { provider in
                let result = await provider.send(wnsNotification(toastXML), to: PushTarget(handle: channel))
                #expect(result.disposition == .permanentFailure)
                #expect(result.outcome == .dropped)
                #expect(result.status == 200)
                #expect(result.reason == "dropped")

                // A tile is cached for the device and counts as delivered.
                let tile = wnsNotification("<tile><visual/></tile>", type: "wns/tile")
                #expect(await provider.send(tile, to: PushTarget(handle: channel)) == .delivered)
                #expect(harness.emulator.notifications(for: channel).count == 1)
            }
        }
    }

    @Test func refusedCredentialsAreInvalidCredentialsWithoutFloodingTheTokenEndpoint() async throws {
        try await WNSHarness.with { harness in
            let channel = harness.emulator.registerChannel()
            let configuration = try harness.configuration(clientSecret: "wrong")
            try await harness.withProvider(configuration) { provider in
                let results = await withTaskGroup(of: PushResult.self) { group in
                    for _ in 0..<20 {
                        group.addTask { await provider.send(wnsNotification(toastXML), to: PushTarget(handle: channel)) }
                    }
                    return await group.reduce(into: [PushResult]()) { $0.append($1) }
                }
                for result in results {
                    #expect(result.disposition == .permanentFailure)
                    #expect(result.outcome == .invalidCredentials)
                    #expect(result.reason == "invalid_client")
                }
                #expect(provider.tokenExchangeCount == 1)
                #expect(harness.emulator.tokenRequestCount == 1)
                #expect(harness.emulator.acceptedCount == 0)
            }
        }
    }

    @Test func anotherAppsChannelIsForbidden() async throws {
        let other = WNSEmulator.App(clientID: "ms-app://s-1-15-2-1-2-3-4-5-6-7", clientSecret: "other")
        try await WNSHarness.with(configure: { $0.apps.append(other) }) { harness in
            let channel = harness.emulator.registerChannel(clientID: other.clientID)
            try await harness.withProvider { provider in
                let result = await provider.send(wnsNotification(toastXML), to: PushTarget(handle: channel))
                #expect(result.disposition == .permanentFailure)
                #expect(result.outcome == .invalidCredentials)
                #expect(result.status == 403)
            }
            try await harness.withProvider(try harness.configuration(clientID: other.clientID, clientSecret: "other")) { provider in
                #expect(await provider.send(wnsNotification(toastXML), to: PushTarget(handle: channel)) == .delivered)
            }
        }
    }

    @Test func unreachableChannelHostIsRetryable() async throws {
        try await WNSHarness.with { harness in
            // A port that was just closed: connections are refused.
            let closed = try await WNSEmulator.start(
                configuration: .init(identity: try harness.authority.issueServerIdentity(hosts: ["127.0.0.1"]), apps: []),
                logger: Logger(label: "closed"))
            let deadChannel = closed.baseURL + "/w/?token=abc"
            try await closed.shutdown()
            var configuration = try harness.configuration()
            configuration.timeout = .seconds(2)
            try await harness.withProvider(configuration) { provider in
                let result = await provider.send(wnsNotification(toastXML), to: PushTarget(handle: deadChannel))
                #expect(result.disposition == .retryable(retryAfter: nil))
                #expect(result.outcome == .pnsUnreachable)
                #expect(result.status == nil)
                #expect(provider.tokenExchangeCount == 1)
            }
        }
    }

    @Test func emulatorCredentialsWork() async throws {
        let credentials = try EmulatorCredentials.makeEphemeral()
        #expect(credentials.wnsPackageSID.hasPrefix("ms-app://s-1-15-2-"))
        #expect(credentials.wnsClientSecret.count == 32)
        let authority = try CertificateAuthority.makeEphemeral()
        let emulator = try await WNSEmulator.start(
            configuration: .init(
                identity: try authority.issueServerIdentity(hosts: ["127.0.0.1"]), apps: [credentials.wnsApp]),
            logger: Logger(label: "wns-emulator"))
        do {
            var configuration = WNSConfiguration(packageSID: credentials.wnsPackageSID, clientSecret: credentials.wnsClientSecret)
            configuration.tokenURI = emulator.tokenURI
            configuration.trustRoots = [try authority.sslCertificate]
            configuration.allowedChannelHosts = ["127.0.0.1"]
            configuration.connectTimeout = .seconds(30)
            let provider = try WNSProvider(configuration: configuration, logger: Logger(label: "wns"))
            let channel = emulator.registerChannel()
            #expect(await provider.send(wnsNotification(toastXML), to: PushTarget(handle: channel)) == .delivered)
            try await provider.shutdown()
            #expect(await provider.send(wnsNotification(toastXML), to: PushTarget(handle: channel)).outcome == .pnsUnreachable)
        } catch {
            try await emulator.shutdown()
            throw error
        }
        try await emulator.shutdown()
    }
}

@Suite struct WNSConfigurationTests {
    @Test func defaultsAreMicrosofts() {
        let configuration = WNSConfiguration(packageSID: "ms-app://s-1-15-2-1", clientSecret: "s3cr3t")
        #expect(configuration.tokenURI == "https://login.live.com/accesstoken.srf")
        #expect(configuration.scope == "notify.windows.com")
        #expect(configuration.clientID == "ms-app://s-1-15-2-1")
        #expect(configuration.timeout == .seconds(30))
        #expect(configuration.connections == 2)
        #expect(WNSConfiguration(clientID: "a", clientSecret: "b").clientID == "a")
    }

    @Test func printingNeverShowsTheSecret() {
        let configuration = WNSConfiguration(packageSID: "ms-app://s-1-15-2-1", clientSecret: "s3cr3t-value")
        for text in [
            "\(configuration)", String(reflecting: configuration),
            {
                var out = ""
                dump(configuration, to: &out)
                return out
            }(),
        ] {
            #expect(!text.contains("s3cr3t-value"))
            #expect(text.contains("ms-app://s-1-15-2-1"))
        }
    }

    enum InvalidField: String, CaseIterable, CustomTestStringConvertible {
        case emptySecret, emptyClientID, emptyScope, noConnections, zeroTimeout, tokenURIWithoutScheme
        var testDescription: String { rawValue }

        func apply(to configuration: inout WNSConfiguration) {
            switch self {
            case .emptySecret: configuration.clientSecret = ""
            case .emptyClientID: configuration.clientID = ""
            case .emptyScope: configuration.scope = ""
            case .noConnections: configuration.connections = 0
            case .zeroTimeout: configuration.timeout = .zero
            case .tokenURIWithoutScheme: configuration.tokenURI = "login.live.com/accesstoken.srf"
            }
        }
    }

    @Test(arguments: InvalidField.allCases)
    func invalidConfigurationIsRefused(_ field: InvalidField) throws {
        var configuration = WNSConfiguration(packageSID: "ms-app://s-1-15-2-1", clientSecret: "s3cr3t")
        field.apply(to: &configuration)
        let error = try #require(throws: PushProviderError.self) {
            try WNSProvider(configuration: configuration, logger: Logger(label: "t"))
        }
        #expect(error.code == .invalidConfiguration)
        #expect(!error.description.contains("s3cr3t"))
    }

    @Test func tokenRequestFormEscapesTheCredentials() {
        let fields = WNSAccessTokenRequest.formFields(
            clientID: "ms-app://s-1-15-2-1", clientSecret: "a+b/c= &x", scope: "notify.windows.com")
        #expect(
            WNSAccessTokenSource.formURLEncoded(fields)
                == "grant_type=client_credentials&client_id=ms-app%3A%2F%2Fs-1-15-2-1&client_secret=a%2Bb%2Fc%3D%20%26x&scope=notify.windows.com"
        )
    }

    @Test func notificationTypes() {
        #expect(WNSNotificationType(header: " WNS/Raw ") == .raw)
        #expect(WNSNotificationType.raw.contentType == "application/octet-stream")
        #expect(WNSNotificationType.toast.contentType == "text/xml")
        #expect(WNSNotificationType.allKnown.allSatisfy { $0.isKnown })
        #expect(!WNSNotificationType(header: "wns/notification").isKnown)
    }
}
