import AsyncHTTPClient
import Crypto
import Foundation
import HeraldEmulator
import NIOHTTP1
import Testing

/// An APNs emulator with one signing key, a hand-moved clock and a client, for one test.
struct APNsHarness {
    static let keyID = "ABC123DEFG"
    static let teamID = "TEAM123456"
    static let topic = "com.example.app"

    let emulator: APNsEmulator
    let client: HTTPClient
    let clock: TestClock
    let key: P256.Signing.PrivateKey
    /// The token the harness sends unless a test says otherwise, issued at the start.
    let defaultJWT: String

    static func with(
        httpVersion: HTTPClient.Configuration.HTTPVersion = .automatic,
        configure: (inout APNsEmulator.Configuration) -> Void = { _ in },
        _ body: (APNsHarness) async throws -> Void
    ) async throws {
        let key = P256.Signing.PrivateKey()
        let clock = TestClock()
        var configuration = APNsEmulator.Configuration(
            identity: try TestSupport.identity(),
            signingKeys: [.init(keyID: keyID, teamID: teamID, publicKey: key.publicKey)]
        )
        configuration.now = clock.nowFunction
        configure(&configuration)
        let emulator = try await APNsEmulator.start(configuration: configuration, logger: TestSupport.logger)
        do {
            try await TestSupport.withClient(httpVersion: httpVersion) { client in
                let defaultJWT = try TestSupport.es256JWT(
                    header: ["alg": "ES256", "kid": keyID],
                    claims: ["iss": teamID, "iat": Int(clock.now.timeIntervalSince1970)],
                    key: key
                )
                try await body(
                    APNsHarness(emulator: emulator, client: client, clock: clock, key: key, defaultJWT: defaultJWT)
                )
            }
        } catch {
            try? await emulator.shutdown()
            throw error
        }
        try await emulator.shutdown()
    }

    /// A provider token issued `age` seconds before the harness clock's now.
    func jwt(
        age: TimeInterval = 0, keyID: String = keyID, teamID: String = teamID, key: P256.Signing.PrivateKey? = nil
    )
        throws -> String
    {
        try TestSupport.es256JWT(
            header: ["alg": "ES256", "kid": keyID],
            claims: ["iss": teamID, "iat": Int(clock.now.timeIntervalSince1970 - age)],
            key: key ?? self.key
        )
    }

    func send(
        token: String,
        payload: String? = #"{"aps":{"alert":"hello"}}"#,
        headers: [(String, String)] = [("apns-topic", topic)],
        authorization: String?? = nil,
        method: HTTPMethod = .POST,
        path: String? = nil
    ) async throws -> TestResponse {
        var all = headers
        switch authorization {
        case .none: all.append(("authorization", "bearer " + defaultJWT))
        case .some(.none): break
        case .some(.some(let value)): all.append(("authorization", value))
        }
        return try await client.send(
            method,
            emulator.baseURL + (path ?? "/3/device/\(token)"),
            headers: all,
            body: payload
        )
    }

    func reason(of response: TestResponse) throws -> String? {
        try response.json()["reason"] as? String
    }
}
