import Foundation
import HeraldClient
import HeraldCore
import HeraldEmulator
import HeraldHub
import HummingbirdTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `Idempotency-Key` on the app backend's sends (per user), and the SDKs' own retries, which
/// reuse their key: against a live server and the emulators, with a real socket in front of
/// the server that drops the first answer where a retry is the point.
@Suite struct IdempotencyTests {
    /// `POST path` as `token`'s user with `body` and an optional key: status, headers, body.
    static func post(_ base: String, _ path: String, token: String, body: String, key: String?) async throws -> (Int, HTTPURLResponse, Data) {
        var request = URLRequest(url: URL(string: base + path)!)
        request.httpMethod = "POST"
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        if let key { request.setValue(key, forHTTPHeaderField: "Idempotency-Key") }
        request.httpBody = Data(body.utf8)
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        return (http.statusCode, http, data)
    }

    /// Bob, signed in, with the token his requests carry; alice with one APNs device.
    static func aliceAndBob(_ herald: TestHerald, base: URL) async throws -> (bob: String, aliceDevice: String) {
        let alice = try await signedUpClient("alice", at: base)
        let device = herald.apns.registerDevice(topic: TestHerald.topic)
        _ = try await alice.register(handle: device, platform: .apns)
        let credentials = InMemoryCredentialStore()
        let bob = HeraldClient(baseURL: base, credentials: credentials)
        try await bob.signUp(username: "bob", password: "bob-password")
        try await bob.signIn(username: "bob", password: "bob-password")
        return (try #require(try credentials.load().token), device)
    }

    @Test func theAppBackendAnswersARepeatWithTheFirstNotification() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.live) { client in
                let base = "http://127.0.0.1:\(try #require(client.port))"
                let (bob, device) = try await Self.aliceAndBob(herald, base: URL(string: base)!)
                let path = "/api/notifications?pns=apns&to_tag=alice"
                let (status, first, data) = try await Self.post(base, path, token: bob, body: #""Dinner at 8?""#, key: "dinner-1")
                #expect(status == 200)
                #expect(first.value(forHTTPHeaderField: "Idempotent-Replayed") == nil)
                let summary = try JSONDecoder.iso.decode(NotificationSummary.self, from: data)

                let (againStatus, again, againData) = try await Self.post(base, path, token: bob, body: #""Dinner at 8?""#, key: "dinner-1")
                #expect(againStatus == 200)
                #expect(again.value(forHTTPHeaderField: "Idempotent-Replayed") == "true")
                #expect(try JSONDecoder.iso.decode(NotificationSummary.self, from: againData).id == summary.id)

                // Another message under the key: 422 naming it.
                let (otherStatus, _, otherData) = try await Self.post(base, path, token: bob, body: #""Dinner at 9?""#, key: "dinner-1")
                #expect(otherStatus == 422)
                #expect(String(decoding: otherData, as: UTF8.self).contains("'dinner-1'"))
                // Keys are each user's own: alice may use bob's key for her own send.
                let aliceCredentials = InMemoryCredentialStore()
                let alice = HeraldClient(baseURL: URL(string: base)!, credentials: aliceCredentials)
                try await alice.signIn(username: "alice", password: "alice-password")
                let (aliceStatus, aliceAnswer, _) = try await Self.post(
                    base, path, token: try #require(try aliceCredentials.load().token), body: #""Note to self""#, key: "dinner-1"
                )
                #expect(aliceStatus == 200)
                #expect(aliceAnswer.value(forHTTPHeaderField: "Idempotent-Replayed") == nil)

                try await Task.sleep(for: .milliseconds(300))
                #expect(herald.apns.notifications(for: device).count == 2)

                // A malformed key: 400, nothing sent.
                let (badStatus, _, badData) = try await Self.post(base, path, token: bob, body: #""x""#, key: String(repeating: "x", count: 300))
                #expect(badStatus == 400)
                #expect(String(decoding: badData, as: UTF8.self).contains("Idempotency-Key"))
                #expect(herald.apns.notifications(for: device).count == 2)
            }
        }
    }

    @Test func aRepeatedSecureSendAnswersTheFirstSecureID() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.live) { client in
                let base = "http://127.0.0.1:\(try #require(client.port))"
                let (bob, device) = try await Self.aliceAndBob(herald, base: URL(string: base)!)
                let path = "/api/notifications/secure?pns=apns&to_tag=alice"
                let body = #"{"code": "4711", "amount": 12}"#
                let (status, _, data) = try await Self.post(base, path, token: bob, body: body, key: "secure-1")
                #expect(status == 200)
                // The same JSON with its members in another order is the same request.
                let (againStatus, again, againData) = try await Self.post(base, path, token: bob, body: #"{"amount": 12, "code": "4711"}"#, key: "secure-1")
                #expect(againStatus == 200)
                #expect(again.value(forHTTPHeaderField: "Idempotent-Replayed") == "true")
                struct Answer: Decodable {
                    var id: String
                    var secureId: String
                }
                let first = try JSONDecoder().decode(Answer.self, from: data)
                let second = try JSONDecoder().decode(Answer.self, from: againData)
                #expect(first.id == second.id && first.secureId == second.secureId)
                try await Task.sleep(for: .milliseconds(300))
                #expect(herald.apns.notifications(for: device).count == 1)
            }
        }
    }

    /// The hub SDK's retry after a connection that broke once the hub had accepted the send:
    /// the same key, so the hub answers the first notification and the device gets it once.
    @Test func theHubSDKReusesItsKeyOnItsRetry() async throws {
        try await HubTestServer.withServer { server in
            let token = try await HubAPIIdempotencyTests.appleDevice(server)
            let notification = HubNotification.apple(json: .object([("aps", .object([("alert", .string("once"))]))]), headers: ["apns-push-type": "alert"])
            let proxy = try DroppingProxy(upstreamPort: server.httpPort, drops: 1)
            defer { proxy.close() }
            let client = try NotificationHubClient(connectionString: Self.connectionString(server, via: proxy), hubName: HubTestServer.hubName)
            let id = try await client.send(notification, tagExpression: "everyone")
            #expect(proxy.requests == 2, "the first attempt reached the hub and its answer was dropped")
            _ = try await server.finishedDetails(id)
            try await Task.sleep(for: .milliseconds(300))
            #expect(server.herald.apns.notifications(for: token).count == 1)

            // Without its retries, the dropped answer is the caller's error.
            let dropping = try DroppingProxy(upstreamPort: server.httpPort, drops: 1)
            defer { dropping.close() }
            let once = try NotificationHubClient(
                connectionString: Self.connectionString(server, via: dropping), hubName: HubTestServer.hubName, sendRetry: .never
            )
            await #expect(throws: (any Error).self) { _ = try await once.send(notification, tagExpression: "everyone") }
            #expect(dropping.requests == 1)
        }
    }

    /// The full-access connection string of the test hub, with `proxy` as its endpoint.
    static func connectionString(_ server: HubTestServer, via proxy: DroppingProxy) throws -> String {
        let strings = server.catalog.connectionStrings(of: server.definition, endpoint: "http://127.0.0.1:\(proxy.port)/")
        return try #require(strings.first { $0.rule == "DefaultFullSharedAccessSignature" }).connectionString
    }

    /// The app SDK's retry likewise: `notify` reaches alice's device once.
    @Test func theAppSDKReusesItsKeyOnItsRetry() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.live) { client in
                let port = try #require(client.port)
                let (_, device) = try await Self.aliceAndBob(herald, base: URL(string: "http://127.0.0.1:\(port)")!)
                let proxy = try DroppingProxy(upstreamPort: port, drops: 1, prefix: "POST /api/notifications")
                defer { proxy.close() }
                let bob = HeraldClient(baseURL: URL(string: "http://127.0.0.1:\(proxy.port)")!)
                try await bob.signIn(username: "bob", password: "bob-password")
                let before = proxy.requests
                let summary = try await bob.notify(user: "alice", message: "once", platform: .apns)
                #expect(proxy.requests - before == 2)
                #expect(summary.success == 1)
                try await Task.sleep(for: .milliseconds(300))
                #expect(herald.apns.notifications(for: device).count == 1)
            }
        }
    }
}
