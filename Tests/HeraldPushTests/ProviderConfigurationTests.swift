import Crypto
import Foundation
import HeraldCore
import Logging
import NIOCore
import Testing

@testable import HeraldPush

@Suite struct ProviderConfigurationTests {
    static let p256PEM = P256.Signing.PrivateKey().pemRepresentation

    static func apns(_ change: (inout APNsConfiguration) -> Void = { _ in }) -> APNsConfiguration {
        var configuration = APNsConfiguration(
            environment: .sandbox, teamID: "TEAM000009", keyID: "KEY0000009", privateKeyPEM: p256PEM,
            topic: "com.example.app")
        configuration.connections = 1
        change(&configuration)
        return configuration
    }

    @Test func environmentsHaveApplesEndpoints() {
        #expect(APNsConfiguration.Environment.production.endpoint == "https://api.push.apple.com")
        #expect(APNsConfiguration.Environment.sandbox.endpoint == "https://api.sandbox.push.apple.com")
        #expect(Self.apns().endpoint == "https://api.sandbox.push.apple.com")
        let production = APNsConfiguration(teamID: "T", keyID: "K", privateKeyPEM: "", topic: "t")
        #expect(production.endpoint == "https://api.push.apple.com")
        #expect(production.tokenLifetime == .seconds(3000))
        #expect(production.connections == 4)
        #expect(production.timeout == .seconds(30))
        #expect(production.connectTimeout == .seconds(10))
    }

    /// Connection setup gets `connectTimeout`, capped by the whole request's `timeout` (the
    /// limit every provider's connections are set up with).
    @Test(arguments: [(30, 3, 3), (2, 10, 2), (10, 10, 10)] as [(Int64, Int64, Int64)])
    func connectionSetupIsCappedByTheTimeout(timeout: Int64, connect: Int64, expected: Int64) {
        #expect(TimeAmount.connectionSetup(.seconds(connect), within: .seconds(timeout)) == .seconds(expected))
    }

    @Test(arguments: [19 * 60, 61 * 60, 0] as [Int64])
    func tokenLifetimeOutsideApplesWindowIsRefused(_ seconds: Int64) throws {
        let error = try #require(throws: PushProviderError.self) {
            try APNsProvider(configuration: Self.apns { $0.tokenLifetime = .seconds(seconds) }, logger: Logger(label: "t"))
        }
        #expect(error.code == .invalidConfiguration)
    }

    @Test(arguments: [20 * 60, 60 * 60] as [Int64])
    func tokenLifetimeBoundsAreAccepted(_ seconds: Int64) async throws {
        let provider = try APNsProvider(
            configuration: Self.apns { $0.tokenLifetime = .seconds(seconds) }, logger: Logger(label: "t"))
        try await provider.shutdown()
    }

    @Test func badValuesAreRefused() throws {
        #expect(throws: PushProviderError.self) {
            try APNsProvider(configuration: Self.apns { $0.connections = 0 }, logger: Logger(label: "t"))
        }
        #expect(throws: PushProviderError.self) {
            try APNsProvider(configuration: Self.apns { $0.endpoint = "not a url" }, logger: Logger(label: "t"))
        }
        #expect(throws: PushProviderError.self) {
            try APNsProvider(configuration: Self.apns { $0.teamID = "" }, logger: Logger(label: "t"))
        }
    }

    @Test func unreadableKeyIsRefusedWithoutEchoingIt() throws {
        let pem = "-----BEGIN PRIVATE KEY-----\nSECRETSECRET\n-----END PRIVATE KEY-----"
        let error = try #require(throws: PushProviderError.self) {
            try APNsProvider(configuration: Self.apns { $0.privateKeyPEM = pem }, logger: Logger(label: "t"))
        }
        #expect(error.code == .invalidPrivateKey)
        #expect(error.message.contains("KEY0000009"))
        #expect(!error.description.contains("SECRET"))

        let account = FCMServiceAccount(projectID: "p", clientEmail: "a@b.c", privateKey: pem)
        let fcmError = try #require(throws: PushProviderError.self) {
            try FCMProvider(configuration: FCMConfiguration(serviceAccount: account), logger: Logger(label: "t"))
        }
        #expect(fcmError.code == .invalidPrivateKey)
        #expect(!fcmError.description.contains("SECRET"))
    }

    @Test func localRejectionsNeedNoNetwork() async throws {
        let provider = try APNsProvider(configuration: Self.apns { $0.endpoint = "https://127.0.0.1:1" }, logger: Logger(label: "t"))
        let body = PushNotification(body: .bytes(ByteBuffer(string: "{}")))
        let notHex = await provider.send(body, to: PushTarget(handle: "zz not hex"))
        #expect(notHex.disposition == .permanentFailure && notHex.outcome == .badChannel)
        let empty = await provider.send(body, to: PushTarget(handle: ""))
        #expect(empty.outcome == .badChannel)
        let wrongBody = await provider.send(PushNotification(body: .fcmMessage(.object([]))), to: PushTarget(handle: "ab"))
        #expect(wrongBody.outcome == .invalidNotificationFormat)
        try await provider.shutdown()
        let afterShutdown = await provider.send(body, to: PushTarget(handle: "abcd"))
        #expect(afterShutdown.outcome == .pnsUnreachable)
        try await provider.shutdown()  // idempotent
    }

    @Test func unreachableEndpointIsRetryable() async throws {
        // A port that nothing listens on: bind-free choice is port 1 on loopback.
        let provider = try APNsProvider(
            configuration: Self.apns {
                $0.endpoint = "https://127.0.0.1:1"
                $0.timeout = .seconds(2)
            },
            logger: Logger(label: "t"))
        let result = await provider.send(PushNotification(body: .bytes(ByteBuffer(string: "{}"))), to: PushTarget(handle: "abcd"))
        #expect(result.disposition == .retryable(retryAfter: nil))
        #expect(result.outcome == .pnsUnreachable)
        #expect(result.status == nil)
        try await provider.shutdown()
    }

    @Test func fcmRequestBodyAddsTheToken() throws {
        let message = JSONValue.object([
            ("data", .object([("id", .string("42"))])),
            ("token", .string("stale")),
        ])
        let buffer = try FCMProvider.requestBody(.fcmMessage(message), token: "device-token_1:a")
        let decoded = try JSONDecoder().decode(JSONValue.self, from: Data(buffer.readableBytesView))
        #expect(decoded["message"]?["token"] == .string("device-token_1:a"))
        #expect(decoded["message"]?["data"]?["id"] == .string("42"))
        if case .object(let fields)? = decoded["message"] { #expect(fields.count == 2) }

        let fromBytes = try FCMProvider.requestBody(
            .bytes(ByteBuffer(string: #"{"notification":{"title":"Hi \"you\""}}"#)), token: "t")
        let decoded2 = try JSONDecoder().decode(JSONValue.self, from: Data(fromBytes.readableBytesView))
        #expect(decoded2["message"]?["notification"]?["title"] == .string("Hi \"you\""))
        #expect(decoded2["message"]?["token"] == .string("t"))

        #expect(throws: (any Error).self) { try FCMProvider.requestBody(.bytes(ByteBuffer(string: "[1]")), token: "t") }
        #expect(throws: (any Error).self) { try FCMProvider.requestBody(.bytes(ByteBuffer(string: "nope")), token: "t") }
        #expect(throws: (any Error).self) { try FCMProvider.requestBody(.fcmMessage(.string("x")), token: "t") }
    }

    @Test func formEncodingEscapesReservedCharacters() {
        #expect(
            FCMAccessTokenSource.formURLEncoded([("grant_type", FCMAccessTokenSource.grantType), ("assertion", "a.b-c_d")])
                == "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=a.b-c_d")
    }
}
