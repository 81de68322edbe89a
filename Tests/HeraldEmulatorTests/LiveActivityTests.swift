import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldEmulator
import HeraldTLS
import NIOHTTP1
import NIOSSL
import Testing

extension APNsHarness {
    static let liveActivityTopic = topic + ".push-type.liveactivity"

    /// A Live Activity push (`apns-push-type: liveactivity` to the app's liveactivity topic) with `aps`.
    func sendLiveActivity(
        token: String, aps: [String: Any], headers: [(String, String)] = [], authorization: String?? = nil
    ) async throws -> TestResponse {
        let body = String(decoding: try JSONSerialization.data(withJSONObject: ["aps": aps], options: [.sortedKeys]), as: UTF8.self)
        return try await send(
            token: token, payload: body,
            headers: [("apns-topic", Self.liveActivityTopic), ("apns-push-type", "liveactivity")] + headers,
            authorization: authorization)
    }

    /// The `aps` of a push-to-start of a `MatchAttributes` activity.
    func startAPS(home: Int = 0, at timestamp: Int? = nil, extra: [String: Any] = [:]) -> [String: Any] {
        var aps: [String: Any] = [
            "timestamp": timestamp ?? Int(clock.now.timeIntervalSince1970), "event": "start",
            "content-state": ["home": home, "away": 0], "attributes-type": "MatchAttributes",
            "attributes": ["homeTeam": "Lions", "awayTeam": "Bears"], "alert": ["title": "Kick-off", "body": "Lions v Bears"],
        ]
        aps.merge(extra) { _, new in new }
        return aps
    }

    func updateAPS(home: Int, event: String = "update", at timestamp: Int? = nil, extra: [String: Any] = [:]) -> [String: Any] {
        var aps: [String: Any] = [
            "timestamp": timestamp ?? Int(clock.now.timeIntervalSince1970), "event": event,
            "content-state": ["home": home, "away": 0],
        ]
        aps.merge(extra) { _, new in new }
        return aps
    }
}

@Suite("APNs emulator: Live Activities")
struct LiveActivityTests {
    @Test("push-to-start starts an activity with its own update token; update and end change it")
    func startUpdateEnd() async throws {
        try await APNsHarness.with { apns in
            let startToken = apns.emulator.registerPushToStartToken(topic: APNsHarness.topic, attributesType: "MatchAttributes")
            let started = try await apns.sendLiveActivity(token: startToken, aps: apns.startAPS(), headers: [("apns-priority", "10")])
            #expect(started.status == 200, "\(started.bodyString)")
            #expect(started.headers.first(name: "apns-id") != nil)

            let activity = try #require(apns.emulator.activities(token: startToken).first)
            #expect(activity.state == .active)
            #expect(activity.topic == APNsHarness.topic)
            #expect(activity.attributesType == "MatchAttributes")
            #expect(activity.attributes?["homeTeam"] == .string("Lions"))
            #expect(activity.contentState?["home"] == .number(0))
            #expect(activity.startedBy == startToken)
            #expect(activity.received.count == 1)
            let updateToken = try #require(activity.updateToken)
            #expect(updateToken != startToken && updateToken.count == 64)
            #expect(apns.emulator.notifications(for: startToken).count == 1)

            apns.clock.advance(by: 60)
            let staleAt = Int(apns.clock.now.timeIntervalSince1970) + 600
            let updated = try await apns.sendLiveActivity(
                token: updateToken, aps: apns.updateAPS(home: 1, extra: ["stale-date": staleAt, "relevance-score": 75]))
            #expect(updated.status == 200, "\(updated.bodyString)")
            var current = try #require(apns.emulator.activity(id: activity.id))
            #expect(current.contentState?["home"] == .number(1))
            #expect(current.staleDate == Date(timeIntervalSince1970: TimeInterval(staleAt)))
            #expect(current.relevanceScore == 75)
            #expect(current.state == .active)

            // An update older than the newest one arrives and changes nothing, as on a device.
            let late = try await apns.sendLiveActivity(
                token: updateToken, aps: apns.updateAPS(home: 9, at: Int(apns.clock.now.timeIntervalSince1970) - 30))
            #expect(late.status == 200)
            #expect(apns.emulator.activity(id: activity.id)?.contentState?["home"] == .number(1))

            // Past its stale date the activity reads as stale until the next update.
            apns.clock.advance(by: 601)
            #expect(apns.emulator.activity(id: activity.id)?.state == .stale)

            let dismissAt = Int(apns.clock.now.timeIntervalSince1970) + 900
            let ended = try await apns.sendLiveActivity(
                token: updateToken, aps: apns.updateAPS(home: 2, event: "end", extra: ["dismissal-date": dismissAt]))
            #expect(ended.status == 200, "\(ended.bodyString)")
            current = try #require(apns.emulator.activity(id: activity.id))
            #expect(current.state == .ended)
            #expect(current.contentState?["home"] == .number(2))
            #expect(current.endedAt == apns.clock.now)
            #expect(current.dismissalDate == Date(timeIntervalSince1970: TimeInterval(dismissAt)))
            #expect(current.received.count == 4)

            // After the end, pushes arrive but the activity stays as it ended; past its dismissal date it is gone.
            _ = try await apns.sendLiveActivity(token: updateToken, aps: apns.updateAPS(home: 5))
            #expect(apns.emulator.activity(id: activity.id)?.contentState?["home"] == .number(2))
            apns.clock.advance(by: 901)
            #expect(apns.emulator.activity(id: activity.id)?.state == .dismissed)
            #expect(apns.emulator.notifications(for: updateToken).count == 4)
        }
    }

    @Test("an end without a dismissal date stays on the Lock Screen for four hours")
    func defaultDismissal() async throws {
        try await APNsHarness.with { apns in
            let activity = try apns.emulator.startActivity(
                topic: APNsHarness.topic, attributesType: "MatchAttributes", contentState: .object([("home", .number(0))]))
            let token = try #require(activity.updateToken)
            let ended = try await apns.sendLiveActivity(token: token, aps: ["timestamp": Int(apns.clock.now.timeIntervalSince1970), "event": "end"])
            #expect(ended.status == 200, "\(ended.bodyString)")
            apns.clock.advance(by: 4 * 3600 - 1)
            #expect(apns.emulator.activity(id: activity.id)?.state == .ended)
            apns.clock.advance(by: 1)
            #expect(apns.emulator.activity(id: activity.id)?.state == .dismissed)
        }
    }

    @Test("Live Activity payloads and headers are checked, with APNs' reasons")
    func invalidPushes() async throws {
        try await APNsHarness.with { apns in
            let startToken = apns.emulator.registerPushToStartToken(topic: APNsHarness.topic, attributesType: "MatchAttributes")
            let activity = try apns.emulator.startActivity(topic: APNsHarness.topic, attributesType: "MatchAttributes")
            let updateToken = try #require(activity.updateToken)
            let now = Int(apns.clock.now.timeIntervalSince1970)
            let payloads: [(String, String, [String: Any])] = [
                ("no timestamp", updateToken, ["event": "update", "content-state": [:] as [String: Any]]),
                ("fractional timestamp", updateToken, ["timestamp": 1.5, "event": "update", "content-state": [:] as [String: Any]]),
                ("timestamp as text", updateToken, ["timestamp": "\(now)", "event": "update", "content-state": [:] as [String: Any]]),
                ("unknown event", updateToken, ["timestamp": now, "event": "pause", "content-state": [:] as [String: Any]]),
                ("no event", updateToken, ["timestamp": now, "content-state": [:] as [String: Any]]),
                ("update without content-state", updateToken, ["timestamp": now, "event": "update"]),
                ("content-state not an object", updateToken, ["timestamp": now, "event": "update", "content-state": "x"]),
                ("stale-date as text", updateToken, apns.updateAPS(home: 1, extra: ["stale-date": "soon"])),
                ("dismissal-date negative", updateToken, apns.updateAPS(home: 1, event: "end", extra: ["dismissal-date": -5])),
                ("relevance-score as text", updateToken, apns.updateAPS(home: 1, extra: ["relevance-score": "high"])),
                ("start to an update token", updateToken, apns.startAPS()),
                ("update to a push-to-start token", startToken, apns.updateAPS(home: 1)),
                ("start without attributes-type", startToken, apns.startAPS().filter { $0.key != "attributes-type" }),
                ("start without attributes", startToken, apns.startAPS().filter { $0.key != "attributes" }),
                ("start without an alert", startToken, apns.startAPS().filter { $0.key != "alert" }),
                ("start of another activity type", startToken, apns.startAPS(extra: ["attributes-type": "RideAttributes"])),
            ]
            for (name, token, aps) in payloads {
                let response = try await apns.sendLiveActivity(token: token, aps: aps)
                #expect(response.status == 400, "\(name)")
                #expect(try apns.reason(of: response) == "BadPayload", "\(name)")
            }
            let noAPS = try await apns.send(
                token: updateToken, payload: #"{"event":"update"}"#,
                headers: [("apns-topic", APNsHarness.liveActivityTopic), ("apns-push-type", "liveactivity")])
            #expect(try apns.reason(of: noAPS) == "BadPayload")
            #expect(apns.emulator.activities(token: startToken).isEmpty)
            #expect(apns.emulator.notifications(for: updateToken).isEmpty)

            // The liveactivity push type needs the liveactivity topic, and that topic the push type.
            let bareTopic = try await apns.send(
                token: updateToken, payload: #"{"aps":{"timestamp":1,"event":"end"}}"#,
                headers: [("apns-topic", APNsHarness.topic), ("apns-push-type", "liveactivity")])
            #expect(bareTopic.status == 400)
            #expect(try apns.reason(of: bareTopic) == "TopicDisallowed")
            let alertType = try await apns.send(
                token: updateToken, headers: [("apns-topic", APNsHarness.liveActivityTopic), ("apns-push-type", "alert")])
            #expect(try apns.reason(of: alertType) == "InvalidPushType")
            // An alert to an activity token, and a Live Activity push to a device token, are for another topic.
            let alertToActivity = try await apns.send(token: updateToken)
            #expect(try apns.reason(of: alertToActivity) == "DeviceTokenNotForTopic")
            let device = apns.emulator.registerDevice(topic: APNsHarness.topic)
            let toDevice = try await apns.sendLiveActivity(token: device, aps: apns.updateAPS(home: 1))
            #expect(try apns.reason(of: toDevice) == "DeviceTokenNotForTopic")
            // 4 KB at most, content state included.
            let large = try await apns.sendLiveActivity(
                token: updateToken, aps: apns.updateAPS(home: 1, extra: ["content-state": ["text": String(repeating: "x", count: 4100)]]))
            #expect(large.status == 413)
            #expect(try apns.reason(of: large) == "PayloadTooLarge")
            #expect(apns.emulator.acceptedCount == 0)
        }
    }

    @Test("push-to-start needs token authentication: a certificate's request is refused")
    func pushToStartRefusedWithCertificate() async throws {
        // The harness's clock starts where a new TestClock does: the certificate is valid then.
        let authority = TestSupport.authority
        let certificate = try authority.issueAPNsClientCertificate(topic: APNsHarness.topic, now: TestClock().now)
        try await APNsHarness.with(configure: { $0.clientCertificateAuthority = authority }) { apns in
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .certificates([try authority.sslCertificate])
            tls.certificateChain = certificate.certificate.identity.certificateChain.map { .certificate($0) }
            tls.privateKey = .privateKey(certificate.certificate.identity.privateKey)
            let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls))
            do {
                try await Self.certificateRequests(apns: apns, client: client)
            } catch {
                try? await client.shutdown()
                throw error
            }
            try await client.shutdown()
        }
    }

    private static func certificateRequests(apns: APNsHarness, client: HTTPClient) async throws {
        let startToken = apns.emulator.registerPushToStartToken(topic: APNsHarness.topic, attributesType: "MatchAttributes")
        let body = String(decoding: try JSONSerialization.data(withJSONObject: ["aps": apns.startAPS()]), as: UTF8.self)
        let headers = [("apns-topic", APNsHarness.liveActivityTopic), ("apns-push-type", "liveactivity")]
        let refused = try await client.send(
            .POST, apns.emulator.baseURL + "/3/device/\(startToken)", headers: headers, body: body)
        #expect(refused.status == 400)
        #expect(try apns.reason(of: refused) == "TopicDisallowed")
        #expect(apns.emulator.activities(token: startToken).isEmpty)

        // The same connection's certificate still delivers ordinary pushes, and a provider token starts the activity.
        let device = apns.emulator.registerDevice(topic: APNsHarness.topic)
        let alert = try await client.send(
            .POST, apns.emulator.baseURL + "/3/device/\(device)", headers: [("apns-topic", APNsHarness.topic)],
            body: #"{"aps":{"alert":"hi"}}"#)
        #expect(alert.status == 200)
        let withToken = try await apns.sendLiveActivity(token: startToken, aps: apns.startAPS())
        #expect(withToken.status == 200, "\(withToken.bodyString)")
        #expect(apns.emulator.activities(token: startToken).count == 1)
    }

    @Test("a push-to-start token starts at most its budget per window: then 429 TooManyRequests")
    func startBudget() async throws {
        try await APNsHarness.with(configure: { $0.pushToStartBudget = .init(starts: 3, interval: 3600) }) { apns in
            let startToken = apns.emulator.registerPushToStartToken(topic: APNsHarness.topic, attributesType: "MatchAttributes")
            for index in 0..<3 {
                let response = try await apns.sendLiveActivity(token: startToken, aps: apns.startAPS(home: index))
                #expect(response.status == 200, "\(response.bodyString)")
                apns.clock.advance(by: 60)
            }
            let throttled = try await apns.sendLiveActivity(token: startToken, aps: apns.startAPS())
            #expect(throttled.status == 429)
            #expect(try apns.reason(of: throttled) == "TooManyRequests")
            #expect(apns.emulator.activities(token: startToken).count == 3)

            // Another device's token has a budget of its own.
            let other = apns.emulator.registerPushToStartToken(topic: APNsHarness.topic, attributesType: "MatchAttributes")
            #expect(try await apns.sendLiveActivity(token: other, aps: apns.startAPS()).status == 200)

            // An hour after the first start, one more fits.
            apns.clock.advance(by: 3600 - 180)
            let again = try await apns.sendLiveActivity(token: startToken, aps: apns.startAPS())
            #expect(again.status == 200, "\(again.bodyString)")
            #expect(apns.emulator.activities(token: startToken).count == 4)
        }
    }

    @Test("the control API makes activity tokens and shows activities")
    func controlAPI() async throws {
        try await APNsHarness.with { apns in
            let base = apns.emulator.baseURL + "/_emulator"
            let token = try await apns.client.send(
                .POST, base + "/push-to-start-tokens", body: #"{"topic":"\#(APNsHarness.topic)","attributesType":"MatchAttributes"}"#)
            #expect(token.status == 200)
            let startToken = try #require(try token.json()["token"] as? String)
            #expect(try await apns.sendLiveActivity(token: startToken, aps: apns.startAPS(home: 3)).status == 200)
            let started = try await apns.client.send(.GET, base + "/push-to-start-tokens/\(startToken)/activities")
            let activities = try started.decode([LiveActivity].self)
            #expect(activities.count == 1)
            #expect(activities.first?.contentState?["home"] == .number(3))

            let created = try await apns.client.send(
                .POST, base + "/activities",
                body: #"{"topic":"\#(APNsHarness.topic)","attributesType":"MatchAttributes","contentState":{"home":0}}"#)
            #expect(created.status == 200, "\(created.bodyString)")
            let activity = try created.decode(LiveActivity.self)
            let updateToken = try #require(activity.updateToken)
            #expect(try await apns.sendLiveActivity(token: updateToken, aps: apns.updateAPS(home: 4)).status == 200)
            let read = try await apns.client.send(.GET, base + "/activities/\(activity.id)")
            let current = try read.decode(LiveActivity.self)
            #expect(current.contentState?["home"] == .number(4))
            #expect(current.received.count == 1)
            let inbox = try await apns.client.send(.GET, base + "/devices/\(updateToken)/notifications")
            #expect(try inbox.decode([ReceivedNotification].self).count == 1)
            #expect(try await apns.client.send(.GET, base + "/activities/nope").status == 404)
            let noChannel = try await apns.client.send(.POST, base + "/activities/\(activity.id)/channel", body: #"{"channel":"AAAA"}"#)
            #expect(noChannel.status == 400)
        }
    }
}
