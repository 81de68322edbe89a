import Foundation
import HeraldCore
import HeraldPush
import Testing

@Suite("Webhook signatures (Standard Webhooks)")
struct WebhookSignatureTests {
    // The example of the Standard Webhooks specification, also computed with Python's hmac.
    static let secret = try! WebhookSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
    static let id = "msg_p5jXN8AQM9LWM0D4loKWxJek"
    static let timestamp = 1_614_265_330
    static let body = #"{"test": 2432232314}"#

    @Test func signsAsTheSpecificationsExample() {
        let header = WebhookSignature.header(id: Self.id, timestamp: Self.timestamp, body: Self.body, secrets: [Self.secret])
        #expect(header == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
        #expect(WebhookSignature.verify(header: header, id: Self.id, timestamp: Self.timestamp, body: Self.body, secret: Self.secret))
    }

    @Test func anyChangeBreaksTheSignature() {
        let header = WebhookSignature.header(id: Self.id, timestamp: Self.timestamp, body: Self.body, secrets: [Self.secret])
        #expect(!WebhookSignature.verify(header: header, id: Self.id + "x", timestamp: Self.timestamp, body: Self.body, secret: Self.secret))
        #expect(!WebhookSignature.verify(header: header, id: Self.id, timestamp: Self.timestamp + 1, body: Self.body, secret: Self.secret))
        #expect(!WebhookSignature.verify(header: header, id: Self.id, timestamp: Self.timestamp, body: Self.body + " ", secret: Self.secret))
        #expect(!WebhookSignature.verify(header: header, id: Self.id, timestamp: Self.timestamp, body: Self.body, secret: .random()))
        #expect(!WebhookSignature.verify(header: "v2," + header.dropFirst(3), id: Self.id, timestamp: Self.timestamp, body: Self.body, secret: Self.secret))
    }

    @Test func aRotationSignsWithBothSecretsNewFirst() {
        let new = WebhookSecret.random()
        let header = WebhookSignature.header(id: Self.id, timestamp: Self.timestamp, body: Self.body, secrets: [new, Self.secret])
        let parts = header.split(separator: " ")
        #expect(parts.count == 2 && parts.allSatisfy { $0.hasPrefix("v1,") })
        #expect(parts[1] == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
        #expect(WebhookSignature.verify(header: header, id: Self.id, timestamp: Self.timestamp, body: Self.body, secret: new))
        #expect(WebhookSignature.verify(header: header, id: Self.id, timestamp: Self.timestamp, body: Self.body, secret: Self.secret))
    }

    @Test func thePosterRefusesHostsAndSchemesItIsNotAllowed() async throws {
        var configuration = WebhookPoster.Configuration()
        configuration.allowedHosts = ["*.example.com"]
        configuration.plainHTTPHosts = ["127.0.0.1"]
        let poster = WebhookPoster(configuration: configuration)
        #expect(poster.refusal(of: URL(string: "https://hooks.example.com/a")!) == nil)
        #expect(poster.refusal(of: URL(string: "https://evil.test/a")!)?.contains("not an allowed webhook host") == true)
        #expect(poster.refusal(of: URL(string: "http://hooks.example.com/a")!)?.contains("plain http is not allowed") == true)
        #expect(poster.refusal(of: URL(string: "http://127.0.0.1:8080/a")!) == nil)
        #expect(poster.refusal(of: URL(string: "ftp://hooks.example.com/a")!) != nil)
        // Refused before anything is sent: no attempt, no status.
        let result = await poster.post(to: URL(string: "https://evil.test/a")!, id: "e", body: "{}", secrets: [.random()], now: Date())
        #expect(result.statusCode == nil && !result.delivered && result.error?.contains("not an allowed") == true)
        try await poster.shutdown()
        try await poster.shutdown()
    }
}
