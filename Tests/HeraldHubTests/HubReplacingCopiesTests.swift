import Foundation
import HeraldCore
import HeraldHub
import HeraldSQLite
import Testing

/// A device sent a notification twice (its page was sent again after a crash) keeps one copy:
/// APNs and Web Push sends carry the notification's id as their collapse id unless the sender
/// chose one.
@Suite("Hub: repeats replace their first copy")
struct HubReplacingCopiesTests {
    static let alert = PlatformPayload(platform: .apns, body: Data(#"{"aps":{"alert":"Goal!"}}"#.utf8))

    @Test func apnsAndWebPushSendsCarryTheNotificationsIDFCMAndWNSNone() async throws {
        try await HubFixture.with { f in
            try await f.register(
                .apns(1, tags: ["news"]),
                Registration(id: "fcm-1", platform: .fcm, handle: "fcm-token-1", tags: ["news"]),
                Registration(id: "wns-1", platform: .wns, handle: "https://wns.example.com/?token=1", tags: ["news"])
            )
            let record = try await f.engine.enqueue(
                tagExpression: "news",
                payloads: [
                    Self.alert,
                    PlatformPayload(platform: .fcm, body: Data(#"{"message":{"notification":{"title":"Goal!"}}}"#.utf8)),
                    PlatformPayload(
                        platform: .wns, body: Data("<toast><visual><binding template=\"ToastGeneric\"><text>Goal!</text></binding></visual></toast>".utf8)),
                ]
            )
            try await f.deliverAll()
            #expect(f.apns.sent.first?.headers["apns-collapse-id"] == record.id)
            let fcm = try #require(f.fcm.sent.first)
            #expect(!fcm.body.contains("collapse_key"), "FCM keeps its four collapse keys per device for the app")
            #expect(f.wns.sent.first?.headers["x-wns-tag"] == nil)

            let keys = WebPushKeys(
                p256dh: "BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM", auth: "tBHItJI5svbpez7KI4CCXg")
            let direct = try await f.engine.enqueueDirect(
                payload: PlatformPayload(platform: .webpush, body: Data("Goal!".utf8)),
                targets: [DirectTarget(platform: .webpush, handle: "https://push.example.com/1", webPushKeys: keys)]
            )
            try await f.deliverAll()
            let topic = try #require(f.webPush.sent.first?.headers["topic"])
            #expect(topic == direct.id.replacingOccurrences(of: "-", with: ""))
            #expect(topic.count == 32, "a Web Push Topic is at most 32 characters")
        }
    }

    @Test func theSendersCollapseIDAndALiveActivityPushAreLeftAsTheyAre() async throws {
        try await HubFixture.with { f in
            try await f.register(.apns(1, tags: ["a"]), .apns(2, tags: ["b"], kind: .liveActivity))
            _ = try await f.engine.send(
                SendRequest(target: .tags(try HubEngine.tags("a")), content: .native([Self.alert]), options: .init(collapseID: "score"))
            )
            let update = PlatformPayload(
                platform: .apns,
                body: Data(#"{"aps":{"timestamp":1,"event":"update","content-state":{"score":1}}}"#.utf8),
                headers: [.init(name: "apns-push-type", value: "liveactivity")]
            )
            _ = try await f.engine.enqueue(tagExpression: "b", payloads: [update])
            try await f.deliverAll()
            let sent = Dictionary(uniqueKeysWithValues: f.apns.sent.map { ($0.handle, $0.headers) })
            #expect(sent[apnsToken(1)]?["apns-collapse-id"] == "score")
            #expect(sent[apnsToken(2)].map { $0["apns-collapse-id"] == nil } == true, "Live Activity updates are told apart by their timestamps")
        }
    }

    @Test func aTemplateSendCarriesTheNotificationsIDWhereItsTemplateSetsNoCollapseID() async throws {
        try await HubFixture.with { f in
            let plain = RegistrationTemplate(name: "plain", body: #"{"aps":{"alert":"$(m)"}}"#)
            let own = RegistrationTemplate(
                name: "own", body: #"{"aps":{"alert":"$(m)"}}"#, headers: [.init(name: "apns-collapse-id", value: "$(m)")]
            )
            let web = RegistrationTemplate(name: "web", body: #"{"title":"$(m)"}"#)
            let webOwn = RegistrationTemplate(name: "web-own", body: #"{"title":"$(m)"}"#, headers: [.init(name: "Topic", value: "score")])
            let keys = WebPushKeys(
                p256dh: "BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM", auth: "tBHItJI5svbpez7KI4CCXg")
            try await f.register(
                .template("t1", handle: apnsToken(1), template: plain),
                .template("t2", handle: apnsToken(2), template: own),
                Registration(id: "b1", platform: .webpush, handle: "https://push.example.com/s/1", webPushKeys: keys, template: web),
                Registration(id: "b2", platform: .webpush, handle: "https://push.example.com/s/2", webPushKeys: keys, template: webOwn)
            )
            let record = try await f.engine.enqueueTemplate(tagExpression: nil, send: TemplateSend(properties: ["m": "hi"]))
            try await f.deliverAll()
            let sent = Dictionary(uniqueKeysWithValues: f.apns.sent.map { ($0.handle, $0.headers) })
            #expect(sent[apnsToken(1)]?["apns-collapse-id"] == record.id)
            #expect(sent[apnsToken(2)]?["apns-collapse-id"] == "hi")
            let webSent = Dictionary(uniqueKeysWithValues: f.webPush.sent.map { ($0.handle, $0.headers) })
            #expect(webSent["https://push.example.com/s/1"]?["topic"] == record.id.replacingOccurrences(of: "-", with: ""))
            #expect(webSent["https://push.example.com/s/2"]?["topic"] == "score")
        }
    }

    /// Every partition of a split broadcast sends the whole notification's id, not its own.
    @Test func thePartitionsOfABroadcastShareTheNotificationsID() async throws {
        try await HubFixture.with(platforms: [.apns], configure: HubPartitionTests.small) { f in
            try await f.store.insertRegistrations((0..<100).map { Registration.apns($0) })
            let record = try await f.engine.enqueue(tagExpression: nil, payloads: [Self.alert])
            #expect(try await f.deliverAll() > 1, "split into partitions")
            #expect(f.apns.sent.count == 100)
            #expect(Set(f.apns.sent.compactMap { $0.headers["apns-collapse-id"] }) == [record.id])
        }
    }
}
