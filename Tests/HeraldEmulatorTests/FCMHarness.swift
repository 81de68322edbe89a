import AsyncHTTPClient
import Foundation
import HeraldEmulator
import NIOHTTP1
import Testing
import _CryptoExtras

/// An FCM emulator with one service account, a hand-moved clock and a client, for one test.
struct FCMHarness {
    static let projectID = "herald-test"
    static let clientEmail = "pusher@herald-test.iam.gserviceaccount.com"
    static let scope = "https://www.googleapis.com/auth/firebase.messaging"

    let emulator: FCMEmulator
    let client: HTTPClient
    let clock: TestClock

    static func with(
        configure: (inout FCMEmulator.Configuration) -> Void = { _ in },
        _ body: (FCMHarness) async throws -> Void
    ) async throws {
        let clock = TestClock()
        var configuration = FCMEmulator.Configuration(
            identity: try TestSupport.identity(),
            projectID: projectID,
            serviceAccounts: [.init(clientEmail: clientEmail, publicKey: TestSupport.rsaKey.publicKey)]
        )
        configuration.now = clock.nowFunction
        configure(&configuration)
        let emulator = try await FCMEmulator.start(configuration: configuration, logger: TestSupport.logger)
        do {
            try await TestSupport.withClient { client in
                try await body(FCMHarness(emulator: emulator, client: client, clock: clock))
            }
        } catch {
            try? await emulator.shutdown()
            throw error
        }
        try await emulator.shutdown()
    }

    /// Claims of a good assertion, issued now; tests override single fields.
    func claims(_ overrides: [String: Any] = [:]) -> [String: Any] {
        let now = Int(clock.now.timeIntervalSince1970)
        var claims: [String: Any] = [
            "iss": Self.clientEmail, "scope": Self.scope, "aud": emulator.tokenURI, "iat": now, "exp": now + 3600,
        ]
        for (key, value) in overrides { claims[key] = value }
        return claims
    }

    func assertion(
        header: [String: Any] = ["alg": "RS256", "typ": "JWT", "kid": "k1"],
        claims: [String: Any]? = nil,
        key: _RSA.Signing.PrivateKey = TestSupport.rsaKey
    ) throws -> String {
        try TestSupport.rs256JWT(header: header, claims: claims ?? self.claims(), key: key)
    }

    func requestToken(form: String) async throws -> TestResponse {
        try await client.send(
            .POST,
            emulator.tokenURI,
            headers: [("content-type", "application/x-www-form-urlencoded")],
            body: form
        )
    }

    static func form(assertion: String, grantType: String = "urn:ietf:params:oauth:grant-type:jwt-bearer") -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let encode = { (value: String) in value.addingPercentEncoding(withAllowedCharacters: allowed)! }
        return "grant_type=\(encode(grantType))&assertion=\(encode(assertion))"
    }

    /// A fresh access token from the emulator.
    func accessToken() async throws -> String {
        let response = try await requestToken(form: Self.form(assertion: try assertion()))
        #expect(response.status == 200)
        return try #require(try response.json()["access_token"] as? String)
    }

    func sendMessage(
        _ message: [String: Any],
        project: String = projectID,
        accessToken: String? = nil
    ) async throws -> TestResponse {
        let token: String
        if let accessToken {
            token = accessToken
        } else {
            token = try await self.accessToken()
        }
        let body = try JSONSerialization.data(withJSONObject: ["message": message])
        return try await sendRaw(String(decoding: body, as: UTF8.self), project: project, authorization: "Bearer " + token)
    }

    func sendRaw(_ body: String?, project: String = projectID, authorization: String?) async throws -> TestResponse {
        var headers = [("content-type", "application/json")]
        if let authorization { headers.append(("authorization", authorization)) }
        return try await client.send(
            .POST,
            emulator.baseURL + "/v1/projects/\(project)/messages:send",
            headers: headers,
            body: body
        )
    }
}

extension TestResponse {
    /// `error.status` and `error.details[0].errorCode` of a Google error.
    func googleError() throws -> (code: Int?, status: String?, errorCode: String?) {
        let error = try #require(try json()["error"] as? [String: Any])
        let details = error["details"] as? [[String: Any]]
        if let detail = details?.first {
            #expect(detail["@type"] as? String == "type.googleapis.com/google.firebase.fcm.v1.FcmError")
        }
        return (error["code"] as? Int, error["status"] as? String, details?.first?["errorCode"] as? String)
    }
}
