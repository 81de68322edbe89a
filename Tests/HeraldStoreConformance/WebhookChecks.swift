import Foundation
import HeraldCore
import HeraldStore
import HeraldTestSupport
import Testing

/// Webhook endpoints, the outbox of events waiting for them (claimed under a lease, retried,
/// given up with the endpoint disabled) and each endpoint's delivery log.
enum WebhookChecks {
    static func endpoint(_ id: String, events: Set<WebhookEventType> = [.notificationCompleted], at date: Date) -> WebhookEndpoint {
        WebhookEndpoint(id: id, url: URL(string: "https://hooks.example/\(id)")!, events: events, secret: .random(), createdAt: date)
    }

    static func event(_ id: String, _ type: WebhookEventType = .notificationCompleted, at date: Date) -> WebhookEvent {
        WebhookEvent(id: id, type: type, timestamp: date, data: .object([("notificationId", .string(id))]))
    }

    static func attempt(
        _ delivery: WebhookDelivery, at date: Date, status: Int? = 200, error: String? = nil, _ outcome: WebhookAttempt.Outcome
    ) -> WebhookAttempt {
        WebhookAttempt(
            eventID: delivery.eventID, endpointID: delivery.endpointID, type: delivery.type, attempt: delivery.attempts + 1, at: date,
            statusCode: status, error: error, durationMilliseconds: 12, outcome: outcome
        )
    }

    static let all: [StoreCheck] = [
        check("anEndpointIsSavedListedRotatedAndDeleted") { store, clock in
            let first = endpoint("we_1", events: [.notificationCompleted, .registrationExpired], at: clock.now)
            try await store.createWebhookEndpoint(first, limit: 10)
            await expectHeraldError(.conflict) { try await store.createWebhookEndpoint(first, limit: 10) }
            clock.advance(by: .seconds(1))
            try await store.createWebhookEndpoint(endpoint("we_2", at: clock.now), limit: 10)
            await expectHeraldError(.conflict) { try await store.createWebhookEndpoint(endpoint("we_3", at: clock.now), limit: 2) }
            #expect(try await store.webhookEndpoint(id: "we_3") == nil, "a refused endpoint is not stored")

            let saved = try #require(try await store.webhookEndpoint(id: "we_1"))
            #expect(saved.url == first.url && saved.events == first.events && saved.secret == first.secret && saved.enabled)
            #expect(saved.createdAt == clock.now.addingTimeInterval(-1).storeRoundedForTests)
            #expect(try await store.webhookEndpoints().map(\.id) == ["we_1", "we_2"], "oldest first")

            let newSecret = WebhookSecret.random()
            let until = clock.now.addingTimeInterval(3600)
            let rotated = try #require(try await store.rotateWebhookSecret(id: "we_1", to: newSecret, previousSecretExpiresAt: until, now: clock.now))
            #expect(rotated.secret == newSecret && rotated.previousSecret == first.secret)
            #expect(rotated.previousSecretExpiresAt == until.storeRoundedForTests)
            #expect(rotated.signingSecrets(at: clock.now) == [newSecret, first.secret])
            #expect(rotated.signingSecrets(at: until) == [newSecret], "the previous secret stops signing when it expires")
            #expect(try await store.rotateWebhookSecret(id: "we_9", to: newSecret, previousSecretExpiresAt: until, now: clock.now) == nil)

            #expect(try await store.enqueueWebhookEvent(event("ev_1", at: clock.now), endpointIDs: nil) == 2)
            #expect(try await store.deleteWebhookEndpoint(id: "we_1"))
            #expect(try await store.deleteWebhookEndpoint(id: "we_1") == false)
            #expect(try await store.webhookEndpoints().map(\.id) == ["we_2"])
            #expect(try await store.pendingWebhookDeliveries(endpointID: "we_1") == 0, "its waiting events went with it")
            #expect(try await store.pendingWebhookDeliveries(endpointID: "we_2") == 1)
        },
        check("anEventIsRecordedOncePerEndpointThatWantsIt") { store, clock in
            try await store.createWebhookEndpoint(endpoint("we_done", events: [.notificationCompleted], at: clock.now), limit: 10)
            try await store.createWebhookEndpoint(endpoint("we_gone", events: [.registrationExpired], at: clock.now), limit: 10)
            try await store.createWebhookEndpoint(
                endpoint("we_all", events: Set(WebhookEventType.subscribable), at: clock.now), limit: 10
            )
            #expect(try await store.enqueueWebhookEvent(event("ev_1", at: clock.now), endpointIDs: nil) == 2)
            #expect(try await store.enqueueWebhookEvent(event("ev_1", at: clock.now), endpointIDs: nil) == 0, "the same event again")
            #expect(try await store.enqueueWebhookEvent(event("ev_2", .registrationExpired, at: clock.now), endpointIDs: nil) == 2)
            #expect(try await store.pendingWebhookDeliveries(endpointID: "we_done") == 1)
            #expect(try await store.pendingWebhookDeliveries(endpointID: "we_gone") == 1)
            #expect(try await store.pendingWebhookDeliveries(endpointID: "we_all") == 2)
            // A test event goes to the endpoints named, whatever they want.
            #expect(try await store.enqueueWebhookEvent(event("ev_t", .test, at: clock.now), endpointIDs: ["we_gone", "we_9"]) == 1)
            #expect(try await store.pendingWebhookDeliveries(endpointID: "we_gone") == 2)

            // A disabled endpoint gets nothing, and disabling drops what waited for it.
            let disabled = try #require(try await store.setWebhookEndpointEnabled(id: "we_all", enabled: false, now: clock.now))
            #expect(!disabled.enabled)
            #expect(try await store.pendingWebhookDeliveries(endpointID: "we_all") == 0)
            #expect(try await store.enqueueWebhookEvent(event("ev_3", at: clock.now), endpointIDs: nil) == 1)
            #expect(try await store.setWebhookEndpointEnabled(id: "we_9", enabled: true, now: clock.now) == nil)
        },
        check("aPageOfEventsIsRecordedInOneCall") { store, clock in
            try await store.createWebhookEndpoint(endpoint("we_done", events: [.notificationCompleted], at: clock.now), limit: 10)
            try await store.createWebhookEndpoint(endpoint("we_gone", events: [.registrationExpired], at: clock.now), limit: 10)
            #expect(try await store.enqueueWebhookEvents([], endpointIDs: nil) == 0)
            let page = [
                event("ev_gone_1", .registrationExpired, at: clock.now), event("ev_gone_2", .registrationExpired, at: clock.now),
                event("ev_done", at: clock.now), event("ev_gone_1", .registrationExpired, at: clock.now),
            ]
            #expect(try await store.enqueueWebhookEvents(page, endpointIDs: nil) == 3, "each event once, to the endpoint that wants it")
            #expect(try await store.enqueueWebhookEvents(page, endpointIDs: nil) == 0, "the same page again")
            #expect(try await store.pendingWebhookDeliveries(endpointID: "we_gone") == 2)
            #expect(try await store.pendingWebhookDeliveries(endpointID: "we_done") == 1)
            let claimed = try await store.claimWebhookDeliveries(now: clock.now, lease: .seconds(30), owner: "node-a", limit: 10)
            #expect(Set(claimed.map(\.eventID)) == ["ev_gone_1", "ev_gone_2", "ev_done"])
            #expect(claimed.first { $0.eventID == "ev_done" }?.body == event("ev_done", at: clock.now).body)
        },
        check("deliveriesAreClaimedUnderALeaseAndRetried") { store, clock in
            try await store.createWebhookEndpoint(endpoint("we_1", at: clock.now), limit: 10)
            let recordedAt = clock.now
            try await store.enqueueWebhookEvent(event("ev_1", at: clock.now), endpointIDs: nil)
            clock.advance(by: .milliseconds(10))
            try await store.enqueueWebhookEvent(event("ev_2", at: clock.now), endpointIDs: nil)

            let claimed = try await store.claimWebhookDeliveries(now: clock.now, lease: .seconds(30), owner: "node-a", limit: 10)
            #expect(claimed.map(\.eventID) == ["ev_1", "ev_2"], "oldest first")
            let first = try #require(claimed.first)
            #expect(first.endpointID == "we_1" && first.type == .notificationCompleted && first.attempts == 0)
            #expect(first.body == event("ev_1", at: recordedAt).body)
            #expect(first.createdAt == recordedAt.storeRoundedForTests)
            #expect(
                try await store.claimWebhookDeliveries(now: clock.now, lease: .seconds(30), owner: "node-b", limit: 10).isEmpty,
                "leased rows are not claimed again")

            // Another node cannot record an attempt on a row it does not hold.
            await expectCodedError(.leaseLost, of: StoreError.self) {
                try await store.recordWebhookAttempt(attempt(first, at: clock.now, .delivered), owner: "node-b", retryAt: nil)
            }
            try await store.recordWebhookAttempt(attempt(first, at: clock.now, .delivered), owner: "node-a", retryAt: nil)
            await expectCodedError(.leaseLost, of: StoreError.self) {
                try await store.recordWebhookAttempt(attempt(first, at: clock.now, .delivered), owner: "node-a", retryAt: nil)
            }

            // A failure makes the row due again later, one attempt more, unleased.
            let second = claimed[1]
            let retryAt = clock.now.addingTimeInterval(5)
            try await store.recordWebhookAttempt(
                attempt(second, at: clock.now, status: 503, error: "the endpoint answered 503", .retrying), owner: "node-a", retryAt: retryAt
            )
            #expect(
                try await store.claimWebhookDeliveries(now: clock.now, lease: .seconds(30), owner: "node-b", limit: 10).isEmpty,
                "not due yet")
            clock.advance(by: .seconds(5))
            let again = try await store.claimWebhookDeliveries(now: clock.now, lease: .seconds(30), owner: "node-b", limit: 10)
            #expect(again.map(\.eventID) == ["ev_2"] && again.first?.attempts == 1)

            // A node that dies holding a lease leaves the row to another when the lease ends.
            clock.advance(by: .seconds(29))
            #expect(try await store.claimWebhookDeliveries(now: clock.now, lease: .seconds(30), owner: "node-c", limit: 10).isEmpty)
            clock.advance(by: .seconds(2))
            let taken = try await store.claimWebhookDeliveries(now: clock.now, lease: .seconds(30), owner: "node-c", limit: 10)
            #expect(taken.map(\.eventID) == ["ev_2"])
            await expectCodedError(.leaseLost, of: StoreError.self) {
                try await store.recordWebhookAttempt(attempt(again[0], at: clock.now, .delivered), owner: "node-b", retryAt: nil)
            }
            try await store.recordWebhookAttempt(attempt(taken[0], at: clock.now, .delivered), owner: "node-c", retryAt: nil)
            #expect(try await store.pendingWebhookDeliveries(endpointID: "we_1") == 0)

            // The log: every attempt, newest first.
            let log = try await store.webhookAttempts(endpointID: "we_1", limit: 10)
            #expect(log.map(\.eventID) == ["ev_2", "ev_2", "ev_1"])
            #expect(log.map(\.outcome) == [.delivered, .retrying, .delivered])
            #expect(log[1].statusCode == 503 && log[1].error == "the endpoint answered 503" && log[1].attempt == 1)
            #expect(log[0].attempt == 2 && log[0].durationMilliseconds == 12)
            #expect(try await store.webhookAttempts(endpointID: "we_1", limit: 1).count == 1)
        },
        check("claimsAreLimitedAndSkipDisabledEndpoints") { store, clock in
            try await store.createWebhookEndpoint(endpoint("we_1", at: clock.now), limit: 10)
            try await store.createWebhookEndpoint(endpoint("we_2", at: clock.now), limit: 10)
            for number in 1...3 {
                try await store.enqueueWebhookEvent(event("ev_\(number)", at: clock.now), endpointIDs: nil)
                clock.advance(by: .milliseconds(1))
            }
            let page = try await store.claimWebhookDeliveries(now: clock.now, lease: .seconds(30), owner: "a", limit: 4)
            #expect(page.count == 4)
            #expect(page.map(\.eventID) == ["ev_1", "ev_1", "ev_2", "ev_2"])
            _ = try await store.setWebhookEndpointEnabled(id: "we_2", enabled: false, now: clock.now)
            let rest = try await store.claimWebhookDeliveries(now: clock.now, lease: .seconds(30), owner: "b", limit: 10)
            #expect(rest.map { "\($0.endpointID)/\($0.eventID)" } == ["we_1/ev_3"])
        },
        check("givingUpDisablesTheEndpointUntilItIsEnabledByHand") { store, clock in
            try await store.createWebhookEndpoint(endpoint("we_1", at: clock.now), limit: 10)
            try await store.enqueueWebhookEvent(event("ev_1", at: clock.now), endpointIDs: nil)
            try await store.enqueueWebhookEvent(event("ev_2", at: clock.now), endpointIDs: nil)
            let claimed = try await store.claimWebhookDeliveries(now: clock.now, lease: .seconds(30), owner: "a", limit: 1)
            let reason = "every attempt failed for 24 hours (the last: connection refused)"
            try await store.recordWebhookAttempt(
                attempt(try #require(claimed.first), at: clock.now, status: nil, error: reason, .gaveUp), owner: "a", retryAt: nil
            )
            let disabled = try #require(try await store.webhookEndpoint(id: "we_1"))
            #expect(!disabled.enabled && disabled.disabledReason == reason)
            #expect(try await store.pendingWebhookDeliveries(endpointID: "we_1") == 0, "what waited for it is dropped")
            #expect(try await store.enqueueWebhookEvent(event("ev_3", at: clock.now), endpointIDs: nil) == 0)
            #expect(try await store.claimWebhookDeliveries(now: clock.now, lease: .seconds(30), owner: "a", limit: 10).isEmpty)
            let log = try await store.webhookAttempts(endpointID: "we_1", limit: 10)
            #expect(log.map(\.outcome) == [.gaveUp] && log.first?.statusCode == nil)

            let enabled = try #require(try await store.setWebhookEndpointEnabled(id: "we_1", enabled: true, now: clock.now))
            #expect(enabled.enabled && enabled.disabledReason == nil)
            #expect(try await store.enqueueWebhookEvent(event("ev_4", at: clock.now), endpointIDs: nil) == 1)
            #expect(try await store.claimWebhookDeliveries(now: clock.now, lease: .seconds(30), owner: "a", limit: 10).map(\.eventID) == ["ev_4"])
        },
        check("theDeliveryLogIsPurgedByAge") { store, clock in
            try await store.createWebhookEndpoint(endpoint("we_1", at: clock.now), limit: 10)
            for number in 1...2 {
                try await store.enqueueWebhookEvent(event("ev_\(number)", at: clock.now), endpointIDs: nil)
                let claimed = try await store.claimWebhookDeliveries(now: clock.now, lease: .seconds(30), owner: "a", limit: 1)
                try await store.recordWebhookAttempt(attempt(try #require(claimed.first), at: clock.now, .delivered), owner: "a", retryAt: nil)
                clock.advance(by: .seconds(60))
            }
            #expect(try await store.purgeWebhookAttempts(before: clock.now.addingTimeInterval(-90)) == 1)
            #expect(try await store.webhookAttempts(endpointID: "we_1", limit: 10).map(\.eventID) == ["ev_2"])
        },
    ]

    private static func check(_ name: String, _ body: @escaping StoreCheck.Body) -> StoreCheck {
        StoreCheck(area: "webhooks", name: name, body: body)
    }
}
