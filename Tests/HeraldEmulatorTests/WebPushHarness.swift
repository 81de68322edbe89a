import AsyncHTTPClient
import Crypto
import Foundation
import HeraldEmulator
import HeraldTLS
import HeraldWebPushCrypto
import NIOHTTP1
import Testing

/// A Web Push emulator with a hand-moved clock, a client and an application-server key, for
/// one test. Messages are built by hand here (the emulator tests do not use the Web Push client).
struct WebPushHarness {
    let emulator: WebPushEmulator
    let client: HTTPClient
    let clock: TestClock
    /// The application server's VAPID key.
    let vapidKey: P256.Signing.PrivateKey

    static func with(
        httpVersion: HTTPClient.Configuration.HTTPVersion = .automatic,
        configure: (inout WebPushEmulator.Configuration) -> Void = { _ in },
        _ body: (WebPushHarness) async throws -> Void
    ) async throws {
        let clock = TestClock()
        var configuration = WebPushEmulator.Configuration(identity: try TestSupport.identity())
        configuration.now = clock.nowFunction
        configure(&configuration)
        let emulator = try await WebPushEmulator.start(configuration: configuration, logger: TestSupport.logger)
        do {
            try await TestSupport.withClient(httpVersion: httpVersion) { client in
                try await body(WebPushHarness(emulator: emulator, client: client, clock: clock, vapidKey: P256.Signing.PrivateKey()))
            }
        } catch {
            try? await emulator.shutdown()
            throw error
        }
        try await emulator.shutdown()
    }

    /// Good VAPID claims for this emulator, expiring in 12 hours; tests override single fields.
    func claims(_ overrides: [String: Any] = [:]) -> [String: Any] {
        var claims: [String: Any] = [
            "aud": emulator.baseURL, "exp": Int(clock.now.timeIntervalSince1970) + 12 * 3600, "sub": "mailto:ops@example.com",
        ]
        for (key, value) in overrides { claims[key] = value }
        return claims
    }

    /// `vapid t=<jwt>, k=<key>`.
    func authorization(
        claims: [String: Any]? = nil,
        header: [String: Any] = ["typ": "JWT", "alg": "ES256"],
        signedBy signer: P256.Signing.PrivateKey? = nil,
        presenting presented: P256.Signing.PublicKey? = nil
    ) throws -> String {
        let jwt = try TestSupport.es256JWT(header: header, claims: claims ?? self.claims(), key: signer ?? vapidKey)
        let k = TestSupport.base64URL((presented ?? vapidKey.publicKey).x963Representation)
        return "vapid t=\(jwt), k=\(k)"
    }

    /// The message body for `subscription`: `plaintext` encrypted per RFC 8291.
    static func encrypt(_ plaintext: String, for subscription: WebPushSubscription) throws -> [UInt8] {
        let key = try WebPushCrypto.publicKey(try #require(decode(subscription.p256dh)))
        return try WebPushCrypto.encrypt(Array(plaintext.utf8), userAgentPublicKey: key, authSecret: try #require(decode(subscription.auth)))
    }

    static func decode(_ text: String) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64.append("=") }
        return Data(base64Encoded: base64)
    }

    /// POSTs a message to `endpoint`: by default a good one (TTL, VAPID, aes128gcm) carrying `text`.
    func push(
        to subscription: WebPushSubscription,
        text: String = #"{"title":"Hi"}"#,
        body: [UInt8]? = nil,
        headers overrides: [String: String?] = [:],
        endpoint: String? = nil
    ) async throws -> TestResponse {
        var headers: [String: String?] = [
            "ttl": "60",
            "content-encoding": "aes128gcm",
            "content-type": "application/octet-stream",
            "authorization": try authorization(),
        ]
        for (name, value) in overrides { headers[name] = value }
        let list = headers.compactMap { name, value in value.map { (name, $0) } }
        return try await client.send(
            .POST, endpoint ?? subscription.endpoint, headers: list,
            bodyBytes: try body ?? Self.encrypt(text, for: subscription))
    }

    func reason(of response: TestResponse) throws -> String? {
        try response.json()["reason"] as? String
    }
}
