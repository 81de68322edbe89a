import Foundation
import HeraldCore
import Testing

@Suite("Webhook model: event types, secrets, URLs, bodies, retries")
struct WebhookModelTests {
    @Test func eventTypesAreParsedAndUnknownOnesNamed() throws {
        #expect(try WebhookEventType.parseList("notification.completed, registration.expired") == [.notificationCompleted, .registrationExpired])
        #expect(try WebhookEventType.parseList("*") == Set(WebhookEventType.subscribable))
        #expect(throws: HeraldError.self) { try WebhookEventType.parseList("") }
        do {
            _ = try WebhookEventType.parse(["notification.completed", "webhook.test"])
            Issue.record("the test type is not subscribable")
        } catch {
            #expect(error.code == .badRequest && error.message.contains("'webhook.test'"))
        }
    }

    @Test func secretsAreCheckedAndNeverPrinted() throws {
        let secret = WebhookSecret.random()
        #expect(secret.text.hasPrefix("whsec_") && secret.key.count == 32)
        #expect(try WebhookSecret(secret.text) == secret)
        #expect(!"\(secret)".contains(secret.text.dropFirst(6)))
        let endpoint = WebhookEndpoint(
            id: "we_1", url: URL(string: "https://a.example/x")!, events: [.notificationCompleted], secret: secret, createdAt: Date()
        )
        #expect(!"\(endpoint)".contains(secret.text.dropFirst(6)) && !String(reflecting: endpoint).contains(secret.text.dropFirst(6)))
        for bad in ["", "whsec_", "secret", "whsec_" + Data(count: 8).base64EncodedString(), "whsec_!!!"] {
            #expect(throws: HeraldError.self) { try WebhookSecret(bad) }
        }
    }

    @Test func urlsAreChecked() throws {
        #expect(try WebhookEndpoint.validURL("https://api.example.com/hooks?x=1").host == "api.example.com")
        for (bad, message) in [
            ("ftp://a.example/x", "https"), ("https:///x", "names a host"), ("https://u:p@a.example/x", "no user or password"),
            ("https://a.example/x#f", "no fragment"), ("not a url at all", "not a URL"),
        ] {
            do {
                _ = try WebhookEndpoint.validURL(bad)
                Issue.record("\(bad) was accepted")
            } catch {
                #expect(error.code == .badRequest && error.message.contains(message), "\(bad): \(error.message)")
            }
        }
    }

    @Test func theBodyIsTheStandardEnvelope() throws {
        let event = WebhookEvent(
            id: "evt_1", type: .registrationExpired, timestamp: Date(timeIntervalSince1970: 1_700_000_000.25),
            data: .object([("registrationId", .string("r/1")), ("platform", .string("apns"))])
        )
        #expect(
            event.body
                == #"{"data":{"platform":"apns","registrationId":"r/1"},"timestamp":"2023-11-14T22:13:20.250Z","type":"registration.expired"}"#
        )
    }

    @Test func retriesBackOffExponentiallyUntilTheWindowEnds() {
        let schedule = WebhookRetrySchedule.standard
        let start = Date(timeIntervalSince1970: 1_000_000)
        #expect(schedule.nextAttempt(afterFailedAttempts: 1, createdAt: start, now: start) == start.addingTimeInterval(5))
        #expect(schedule.nextAttempt(afterFailedAttempts: 2, createdAt: start, now: start) == start.addingTimeInterval(10))
        #expect(schedule.nextAttempt(afterFailedAttempts: 5, createdAt: start, now: start) == start.addingTimeInterval(80))
        #expect(schedule.nextAttempt(afterFailedAttempts: 30, createdAt: start, now: start) == start.addingTimeInterval(3600), "at most an hour apart")
        let late = start.addingTimeInterval(86_400 - 1800)
        #expect(schedule.nextAttempt(afterFailedAttempts: 20, createdAt: start, now: late) == nil, "past 24 hours: give up")
        var attempts = 0
        var now = start
        while let next = schedule.nextAttempt(afterFailedAttempts: attempts + 1, createdAt: start, now: now) {
            attempts += 1
            now = next
        }
        #expect((25...40).contains(attempts), "about 30 attempts over a day: \(attempts)")
    }
}
