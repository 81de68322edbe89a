import Foundation
import HeraldCore
import HeraldHub
import HeraldHubWire
import HeraldStore
import HeraldTestSupport
import Testing

@Suite("Hub: template sends")
struct HubTemplateSendTests {
    static let alert = RegistrationTemplate(
        name: "alert",
        body: #"{"aps":{"alert":"$(greeting), $(name)!"}}"#,
        headers: [.init(name: "apns-collapse-id", value: "$(name)")],
        expiry: "$(expiry)",
        priority: "5"
    )

    @Test func eachDeviceRendersItsTemplateWithItsPushVariablesOverriddenByTheSend() async throws {
        try await HubFixture.with { f in
            try await f.register(
                .template(
                    "t1", handle: apnsToken(1), tags: ["news"], template: Self.alert,
                    pushVariables: ["name": "Ann", "GREETING": "Yo", "expiry": "2030-01-01T00:00:00Z"]),
                .template(
                    "t2", handle: apnsToken(2), tags: ["news"], template: Self.alert,
                    pushVariables: ["Name": "Bob", "greeting": "Hey"]),
                .apns(3, tags: ["news"])
            )
            let record = try await f.engine.enqueueTemplate(tagExpression: "news", send: TemplateSend(properties: ["GREETING": "Hi"]))
            #expect(record.payloads.isEmpty)
            #expect(record.template == TemplateSend(properties: ["GREETING": "Hi"]))
            #expect(try await f.deliverAll() == 1)

            let sent = Dictionary(uniqueKeysWithValues: f.apns.sent.map { ($0.handle, $0) })
            #expect(sent.count == 2, "the native registration gets nothing")
            let ann = try #require(sent[apnsToken(1)])
            #expect(ReceiptIDs.removed(from: ann.body) == #"{"aps":{"alert":"Hi, Ann!"}}"#, "the send's GREETING overrides the device's")
            #expect(ReceiptIDs.id(in: ann.body) == record.id, "each APNs rendering carries the notification's id")
            #expect(ann.headers["apns-collapse-id"] == "Ann")
            #expect(ann.headers["apns-expiration"] == "1893456000")
            #expect(ann.headers["apns-priority"] == "5")
            let bob = try #require(sent[apnsToken(2)])
            #expect(
                ReceiptIDs.removed(from: bob.body) == #"{"aps":{"alert":"Hi, Bob!"}}"#, "the send's GREETING overrides the device's greeting, whatever its case"
            )
            #expect(bob.headers["apns-collapse-id"] == "Bob")
            #expect(bob.headers["apns-expiration"] == nil, "an expiry that renders empty is left out")

            let stored = try await f.stored(record.id)
            #expect(stored.state == .completed)
            #expect(stored.counts.count(.success, .apns) == 2)
        }
    }

    @Test func aNamedSendReachesOnlyThatTemplateAnUnnamedSendEachTemplateOfAHandle() async throws {
        try await HubFixture.with { f in
            let short = RegistrationTemplate(name: "short", body: #"{"aps":{"alert":"$(m,3)"}}"#)
            let long = RegistrationTemplate(name: "long", body: #"{"aps":{"alert":"$(m)"}}"#)
            try await f.register(
                .template("a-short", handle: apnsToken(1), template: short),
                .template("a-long", handle: apnsToken(1), template: long),
                // The same handle and template twice (a stale duplicate): sent once.
                .template("a-long-again", handle: apnsToken(1), template: long)
            )
            let named = try await f.engine.enqueueTemplate(
                tagExpression: nil, send: TemplateSend(properties: ["m": "hello"], templateName: "long")
            )
            try await f.deliverAll()
            #expect(f.apns.sent.map { ReceiptIDs.removed(from: $0.body) } == [#"{"aps":{"alert":"hello"}}"#])
            let namedRecord = try await f.stored(named.id)
            #expect(namedRecord.counts.count(.success, .apns) == 1)
            #expect(namedRecord.counts.count(.skipped, .apns) == 1)

            let all = try await f.engine.enqueueTemplate(tagExpression: nil, send: TemplateSend(properties: ["m": "hello"]))
            try await f.deliverAll()
            #expect(f.apns.sent.dropFirst().map { ReceiptIDs.removed(from: $0.body) }.sorted() == [#"{"aps":{"alert":"hel"}}"#, #"{"aps":{"alert":"hello"}}"#])
            #expect(try await f.stored(all.id).counts.count(.success, .apns) == 2)

            let none = try await f.engine.enqueueTemplate(tagExpression: nil, send: TemplateSend(properties: [:], templateName: "other"))
            try await f.deliverAll()
            #expect(try await f.stored(none.id).state == .noTargetFound)
        }
    }

    @Test func nativeSendsReachNativeRegistrationsAndTemplateSendsTemplateRegistrations() async throws {
        try await HubFixture.with { f in
            let template = RegistrationTemplate(body: #"{"aps":{"alert":"$(m)"}}"#)
            try await f.register(
                .apns(1, tags: ["t"]),
                .template("tpl", handle: apnsToken(2), tags: ["t"], template: template)
            )
            let payload = try PlatformPayload.hubNative(
                platform: .apns, legacyGCM: false, body: Data(#"{"aps":{"alert":"native"}}"#.utf8), headers: []
            )
            let native = try await f.engine.enqueue(tagExpression: "t", payloads: [payload])
            try await f.deliverAll()
            #expect(f.apns.sent.map(\.handle) == [apnsToken(1)])
            #expect(try await f.stored(native.id).counts.total == 1)

            let templated = try await f.engine.enqueueTemplate(tagExpression: "t", send: TemplateSend(properties: ["m": "tpl"]))
            try await f.deliverAll()
            #expect(f.apns.sent.map(\.handle) == [apnsToken(1), apnsToken(2)])
            #expect(f.apns.sent.last.map { ReceiptIDs.removed(from: $0.body) } == #"{"aps":{"alert":"tpl"}}"#)
            #expect(try await f.stored(templated.id).counts.total == 1)
        }
    }

    @Test func everyPlatformRendersThroughItsNativeFormat() async throws {
        try await HubFixture.with { f in
            let fcm = RegistrationTemplate(body: #"{"message":{"data":{"m":"$(m)"}}}"#)
            let gcm = RegistrationTemplate(body: #"{"data":{"m":"$(m)"},"time_to_live":60}"#)
            let wns = RegistrationTemplate(
                body: #"<toast><visual><binding template="ToastGeneric"><text>$(m)</text></binding></visual></toast>"#,
                headers: [.init(name: "X-WNS-Type", value: "wns/toast")]
            )
            let web = RegistrationTemplate(body: #"{"title":"$(m)"}"#, headers: [.init(name: "TTL", value: "60")])
            let keys = WebPushKeys(
                p256dh: "BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM", auth: "tBHItJI5svbpez7KI4CCXg")
            try await f.register(
                .template("f1", platform: .fcm, handle: "fcm-token-1", template: fcm),
                .template("g1", platform: .fcm, handle: "gcm-token-1", template: gcm, legacyGCM: true),
                .template("w1", platform: .wns, handle: "https://wns.example.com/channel/1", template: wns),
                Registration(id: "b1", platform: .webpush, handle: "https://push.example.com/s/1", webPushKeys: keys, template: web)
            )
            let record = try await f.engine.enqueueTemplate(tagExpression: nil, send: TemplateSend(properties: ["m": "a<b"]))
            try await f.deliverAll()

            #expect(
                Set(f.fcm.sent.map { ReceiptIDs.removed(from: $0.body) }) == [
                    #"{"data":{"m":"a<b"}}"#,
                    #"{"android":{"ttl":"60s"},"data":{"m":"a<b"}}"#,
                ])
            #expect(
                f.wns.sent.map(\.body) == [
                    #"<toast><visual><binding template="ToastGeneric"><text>a&lt;b</text></binding></visual></toast>"#
                ])
            #expect(f.wns.sent.first?.headers["x-wns-type"] == "wns/toast")
            #expect(f.webPush.sent.map { ReceiptIDs.removed(from: $0.body) } == [#"{"title":"a<b"}"#])
            #expect(f.webPush.sent.first?.headers["ttl"] == "60")
            #expect(f.webPush.sent.first?.webPushKeys == keys)
            // Every rendering that can carries the notification's id; WNS's XML cannot.
            for body in f.fcm.sent.map(\.body) + f.webPush.sent.map(\.body) {
                #expect(ReceiptIDs.id(in: body) == record.id, "\(body)")
            }
            #expect(f.wns.sent.allSatisfy { ReceiptIDs.id(in: $0.body) == nil })
            #expect(try await f.stored(record.id).counts.total(.success) == 4)
        }
    }

    @Test func aTemplateThatDoesNotMakeAValidNotificationFailsForThatDeviceOnly() async throws {
        try await HubFixture.with { f in
            let good = RegistrationTemplate(body: #"{"aps":{"alert":"$(m)"}}"#)
            // Compiles, but renders to a JSON string where APNs needs an object.
            let notAnObject = RegistrationTemplate(body: #""$(m)""#)
            let tooBig = RegistrationTemplate(body: #"{"aps":{"alert":"$(big)"}}"#)
            // No X-WNS-Type and a root element that does not say which.
            let wnsUnknown = RegistrationTemplate(body: "<notification>$(m)</notification>")
            try await f.register(
                .template("r1", handle: apnsToken(1), template: good),
                .template("r2", handle: apnsToken(2), template: notAnObject),
                .template("r3", handle: apnsToken(3), template: tooBig),
                .template("r4", platform: .wns, handle: "https://wns.example.com/c/4", template: wnsUnknown)
            )
            let record = try await f.engine.enqueueTemplate(
                tagExpression: nil,
                send: TemplateSend(properties: ["m": "x", "big": String(repeating: "y", count: 5000)])
            )
            try await f.deliverAll()
            #expect(f.apns.sent.map(\.handle) == [apnsToken(1)])
            #expect(f.wns.sent.isEmpty)
            let counts = try await f.stored(record.id).counts
            #expect(counts.count(.success, .apns) == 1)
            #expect(counts.count(.invalidNotificationFormat, .apns) == 1)
            #expect(counts.count(.invalidNotificationSize, .apns) == 1)
            #expect(counts.count(.invalidNotificationFormat, .wns) == 1)
        }
    }

    @Test func aLiveActivityTemplateIsCheckedAsANativeLiveActivityPushIs() async throws {
        try await HubFixture.with { f in
            let headers = [PlatformPayload.Header(name: "apns-push-type", value: "liveactivity")]
            let update = RegistrationTemplate(
                name: "score",
                body: ##"{"aps":{"timestamp":"#(at)","event":"update","content-state":{"home":"#(home)","away":"#(away)"}}}"##,
                headers: headers)
            // Renders without a timestamp: ActivityKit would drop it.
            let noTimestamp = RegistrationTemplate(
                name: "score", body: ##"{"aps":{"event":"update","content-state":{"home":"#(home)"}}}"##, headers: headers)
            try await f.register(
                .template("la-1", handle: apnsToken(1), template: update),
                .template("la-2", handle: apnsToken(2), template: noTimestamp)
            )
            let record = try await f.engine.enqueueTemplate(
                tagExpression: nil, send: TemplateSend(properties: ["at": "1800000000", "home": "2", "away": "1"]))
            try await f.deliverAll()
            #expect(f.apns.sent.map(\.handle) == [apnsToken(1)])
            #expect(f.apns.sent.first?.body == #"{"aps":{"timestamp":1800000000,"event":"update","content-state":{"home":2,"away":1}}}"#)
            let counts = try await f.stored(record.id).counts
            #expect(counts.count(.success, .apns) == 1)
            #expect(counts.count(.invalidNotificationFormat, .apns) == 1)
        }
    }

    @Test func aPlatformWithoutProviderIsCounted() async throws {
        try await HubFixture.with(platforms: [.apns]) { f in
            let template = RegistrationTemplate(body: #"{"message":{"data":{"m":"$(m)"}}}"#)
            try await f.register(.template("f1", platform: .fcm, handle: "fcm-1", template: template))
            let record = try await f.engine.enqueueTemplate(tagExpression: nil, send: TemplateSend(properties: ["m": "x"]))
            try await f.deliverAll()
            #expect(try await f.stored(record.id).counts.count(.noProvider, .fcm) == 1)
        }
    }

    @Test func badTemplateSendsAreRefused() async throws {
        try await HubFixture.with { f in
            await expectHeraldError(.badRequest, containing: "1 to 200 characters") {
                _ = try await f.engine.enqueueTemplate(tagExpression: nil, send: TemplateSend(properties: [:], templateName: ""))
            }
            await expectHeraldError(.badRequest) {
                _ = try await f.engine.enqueueTemplate(tagExpression: "a &&", send: TemplateSend(properties: [:]))
            }
        }
    }
}
