import AsyncHTTPClient
import Foundation
import HeraldEmulator
import NIOHTTP1
import Testing

/// A WNS emulator with one app, a hand-moved clock and a client, for one test.
struct WNSHarness {
    static let clientID = "ms-app://s-1-15-2-2972962901-2322836549-3722629029-1345238579-3987825745-2155616079-650196962"
    static let clientSecret = "Vex8L9WOFZuj95euaLrvSH7XyoDhLJc7+/x="

    let emulator: WNSEmulator
    let client: HTTPClient
    let clock: TestClock

    static func with(
        httpVersion: HTTPClient.Configuration.HTTPVersion = .automatic,
        configure: (inout WNSEmulator.Configuration) -> Void = { _ in },
        _ body: (WNSHarness) async throws -> Void
    ) async throws {
        let clock = TestClock()
        var configuration = WNSEmulator.Configuration(
            identity: try TestSupport.identity(),
            apps: [.init(clientID: clientID, clientSecret: clientSecret)]
        )
        configuration.now = clock.nowFunction
        configure(&configuration)
        let emulator = try await WNSEmulator.start(configuration: configuration, logger: TestSupport.logger)
        do {
            try await TestSupport.withClient(httpVersion: httpVersion) { client in
                try await body(WNSHarness(emulator: emulator, client: client, clock: clock))
            }
        } catch {
            try? await emulator.shutdown()
            throw error
        }
        try await emulator.shutdown()
    }

    static func form(_ fields: [(String, String)]) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return fields.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed)!)" }.joined(separator: "&")
    }

    static let goodForm: [(String, String)] = [
        ("grant_type", "client_credentials"), ("client_id", clientID), ("client_secret", clientSecret),
        ("scope", "notify.windows.com"),
    ]

    func requestToken(_ fields: [(String, String)] = goodForm) async throws -> TestResponse {
        try await client.send(
            .POST,
            emulator.tokenURI,
            headers: [("content-type", "application/x-www-form-urlencoded")],
            body: Self.form(fields)
        )
    }

    /// A fresh access token from the emulator.
    func accessToken() async throws -> String {
        let response = try await requestToken()
        #expect(response.status == 200)
        return try #require(try response.json()["access_token"] as? String)
    }

    /// POSTs `body` to `channel` as a notification of `type` (no header when `nil`), with the
    /// content type that goes with it unless `contentType` says otherwise.
    func notify(
        _ channel: String,
        type: String? = "wns/toast",
        body: [UInt8],
        contentType: String? = nil,
        headers extra: [(String, String)] = [],
        authorization: String? = nil
    ) async throws -> TestResponse {
        var headers: [(String, String)] = []
        if let authorization {
            headers.append(("authorization", authorization))
        } else {
            headers.append(("authorization", "Bearer " + (try await accessToken())))
        }
        if let type { headers.append(("x-wns-type", type)) }
        let defaultContentType = type?.lowercased() == "wns/raw" ? "application/octet-stream" : "text/xml"
        headers.append(("content-type", contentType ?? defaultContentType))
        headers += extra
        return try await client.send(.POST, channel, headers: headers, bodyBytes: body)
    }

    func notify(
        _ channel: String,
        type: String? = "wns/toast",
        xml: String = WNSHarness.toast,
        contentType: String? = nil,
        headers: [(String, String)] = [],
        authorization: String? = nil
    ) async throws -> TestResponse {
        try await notify(
            channel, type: type, body: Array(xml.utf8), contentType: contentType, headers: headers,
            authorization: authorization)
    }

    static let toast = #"<?xml version="1.0" encoding="utf-8"?><toast><visual><binding template="ToastGeneric"><text>Hello</text></binding></visual></toast>"#
}

extension TestResponse {
    var wnsStatus: String? { headers.first(name: "x-wns-status") }
    var errorDescription: String? { headers.first(name: "x-wns-error-description") }
}
