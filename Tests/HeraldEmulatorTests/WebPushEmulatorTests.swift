import AsyncHTTPClient
import Crypto
import Foundation
import HeraldEmulator
import HeraldTLS
import HeraldWebPushCrypto
import NIOHTTP1
import Testing

@Suite("Web Push emulator", .timeLimit(.minutes(2)))
struct WebPushEmulatorTests {
    @Test("a subscription has an endpoint on the emulator, a P-256 key and a 16-byte secret")
    func subscriptionShape() async throws {
        try await WebPushHarness.with { harness in
            let one = harness.emulator.subscribe()
            let two = harness.emulator.subscribe()
            #expect(one.endpoint.hasPrefix(harness.emulator.baseURL + "/push/"))
            #expect(one.endpoint != two.endpoint)
            #expect(one.id == String(one.endpoint.split(separator: "/").last!))
            let p256dh = try #require(WebPushHarness.decode(one.p256dh))
            #expect(p256dh.count == 65 && p256dh.first == 0x04)
            #expect(try WebPushCrypto.publicKey(p256dh).x963Representation == p256dh)
            #expect(WebPushHarness.decode(one.auth)?.count == 16)
            #expect(one.p256dh != two.p256dh && one.auth != two.auth)
            // The browser's JSON shape.
            let json = try JSONSerialization.jsonObject(with: JSONEncoder().encode(one)) as? [String: Any]
            #expect(json?["endpoint"] as? String == one.endpoint)
            #expect((json?["keys"] as? [String: String]) == ["p256dh": one.p256dh, "auth": one.auth])
        }
    }

    @Test(
        "a good message is decrypted, recorded with TTL/Urgency/Topic and answered 201",
        arguments: [
            HTTPClient.Configuration.HTTPVersion.automatic, .http1Only,
        ])
    func acceptsAndDecrypts(httpVersion: HTTPClient.Configuration.HTTPVersion) async throws {
        try await WebPushHarness.with(httpVersion: httpVersion) { harness in
            let subscription = harness.emulator.subscribe()
            let text = #"{"title":"Grüße","body":"from the test"}"#
            let response = try await harness.push(
                to: subscription, text: text, headers: ["urgency": "high", "topic": "news_1", "ttl": "3600"])
            #expect(response.status == 201)
            #expect(response.version == (httpVersion == .http1Only ? .http1_1 : .http2))
            let location = try #require(response.headers.first(name: "location"))
            #expect(location.hasPrefix(harness.emulator.baseURL + "/m/"))

            let inbox = harness.emulator.notifications(for: subscription)
            try #require(inbox.count == 1)
            #expect(inbox[0].payload == text)
            #expect(inbox[0].headers == ["ttl": "3600", "urgency": "high", "topic": "news_1"])
            #expect(inbox[0].token == subscription.id)
            #expect(inbox[0].id == String(location.split(separator: "/").last!))
            #expect(harness.emulator.notifications(for: subscription.id).count == 1)
            #expect(harness.emulator.acceptedCount == 1)
        }
    }

    @Test("a message without a body needs no content coding")
    func emptyMessage() async throws {
        try await WebPushHarness.with { harness in
            let subscription = harness.emulator.subscribe()
            let response = try await harness.push(to: subscription, body: [], headers: ["content-encoding": nil])
            #expect(response.status == 201)
            #expect(harness.emulator.notifications(for: subscription).map(\.payload) == [""])
        }
    }

    enum BadVAPID: String, CaseIterable, Sendable {
        case missing, notVAPID, noKey, keyNotAPoint, notAJWT, wrongAlgorithm, signedByAnotherKey, audienceOfAnotherOrigin
        case audienceWithPath, audienceMissing, expired, expiresAfterMoreThan24Hours, expirationMissing, badSubject

        var expected: (status: Int, reason: String) {
            switch self {
            case .missing: (401, "MissingAuthorization")
            case .notVAPID, .noKey, .keyNotAPoint, .notAJWT, .wrongAlgorithm, .expirationMissing: (401, "BadAuthorization")
            case .signedByAnotherKey: (403, "BadSignature")
            case .audienceOfAnotherOrigin, .audienceWithPath, .audienceMissing: (403, "BadAudience")
            case .expired: (403, "ExpiredToken")
            case .expiresAfterMoreThan24Hours: (403, "ExpirationTooFar")
            case .badSubject: (403, "BadSubject")
            }
        }

        func authorization(_ harness: WebPushHarness) throws -> String? {
            let now = Int(harness.clock.now.timeIntervalSince1970)
            let good = try harness.authorization()
            switch self {
            case .missing: return nil
            case .notVAPID: return "Bearer " + good.dropFirst("vapid ".count)
            case .noKey: return String(good[..<good.range(of: ", k=")!.lowerBound])
            case .keyNotAPoint: return String(good.dropLast(3)) + "AAA"
            case .notAJWT: return "vapid t=not.a-jwt, k=" + TestSupport.base64URL(harness.vapidKey.publicKey.x963Representation)
            case .wrongAlgorithm: return try harness.authorization(header: ["typ": "JWT", "alg": "ES384"])
            case .signedByAnotherKey: return try harness.authorization(signedBy: P256.Signing.PrivateKey())
            case .audienceOfAnotherOrigin:
                return try harness.authorization(claims: harness.claims(["aud": "https://push.example.net"]))
            case .audienceWithPath:
                return try harness.authorization(claims: harness.claims(["aud": harness.emulator.baseURL + "/push"]))
            case .audienceMissing:
                var claims = harness.claims()
                claims["aud"] = nil
                return try harness.authorization(claims: claims)
            case .expired: return try harness.authorization(claims: harness.claims(["exp": now - 1]))
            case .expiresAfterMoreThan24Hours:
                return try harness.authorization(claims: harness.claims(["exp": now + 25 * 3600]))
            case .expirationMissing:
                var claims = harness.claims()
                claims["exp"] = nil
                return try harness.authorization(claims: claims)
            case .badSubject: return try harness.authorization(claims: harness.claims(["sub": "ops@example.com"]))
            }
        }
    }

    @Test("VAPID is checked: form, key, signature, audience, expiry, subject", arguments: BadVAPID.allCases)
    func refusesBadVAPID(_ bad: BadVAPID) async throws {
        try await WebPushHarness.with { harness in
            let subscription = harness.emulator.subscribe()
            let response = try await harness.push(to: subscription, headers: ["authorization": try bad.authorization(harness)])
            #expect(response.status == bad.expected.status)
            #expect(try harness.reason(of: response) == bad.expected.reason)
            if bad.expected.status == 401 {
                #expect(response.headers.first(name: "www-authenticate") == "vapid")
            }
            #expect(harness.emulator.notifications(for: subscription).isEmpty)
            #expect(harness.emulator.acceptedCount == 0)
        }
    }

    @Test("VAPID variants that clients send are accepted")
    func acceptsVAPIDVariants() async throws {
        try await WebPushHarness.with { harness in
            let subscription = harness.emulator.subscribe()
            let jwt = try TestSupport.es256JWT(
                header: ["typ": "JWT", "alg": "ES256"], claims: harness.claims(), key: harness.vapidKey)
            let k = TestSupport.base64URL(harness.vapidKey.publicKey.x963Representation)
            let variants = [
                "vapid t=\(jwt),k=\(k)",  // py-vapid writes no space
                "VAPID k=\(k), t=\(jwt)",  // any order, scheme in any case
                "vapid t=\"\(jwt)\", k=\"\(k)\"",  // quoted values
            ]
            for variant in variants {
                let response = try await harness.push(to: subscription, headers: ["authorization": variant])
                #expect(response.status == 201, "\(variant.prefix(12))")
            }
            // An aud with the default port spelled out, or in capitals, is the same origin.
            let url = harness.emulator.baseURL.uppercased().replacingOccurrences(of: "HTTPS", with: "https")
            let response = try await harness.push(
                to: subscription, headers: ["authorization": try harness.authorization(claims: harness.claims(["aud": url + "/"]))])
            #expect(response.status == 201)
        }
    }

    @Test("a token is checked again for expiry when a connection reuses it")
    func reusedTokenExpires() async throws {
        try await WebPushHarness.with { harness in
            let subscription = harness.emulator.subscribe()
            let authorization = try harness.authorization()
            #expect(try await harness.push(to: subscription, headers: ["authorization": authorization]).status == 201)
            harness.clock.advance(by: 12 * 3600 + 1)
            let late = try await harness.push(to: subscription, headers: ["authorization": authorization])
            #expect(late.status == 403)
            #expect(try harness.reason(of: late) == "ExpiredToken")
        }
    }

    @Test("VAPID can be made optional; a restricted subscription still needs the right key")
    func optionalVAPIDAndRestrictedSubscriptions() async throws {
        try await WebPushHarness.with(configure: { $0.requiresVAPID = false }) { harness in
            let open = harness.emulator.subscribe()
            #expect(try await harness.push(to: open, headers: ["authorization": nil]).status == 201)

            let restricted = harness.emulator.subscribe(applicationServerKey: harness.vapidKey.publicKey)
            #expect(try await harness.push(to: restricted).status == 201)
            let unsigned = try await harness.push(to: restricted, headers: ["authorization": nil])
            #expect(unsigned.status == 401)
            let other = P256.Signing.PrivateKey()
            let otherKey = try await harness.push(
                to: restricted, headers: ["authorization": try harness.authorization(signedBy: other, presenting: other.publicKey)])
            #expect(otherKey.status == 403)
            #expect(try harness.reason(of: otherKey) == "KeyMismatch")
        }
    }

    @Test("TTL is required and numeric; Urgency and Topic are checked")
    func pushHeaders() async throws {
        try await WebPushHarness.with { harness in
            let subscription = harness.emulator.subscribe()
            let cases: [([String: String?], String)] = [
                (["ttl": nil], "MissingTTL"), (["ttl": "-1"], "BadTTL"), (["ttl": "soon"], "BadTTL"),
                (["urgency": "urgent"], "BadUrgency"), (["topic": "has space"], "BadTopic"),
                (["topic": String(repeating: "a", count: 33)], "BadTopic"),
            ]
            for (headers, reason) in cases {
                let response = try await harness.push(to: subscription, headers: headers)
                #expect(response.status == 400, "\(reason)")
                #expect(try harness.reason(of: response) == reason)
            }
            #expect(try await harness.push(to: subscription, headers: ["ttl": "0", "urgency": "very-low"]).status == 201)
            #expect(harness.emulator.acceptedCount == 1)
        }
    }

    @Test("content coding, size and encryption are checked")
    func bodyChecks() async throws {
        try await WebPushHarness.with { harness in
            let subscription = harness.emulator.subscribe()
            let aesgcm = try await harness.push(to: subscription, headers: ["content-encoding": "aesgcm"])
            #expect(aesgcm.status == 415)
            #expect(try harness.reason(of: aesgcm) == "UnsupportedContentEncoding")

            let tooLarge = try await harness.push(to: subscription, body: [UInt8](repeating: 1, count: 4097))
            #expect(tooLarge.status == 413)
            #expect(try harness.reason(of: tooLarge) == "PayloadTooLarge")

            let garbage = try await harness.push(to: subscription, body: [UInt8](repeating: 1, count: 200))
            #expect(garbage.status == 400)
            #expect(try harness.reason(of: garbage) == "DecryptionFailed")

            // Encrypted for another subscription's keys.
            let other = harness.emulator.subscribe()
            let misdirected = try await harness.push(to: subscription, body: try WebPushHarness.encrypt("secret", for: other))
            #expect(misdirected.status == 400)
            #expect(try harness.reason(of: misdirected) == "DecryptionFailed")
            #expect(!misdirected.bodyString.contains("secret"))

            // 3993 bytes of plaintext make a body of exactly 4096: accepted.
            let largest = String(repeating: "x", count: 3993)
            #expect(try await harness.push(to: subscription, text: largest).status == 201)
            #expect(harness.emulator.notifications(for: subscription).map(\.payload) == [largest])
        }
    }

    @Test("unknown endpoints are 404, cancelled subscriptions 410")
    func unknownAndCancelled() async throws {
        try await WebPushHarness.with { harness in
            let subscription = harness.emulator.subscribe()
            let unknown = try await harness.push(to: subscription, endpoint: harness.emulator.baseURL + "/push/nope")
            #expect(unknown.status == 404)
            #expect(try harness.reason(of: unknown) == "NoSuchSubscription")

            harness.emulator.unregister(subscription)
            let gone = try await harness.push(to: subscription)
            #expect(gone.status == 410)
            #expect(try harness.reason(of: gone) == "Unsubscribed")
            #expect(harness.emulator.notifications(for: subscription).isEmpty)
        }
    }

    @Test("injected faults answer messages that pass validation")
    func faults() async throws {
        try await WebPushHarness.with { harness in
            let subscription = harness.emulator.subscribe()
            harness.emulator.injectFaults(Fault.throttled.withRetryAfter(7), count: 1)
            let noTTL = try await harness.push(to: subscription, headers: ["ttl": nil])
            #expect(noTTL.status == 400)  // validation first: the fault is still queued
            let throttled = try await harness.push(to: subscription)
            #expect(throttled.status == 429)
            #expect(throttled.headers.first(name: "retry-after") == "7")
            #expect(try harness.reason(of: throttled) == "TooManyRequests")
            #expect(try await harness.push(to: subscription).status == 201)
            #expect(harness.emulator.notifications(for: subscription).count == 1)
        }
    }

    @Test("HTTP control: issue a subscription, push, read the inbox, cancel, stats")
    func httpControl() async throws {
        try await WebPushHarness.with { harness in
            let base = harness.emulator.baseURL + "/_emulator"
            let issued = try await harness.client.send(.POST, base + "/subscriptions")
            #expect(issued.status == 200)
            let subscription = try issued.decode(WebPushSubscription.self)
            #expect(subscription.endpoint.hasPrefix(harness.emulator.baseURL + "/push/"))
            #expect(try issued.json()["keys"] is [String: Any])

            #expect(try await harness.push(to: subscription, text: "hello").status == 201)
            let inbox = try await harness.client.send(.GET, base + "/devices/\(subscription.id)/notifications")
            #expect(try inbox.decode([ReceivedNotification].self).map(\.payload) == ["hello"])

            let devices = try await harness.client.send(.POST, base + "/devices")
            #expect(devices.status == 400)

            let cancelled = try await harness.client.send(.POST, base + "/devices/\(subscription.id)/unregister")
            #expect(cancelled.status == 200)
            #expect(try await harness.push(to: subscription).status == 410)

            // A subscription restricted to an application server key.
            let key = TestSupport.base64URL(harness.vapidKey.publicKey.x963Representation)
            let restricted = try await harness.client.send(
                .POST, base + "/subscriptions", body: #"{"applicationServerKey":"\#(key)"}"#)
            #expect(restricted.status == 200)
            let other = P256.Signing.PrivateKey()
            let refused = try await harness.push(
                to: try restricted.decode(WebPushSubscription.self),
                headers: ["authorization": try harness.authorization(signedBy: other, presenting: other.publicKey)])
            #expect(refused.status == 403)
            let badKey = try await harness.client.send(.POST, base + "/subscriptions", body: #"{"applicationServerKey":"AAAA"}"#)
            #expect(badKey.status == 400)

            let stats = try await harness.client.send(.GET, base + "/stats")
            #expect(try stats.json()["accepted"] as? Int == 1)
        }
    }

    @Test("a public base URL sets the endpoints and the origin VAPID must name")
    func publicBaseURL() async throws {
        try await WebPushHarness.with(configure: { $0.publicBaseURL = "https://push.herald.test/" }) { harness in
            let subscription = harness.emulator.subscribe()
            #expect(subscription.endpoint.hasPrefix("https://push.herald.test/push/"))
            #expect(harness.emulator.origin == "https://push.herald.test")
            let endpoint = harness.emulator.baseURL + "/push/" + subscription.id
            let local = try await harness.push(to: subscription, endpoint: endpoint)
            #expect(local.status == 403)
            #expect(try harness.reason(of: local) == "BadAudience")
            let named = try await harness.push(
                to: subscription,
                headers: ["authorization": try harness.authorization(claims: harness.claims(["aud": "https://push.herald.test"]))],
                endpoint: endpoint)
            #expect(named.status == 201)
        }
    }
}
