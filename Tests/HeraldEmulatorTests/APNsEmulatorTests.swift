import AsyncHTTPClient
import Crypto
import Foundation
import HeraldCore
import HeraldEmulator
import NIOCore
import NIOHTTP1
import Testing

@Suite("APNs emulator")
struct APNsEmulatorTests {
    // MARK: - Success

    @Test("a valid push is accepted over HTTP/2, echoed apns-id, recorded in the inbox")
    func acceptsValidPush() async throws {
        try await APNsHarness.with { apns in
            let token = apns.emulator.registerDevice(topic: APNsHarness.topic)
            #expect(token.count == 64)
            #expect(token.allSatisfy { "0123456789abcdef".contains($0) })
            let apnsID = "8b4d3d36-12a0-4f5b-9a51-0a1b2c3d4e5f"
            let response = try await apns.send(
                token: token,
                payload: #"{"aps":{"alert":"hi"},"n":1}"#,
                headers: [
                    ("apns-topic", APNsHarness.topic), ("apns-push-type", "alert"), ("apns-priority", "10"),
                    ("apns-id", apnsID), ("apns-expiration", "0"), ("apns-collapse-id", "c1"),
                ]
            )
            #expect(response.status == 200)
            #expect(response.version == .http2)
            #expect(response.headers.first(name: "apns-id") == apnsID)
            let uniqueID = try #require(response.headers.first(name: "apns-unique-id"))
            #expect(UUID(uuidString: uniqueID) != nil)
            #expect(response.body.readableBytes == 0)

            let inbox = apns.emulator.notifications(for: token)
            #expect(inbox.count == 1)
            let received = try #require(inbox.first)
            #expect(received.id == apnsID)
            #expect(received.token == token)
            #expect(received.payload == #"{"aps":{"alert":"hi"},"n":1}"#)
            #expect(received.headers["apns-topic"] == APNsHarness.topic)
            #expect(received.headers["apns-push-type"] == "alert")
            #expect(received.headers["apns-collapse-id"] == "c1")
            #expect(received.headers["authorization"] == nil)
            #expect(received.receivedAt == apns.clock.now)
            #expect(apns.emulator.acceptedCount == 1)
        }
    }

    @Test("without apns-id the emulator generates a UUID")
    func generatesAPNsID() async throws {
        try await APNsHarness.with { apns in
            let token = apns.emulator.registerDevice(topic: APNsHarness.topic)
            let response = try await apns.send(token: token)
            #expect(response.status == 200)
            let id = try #require(response.headers.first(name: "apns-id"))
            #expect(UUID(uuidString: id) != nil)
            #expect(id == id.lowercased())
            #expect(apns.emulator.notifications(for: token).first?.id == id)
        }
    }

    @Test("uppercase hex tokens address the same device")
    func uppercaseToken() async throws {
        try await APNsHarness.with { apns in
            let token = apns.emulator.registerDevice(topic: APNsHarness.topic)
            let response = try await apns.send(token: token.uppercased())
            #expect(response.status == 200)
            #expect(apns.emulator.notifications(for: token).count == 1)
        }
    }

    @Test("HTTP/1.1 clients are served too")
    func http1() async throws {
        try await APNsHarness.with(httpVersion: .http1Only) { apns in
            let token = apns.emulator.registerDevice(topic: APNsHarness.topic)
            let ok = try await apns.send(token: token)
            #expect(ok.status == 200)
            #expect(ok.version == .http1_1)
            let bad = try await apns.send(token: token, headers: [])
            #expect(bad.status == 400)
            #expect(try apns.reason(of: bad) == "MissingTopic")
        }
    }

    @Test("many concurrent streams on one connection")
    func concurrentStreams() async throws {
        // The inbox keeps every one of them (the default keeps the last 100).
        try await APNsHarness.with(configure: { $0.inboxLimit = 500 }) { apns in
            let token = apns.emulator.registerDevice(topic: APNsHarness.topic)
            let count = 500
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<count {
                    group.addTask {
                        try await apns.send(token: token, payload: #"{"aps":{},"i":\#(index)}"#).status
                    }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses.count == count)
            #expect(statuses.allSatisfy { $0 == 200 })
            #expect(apns.emulator.acceptedCount == count)
            #expect(apns.emulator.notifications(for: token).count == count)
        }
    }

    // MARK: - Path and method

    @Test("other paths are 404 BadPath, other methods 405 MethodNotAllowed")
    func pathAndMethod() async throws {
        try await APNsHarness.with { apns in
            let token = apns.emulator.registerDevice(topic: APNsHarness.topic)
            let badPath = try await apns.send(token: token, path: "/3/devices/\(token)")
            #expect(badPath.status == 404)
            #expect(try apns.reason(of: badPath) == "BadPath")
            let get = try await apns.send(token: token, payload: nil, method: .GET)
            #expect(get.status == 405)
            #expect(try apns.reason(of: get) == "MethodNotAllowed")
            let missing = try await apns.send(token: "", path: "/3/device/")
            #expect(missing.status == 400)
            #expect(try apns.reason(of: missing) == "MissingDeviceToken")
        }
    }

    // MARK: - Provider tokens

    @Test("no authorization header is 403 MissingProviderToken")
    func missingProviderToken() async throws {
        try await APNsHarness.with { apns in
            let token = apns.emulator.registerDevice(topic: APNsHarness.topic)
            let response = try await apns.send(token: token, authorization: .some(nil))
            #expect(response.status == 403)
            #expect(try apns.reason(of: response) == "MissingProviderToken")
        }
    }

    enum BadJWT: String, CaseIterable, CustomTestStringConvertible {
        case notBearer, garbage, twoParts, algHS256, missingKid, iatString, iatFraction, missingIss
        case unknownKid, wrongTeam, wrongSignature, truncatedSignature, issuedInFuture
        var testDescription: String { rawValue }
    }

    @Test("malformed or unverifiable provider tokens are 403 InvalidProviderToken", arguments: BadJWT.allCases)
    func invalidProviderToken(_ kind: BadJWT) async throws {
        try await APNsHarness.with { apns in
            let token = apns.emulator.registerDevice(topic: APNsHarness.topic)
            let iat = Int(apns.clock.now.timeIntervalSince1970)
            let header: [String: Any] = ["alg": "ES256", "kid": APNsHarness.keyID]
            let claims: [String: Any] = ["iss": APNsHarness.teamID, "iat": iat]
            let authorization: String
            switch kind {
            case .notBearer:
                authorization = "basic " + apns.defaultJWT
            case .garbage:
                authorization = "bearer not-a-jwt"
            case .twoParts:
                authorization = "bearer " + apns.defaultJWT.split(separator: ".").prefix(2).joined(separator: ".")
            case .algHS256:
                authorization = "bearer " + (try TestSupport.es256JWT(header: ["alg": "HS256", "kid": APNsHarness.keyID], claims: claims, key: apns.key))
            case .missingKid:
                authorization = "bearer " + (try TestSupport.es256JWT(header: ["alg": "ES256"], claims: claims, key: apns.key))
            case .iatString:
                authorization = "bearer " + (try TestSupport.es256JWT(header: header, claims: ["iss": APNsHarness.teamID, "iat": "\(iat)"], key: apns.key))
            case .iatFraction:
                authorization =
                    "bearer " + (try TestSupport.es256JWT(header: header, claims: ["iss": APNsHarness.teamID, "iat": Double(iat) + 0.5], key: apns.key))
            case .missingIss:
                authorization = "bearer " + (try TestSupport.es256JWT(header: header, claims: ["iat": iat], key: apns.key))
            case .unknownKid:
                authorization = "bearer " + (try apns.jwt(keyID: "ZZZZZZZZZZ"))
            case .wrongTeam:
                authorization = "bearer " + (try apns.jwt(teamID: "OTHERTEAM1"))
            case .wrongSignature:
                authorization = "bearer " + (try apns.jwt(key: P256.Signing.PrivateKey()))
            case .truncatedSignature:
                authorization = "bearer " + String(apns.defaultJWT.dropLast(4))
            case .issuedInFuture:
                authorization = "bearer " + (try apns.jwt(age: -120))
            }
            let response = try await apns.send(token: token, authorization: .some(authorization))
            #expect(response.status == 403)
            #expect(try apns.reason(of: response) == "InvalidProviderToken")
            #expect(apns.emulator.acceptedCount == 0)
        }
    }

    @Test("a token older than an hour is 403 ExpiredProviderToken, also once it ages while cached")
    func expiredProviderToken() async throws {
        try await APNsHarness.with { apns in
            let token = apns.emulator.registerDevice(topic: APNsHarness.topic)
            let old = try await apns.send(token: token, authorization: .some("bearer " + (try apns.jwt(age: 3601))))
            #expect(old.status == 403)
            #expect(try apns.reason(of: old) == "ExpiredProviderToken")

            let fresh = try await apns.send(token: token)
            #expect(fresh.status == 200)
            apns.clock.advance(by: 59 * 60)
            #expect(try await apns.send(token: token).status == 200)
            apns.clock.advance(by: 2 * 60)
            let aged = try await apns.send(token: token)
            #expect(aged.status == 403)
            #expect(try apns.reason(of: aged) == "ExpiredProviderToken")
        }
    }

    @Test("the same token is verified once and reused freely")
    func tokenReuse() async throws {
        try await APNsHarness.with { apns in
            let token = apns.emulator.registerDevice(topic: APNsHarness.topic)
            for _ in 0..<100 {
                #expect(try await apns.send(token: token).status == 200)
            }
            // A second connection presenting the same token is not a token update.
            try await TestSupport.withClient { other in
                let response = try await other.send(
                    .POST,
                    apns.emulator.baseURL + "/3/device/\(token)",
                    headers: [("apns-topic", APNsHarness.topic), ("authorization", "bearer " + apns.defaultJWT)],
                    body: "{}"
                )
                #expect(response.status == 200)
            }
            #expect(apns.emulator.acceptedCount == 101)
        }
    }

    @Test("a new token within 20 minutes of the last new one is 429 TooManyProviderTokenUpdates")
    func tooManyTokenUpdates() async throws {
        try await APNsHarness.with { apns in
            let token = apns.emulator.registerDevice(topic: APNsHarness.topic)
            #expect(try await apns.send(token: token).status == 200)

            apns.clock.advance(by: 5 * 60)
            let early = try await apns.send(token: token, authorization: .some("bearer " + (try apns.jwt())))
            #expect(early.status == 429)
            #expect(try apns.reason(of: early) == "TooManyProviderTokenUpdates")
            // The token already accepted keeps working.
            #expect(try await apns.send(token: token).status == 200)

            apns.clock.advance(by: 15 * 60)
            let newToken = try apns.jwt()
            #expect(try await apns.send(token: token, authorization: .some("bearer " + newToken)).status == 200)
            #expect(try await apns.send(token: token, authorization: .some("bearer " + newToken)).status == 200)
        }
    }

    @Test("the update-rate check can be turned off")
    func tokenUpdateRateOff() async throws {
        try await APNsHarness.with(configure: { $0.minimumProviderTokenInterval = 0 }) { apns in
            let token = apns.emulator.registerDevice(topic: APNsHarness.topic)
            for _ in 0..<3 {
                let fresh = try apns.jwt()
                #expect(try await apns.send(token: token, authorization: .some("bearer " + fresh)).status == 200)
            }
        }
    }

    // MARK: - Device tokens

    @Test(
        "malformed device tokens are 400 BadDeviceToken",
        arguments: [
            String(repeating: "a", count: 62),  // too short
            String(repeating: "a", count: 65),  // odd
            String(repeating: "a", count: 202),  // too long
            String(repeating: "g", count: 64),  // not hex
            String(repeating: "a", count: 63) + "-",
        ]
    )
    func badDeviceToken(_ deviceToken: String) async throws {
        try await APNsHarness.with(configure: { $0.openDeviceRegistry = true }) { apns in
            let response = try await apns.send(token: deviceToken)
            #expect(response.status == 400)
            #expect(try apns.reason(of: response) == "BadDeviceToken")
        }
    }

    @Test("unknown tokens are 400 BadDeviceToken unless the registry is open")
    func unknownToken() async throws {
        let unknown = String(repeating: "ab", count: 32)
        try await APNsHarness.with { apns in
            let response = try await apns.send(token: unknown)
            #expect(response.status == 400)
            #expect(try apns.reason(of: response) == "BadDeviceToken")
        }
        try await APNsHarness.with(configure: { $0.openDeviceRegistry = true }) { apns in
            let long = String(repeating: "cd", count: 100)
            let first = try await apns.send(token: unknown)
            let second = try await apns.send(token: long)
            #expect(first.status == 200)
            #expect(second.status == 200)
            #expect(apns.emulator.notifications(for: unknown).count == 1)
        }
    }

    @Test("an unregistered device is 410 Unregistered with the time in ms")
    func unregistered() async throws {
        try await APNsHarness.with { apns in
            let token = apns.emulator.registerDevice(topic: APNsHarness.topic)
            #expect(try await apns.send(token: token).status == 200)
            let unregisteredAt = apns.clock.now
            apns.emulator.unregister(token: token)
            apns.clock.advance(by: 30)
            let response = try await apns.send(token: token)
            #expect(response.status == 410)
            let json = try response.json()
            #expect(json["reason"] as? String == "Unregistered")
            let timestamp = try #require(json["timestamp"] as? Int)
            #expect(timestamp == Int(unregisteredAt.timeIntervalSince1970 * 1000))
            #expect(apns.emulator.acceptedCount == 1)
        }
    }

    // MARK: - Headers

    @Test("topic rules: MissingTopic, TopicDisallowed, DeviceTokenNotForTopic, app suffixes")
    func topics() async throws {
        try await APNsHarness.with(configure: { $0.topics = [APNsHarness.topic, "com.example.other"] }) { apns in
            let token = apns.emulator.registerDevice(topic: APNsHarness.topic)
            let missing = try await apns.send(token: token, headers: [])
            #expect(missing.status == 400)
            #expect(try apns.reason(of: missing) == "MissingTopic")

            let disallowed = try await apns.send(token: token, headers: [("apns-topic", "com.example.nope")])
            #expect(disallowed.status == 400)
            #expect(try apns.reason(of: disallowed) == "TopicDisallowed")

            let otherApp = try await apns.send(token: token, headers: [("apns-topic", "com.example.other")])
            #expect(otherApp.status == 400)
            #expect(try apns.reason(of: otherApp) == "DeviceTokenNotForTopic")

            let voip = try await apns.send(
                token: token,
                headers: [("apns-topic", APNsHarness.topic + ".voip"), ("apns-push-type", "voip")]
            )
            #expect(voip.status == 200)
        }
    }

    @Test(
        "header values are checked",
        arguments: [
            (("apns-push-type", "shout"), "InvalidPushType"),
            (("apns-priority", "7"), "BadPriority"),
            (("apns-expiration", "tomorrow"), "BadExpirationDate"),
            (("apns-expiration", "-5"), "BadExpirationDate"),
            (("apns-collapse-id", String(repeating: "c", count: 65)), "BadCollapseId"),
            (("apns-id", "not-a-uuid"), "BadMessageId"),
        ])
    func badHeader(_ header: (String, String), _ reason: String) async throws {
        try await APNsHarness.with { apns in
            let token = apns.emulator.registerDevice(topic: APNsHarness.topic)
            let response = try await apns.send(token: token, headers: [("apns-topic", APNsHarness.topic), header])
            #expect(response.status == 400)
            #expect(try apns.reason(of: response) == reason)
        }
    }

    @Test("background pushes must use priority 5; a 64-byte collapse id is fine")
    func backgroundPriority() async throws {
        try await APNsHarness.with { apns in
            let token = apns.emulator.registerDevice(topic: APNsHarness.topic)
            let background: [(String, String)] = [("apns-topic", APNsHarness.topic), ("apns-push-type", "background")]
            let wrong = try await apns.send(token: token, headers: background + [("apns-priority", "10")])
            #expect(wrong.status == 400)
            #expect(try apns.reason(of: wrong) == "BadPriority")
            let right = try await apns.send(
                token: token,
                payload: #"{"aps":{"content-available":1}}"#,
                headers: background + [("apns-priority", "5"), ("apns-collapse-id", String(repeating: "c", count: 64))]
            )
            #expect(right.status == 200)
        }
    }

    // MARK: - Payload

    @Test("payload size: 4096 bytes pass, 4097 are 413 PayloadTooLarge; VoIP allows 5120")
    func payloadSize() async throws {
        try await APNsHarness.with { apns in
            let token = apns.emulator.registerDevice(topic: APNsHarness.topic)
            func payload(size: Int) -> String {
                let prefix = #"{"aps":{},"pad":""#
                let suffix = #""}"#
                return prefix + String(repeating: "x", count: size - prefix.utf8.count - suffix.utf8.count) + suffix
            }
            #expect(payload(size: 4096).utf8.count == 4096)
            #expect(try await apns.send(token: token, payload: payload(size: 4096)).status == 200)
            let tooLarge = try await apns.send(token: token, payload: payload(size: 4097))
            #expect(tooLarge.status == 413)
            #expect(try apns.reason(of: tooLarge) == "PayloadTooLarge")

            let voip: [(String, String)] = [("apns-topic", APNsHarness.topic + ".voip"), ("apns-push-type", "voip")]
            #expect(try await apns.send(token: token, payload: payload(size: 5120), headers: voip).status == 200)
            let voipTooLarge = try await apns.send(token: token, payload: payload(size: 5121), headers: voip)
            #expect(voipTooLarge.status == 413)
            #expect(apns.emulator.acceptedCount == 2)
        }
    }

    @Test("an empty body is 400 PayloadEmpty")
    func payloadEmpty() async throws {
        try await APNsHarness.with { apns in
            let token = apns.emulator.registerDevice(topic: APNsHarness.topic)
            let response = try await apns.send(token: token, payload: nil)
            #expect(response.status == 400)
            #expect(try apns.reason(of: response) == "PayloadEmpty")
        }
    }

    @Test(
        "a body that is not a JSON object is 400 BadPayload",
        arguments: [#"not json"#, #"[1,2]"#, #"{"aps":{}"#, #"{"a":1,}"#, #"{"a":01}"#, #""text""#, #"{"a":"\x"}"#]
    )
    func badPayload(_ payload: String) async throws {
        try await APNsHarness.with { apns in
            let token = apns.emulator.registerDevice(topic: APNsHarness.topic)
            let response = try await apns.send(token: token, payload: payload)
            #expect(response.status == 400)
            #expect(try apns.reason(of: response) == "BadPayload")
        }
    }

    @Test(
        "valid JSON objects of every shape pass",
        arguments: [
            #"{}"#, #" { "a" : [1, -2.5e3, true, false, null, "é\u00e9\n"], "b": {"c": {}} } "#,
        ])
    func goodPayload(_ payload: String) async throws {
        try await APNsHarness.with { apns in
            let token = apns.emulator.registerDevice(topic: APNsHarness.topic)
            let response = try await apns.send(token: token, payload: payload)
            #expect(response.status == 200)
        }
    }

    @Test("checks run in APNs' order: token before device, device before headers, headers before payload")
    func checkOrder() async throws {
        try await APNsHarness.with { apns in
            let unknown = String(repeating: "ab", count: 32)
            let noAuthBadDevice = try await apns.send(token: unknown, payload: nil, headers: [], authorization: .some(nil))
            #expect(try apns.reason(of: noAuthBadDevice) == "MissingProviderToken")
            let badDeviceNoTopic = try await apns.send(token: unknown, payload: nil, headers: [])
            #expect(try apns.reason(of: badDeviceNoTopic) == "BadDeviceToken")
            let token = apns.emulator.registerDevice(topic: APNsHarness.topic)
            let noTopicNoPayload = try await apns.send(token: token, payload: nil, headers: [])
            #expect(try apns.reason(of: noTopicNoPayload) == "MissingTopic")
        }
    }

    // MARK: - Faults

    @Test(
        "injected faults answer the next requests, with retry-after",
        arguments: [
            (Fault.throttled, 429, "TooManyRequests"),
            (Fault.unavailable, 503, "ServiceUnavailable"),
            (Fault.internalError, 500, "InternalServerError"),
        ]
    )
    func faults(_ fault: Fault, _ status: Int, _ reason: String) async throws {
        try await APNsHarness.with { apns in
            let token = apns.emulator.registerDevice(topic: APNsHarness.topic)
            apns.emulator.injectFaults(fault.withRetryAfter(7), count: 2)
            for _ in 0..<2 {
                let response = try await apns.send(token: token)
                #expect(response.status == status)
                #expect(try apns.reason(of: response) == reason)
                #expect(response.headers.first(name: "retry-after") == "7")
            }
            let after = try await apns.send(token: token)
            #expect(after.status == 200)
            #expect(after.headers.first(name: "retry-after") == nil)
            #expect(apns.emulator.acceptedCount == 1)
            #expect(apns.emulator.notifications(for: token).count == 1)
        }
    }

    @Test("faults without retry-after, and clearing them")
    func faultWithoutRetryAfter() async throws {
        try await APNsHarness.with { apns in
            let token = apns.emulator.registerDevice(topic: APNsHarness.topic)
            apns.emulator.injectFaults(.unavailable, count: 1)
            let response = try await apns.send(token: token)
            #expect(response.status == 503)
            #expect(response.headers.first(name: "retry-after") == nil)
            apns.emulator.injectFaults(.throttled, count: 5)
            apns.emulator.clearFaults()
            #expect(try await apns.send(token: token).status == 200)
        }
    }

    @Test("the control API tells the devices where to confirm, refuses what it cannot use, and stops them")
    func receiptsAreConfiguredOverTheControlAPI() async throws {
        try await APNsHarness.with { apns in
            let url = apns.emulator.baseURL + "/_emulator/receipts"
            let json = [("Content-Type", "application/json")]
            for (body, says) in [
                ("{}", "connectionString"),
                (
                    #"{"connectionString":"Endpoint=sb://127.0.0.1:1/;SharedAccessKeyName=k;SharedAccessKey=a2V5","hub":"h","fraction":2}"#,
                    "fraction must be 0…1"
                ),
                (#"{"connectionString":"not a connection string","hub":"h"}"#, "connectionString:"),
            ] {
                let refused = try await apns.client.send(.PUT, url, headers: json, body: body)
                #expect(refused.status == 400, "\(body)")
                #expect(String(buffer: refused.body).contains(says), "\(String(buffer: refused.body))")
            }
            let accepted = try await apns.client.send(
                .PUT, url, headers: json,
                body: #"{"connectionString":"Endpoint=sb://127.0.0.1:1/;SharedAccessKeyName=k;SharedAccessKey=a2V5","hub":"h","fraction":0.5}"#)
            #expect(accepted.status == 200)
            #expect(try await apns.client.send(.DELETE, url).status == 200)
            // Which devices confirm depends on the token only.
            #expect(DeviceReceipts.confirms(token: "abc", fraction: 1) && !DeviceReceipts.confirms(token: "abc", fraction: 0))
            #expect(Receipt.notificationID(inPayload: #"{"herald.id":"n-1","aps":{}}"#.utf8) == "n-1")
            #expect(Receipt.notificationID(inPayload: #"{"aps":{}}"#.utf8) == nil)
        }
    }

    @Test("the inbox keeps the last few payloads; the stats count every device reached, and those reached twice")
    func reachIsCountedPastTheInbox() async throws {
        try await APNsHarness.with(configure: { $0.inboxLimit = 2 }) { apns in
            let once = apns.emulator.registerDevice(topic: APNsHarness.topic)
            let often = apns.emulator.registerDevice(topic: APNsHarness.topic)
            _ = apns.emulator.registerDevice(topic: APNsHarness.topic)  // never sent to
            #expect(try await apns.send(token: once).status == 200)
            for n in 0..<5 {
                #expect(try await apns.send(token: often, payload: #"{"n":\#(n)}"#).status == 200)
            }
            #expect(apns.emulator.notifications(for: often).map(\.payload) == [#"{"n":3}"#, #"{"n":4}"#])
            let response = try await apns.client.send(.GET, apns.emulator.baseURL + "/_emulator/stats")
            #expect(
                try response.decode([String: Int].self)
                    == [
                        "accepted": 6, "devices": 2, "devicesReachedMoreThanOnce": 1, "devicesShowingMoreThanOne": 1,
                        "receiptsConfirmed": 0, "receiptsFailed": 0,
                    ]
            )
        }
    }

    @Test("the stats since a moment say when sends resumed after it and how long they stood still")
    func statsSinceAMoment() async throws {
        struct Stats: Decodable {
            var accepted: Int
            var firstAcceptedSince: Int64?
            var lastAcceptedSince: Int64?
            var longestPauseSince: Double?
        }
        try await APNsHarness.with { apns in
            let token = apns.emulator.registerDevice(topic: APNsHarness.topic)
            func stats(_ query: String) async throws -> Stats {
                try await apns.client.send(.GET, apns.emulator.baseURL + "/_emulator/stats" + query).decode(Stats.self)
            }
            func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }

            let moment = Date()
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await apns.send(token: token).status == 200)
            let first = Date()
            try await Task.sleep(for: .milliseconds(100))
            #expect(try await apns.send(token: token).status == 200)
            let last = Date()

            let since = try await stats("?since=\(milliseconds(moment))")
            #expect(since.accepted == 2)
            let resumed = try #require(since.firstAcceptedSince)
            #expect(resumed >= milliseconds(moment) + 300 && resumed <= milliseconds(first))
            let ended = try #require(since.lastAcceptedSince)
            #expect(ended >= milliseconds(first) + 99 && ended <= milliseconds(last))
            // The moment counts as a send: the 300 ms before the first send are the longest pause.
            #expect(try #require(since.longestPauseSince) >= 0.29)

            let later = try await stats("?since=\(milliseconds(Date()) + 1000)")
            #expect(later.firstAcceptedSince == nil && later.lastAcceptedSince == nil && later.longestPauseSince == 0)
            let plain = try await stats("")
            #expect(plain.firstAcceptedSince == nil && plain.longestPauseSince == nil)
            let bad = try await apns.client.send(.GET, apns.emulator.baseURL + "/_emulator/stats?since=yesterday")
            #expect(bad.status == 400)
        }
    }

    @Test("a notification replaces the one of its apns-collapse-id that the device shows")
    func aCollapseIDReplacesTheEarlierNotification() async throws {
        try await APNsHarness.with { apns in
            let token = apns.emulator.registerDevice(topic: APNsHarness.topic)
            let other = apns.emulator.registerDevice(topic: APNsHarness.topic)
            let collapsing = [("apns-topic", APNsHarness.topic), ("apns-collapse-id", "score")]
            #expect(try await apns.send(token: token, payload: #"{"n":1}"#, headers: collapsing).status == 200)
            #expect(try await apns.send(token: token, payload: #"{"n":2}"#).status == 200)
            #expect(try await apns.send(token: token, payload: #"{"n":3}"#, headers: collapsing).status == 200)
            #expect(apns.emulator.notifications(for: token).map(\.payload) == [#"{"n":2}"#, #"{"n":3}"#])
            // The same collapse id on another device replaces nothing there.
            #expect(try await apns.send(token: other, payload: #"{"n":1}"#, headers: collapsing).status == 200)
            #expect(try await apns.send(token: other, payload: #"{"n":1}"#, headers: collapsing).status == 200)
            let response = try await apns.client.send(.GET, apns.emulator.baseURL + "/_emulator/stats")
            let stats = try response.decode([String: Int].self)
            #expect(stats["devicesReachedMoreThanOnce"] == 2)
            #expect(stats["devicesShowingMoreThanOne"] == 1, "the repeat on the other device replaced its first copy")
        }
    }

    // MARK: - Lifecycle

    @Test("run() returns after shutdown(), and the port is closed")
    func shutdown() async throws {
        let key = P256.Signing.PrivateKey()
        let emulator = try await APNsEmulator.start(
            configuration: .init(
                identity: try TestSupport.identity(),
                signingKeys: [.init(keyID: "K", teamID: "T", publicKey: key.publicKey)]
            ),
            logger: TestSupport.logger
        )
        #expect(emulator.baseURL == "https://127.0.0.1:\(emulator.port)")
        let running = Task { try await emulator.run() }
        try await TestSupport.withClient { client in
            // A live connection, which shutdown has to close.
            let response = try await client.send(.GET, emulator.baseURL + "/_emulator/stats")
            #expect(response.status == 200)
            try await emulator.shutdown()
            try await running.value
            // AHC retries refused connections until the deadline; a short one keeps the test quick.
            await #expect(throws: (any Error).self) {
                _ = try await client.send(.GET, emulator.baseURL + "/_emulator/stats", timeout: .milliseconds(500))
            }
        }
        try await emulator.shutdown()  // idempotent
    }

    @Test("cancelling the task that runs run() shuts the emulator down")
    func cancellation() async throws {
        let key = P256.Signing.PrivateKey()
        let emulator = try await APNsEmulator.start(
            configuration: .init(
                identity: try TestSupport.identity(),
                signingKeys: [.init(keyID: "K", teamID: "T", publicKey: key.publicKey)]
            ),
            logger: TestSupport.logger
        )
        try await TestSupport.withClient { client in
            #expect(try await client.send(.GET, emulator.baseURL + "/_emulator/stats").status == 200)
            let running = Task { try await emulator.run() }
            running.cancel()
            try await running.value
            await #expect(throws: (any Error).self) {
                _ = try await client.send(.GET, emulator.baseURL + "/_emulator/stats", timeout: .milliseconds(500))
            }
        }
    }
}
