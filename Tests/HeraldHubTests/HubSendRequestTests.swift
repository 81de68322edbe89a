import Foundation
import HeraldCore
import HeraldHub
import HeraldTestSupport
import Testing

/// One send request in, one delivery run out: what every kind of send has in common.
@Suite("Hub: send requests and delivery runs")
struct HubSendRequestTests {
    static let apnsPayload = PlatformPayload(platform: .apns, body: Data(#"{"aps":{"alert":"hi"}}"#.utf8))
    static let keys = WebPushKeys(
        p256dh: "BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM", auth: "tBHItJI5svbpez7KI4CCXg"
    )

    @Test func aSendToAUserReachesThatUsersDevicesOnly() async throws {
        try await HubFixture.with { f in
            try await f.register(.apns(1, tags: ["username:ann"]), .apns(2, tags: ["username:bob"]), .apns(3, tags: ["username:ann", "news"]))
            let sent = try await f.engine.send(SendRequest(target: .user("ann"), content: .native([Self.apnsPayload])))
            #expect(sent.results.isEmpty, "a send through the queue reports no outcome yet")
            #expect(sent.record.tagExpression == "username:ann")
            try await f.deliverAll()
            #expect(f.apns.sent.map(\.handle).sorted() == [apnsToken(1), apnsToken(3)])
        }
    }

    @Test func optionsBecomeThePlatformsOwnHeadersUnlessThePayloadHasThem() async throws {
        try await HubFixture.with { f in
            let device = DirectTarget(platform: .webpush, handle: "https://push.example.com/1", webPushKeys: Self.keys)
            let options = SendRequest.Options(timeToLive: .seconds(60), urgency: "High")
            let plain = PlatformPayload(platform: .webpush, body: Data("text".utf8))
            _ = try await f.engine.send(SendRequest(target: .devices([device]), content: .native([plain]), options: options))
            let own = PlatformPayload(platform: .webpush, body: Data("own".utf8), headers: [.init(name: "TTL", value: "5")])
            _ = try await f.engine.send(SendRequest(target: .devices([device]), content: .native([own]), options: options))
            let before = Int(Date().timeIntervalSince1970)
            _ = try await f.engine.send(
                SendRequest(target: .devices([DirectTarget(platform: .apns, handle: apnsToken(1))]), content: .native([Self.apnsPayload]), options: options)
            )
            try await f.deliverAll()
            let web = f.webPush.sent.sorted { $0.body < $1.body }
            #expect(web.map(\.body) == ["own", "text"])
            #expect(web.map { $0.headers["ttl"] } == ["5", "60"])
            #expect(web.map { $0.headers["urgency"] } == ["high", "high"])
            let expiration = try #require(f.apns.sent.first?.headers["apns-expiration"].flatMap { Int($0) })
            #expect((before + 60...Int(Date().timeIntervalSince1970) + 60).contains(expiration))
        }
    }

    @Test func priorityAndCollapseIDBecomeEachPlatformsOwnTermsUnlessThePayloadHasThem() async throws {
        try await HubFixture.with { f in
            let options = SendRequest.Options(timeToLive: .seconds(90), priority: .high, collapseID: "score-42")
            let apns = DirectTarget(platform: .apns, handle: apnsToken(1))
            _ = try await f.engine.send(SendRequest(target: .devices([apns]), content: .native([Self.apnsPayload]), options: options))
            let ownPriority = PlatformPayload(
                platform: .apns, body: Data(#"{"aps":{"alert":"own"}}"#.utf8), headers: [.init(name: "apns-priority", value: "5")])
            _ = try await f.engine.send(
                SendRequest(target: .devices([DirectTarget(platform: .apns, handle: apnsToken(2))]), content: .native([ownPriority]), options: options))
            let fcm = PlatformPayload(
                platform: .fcm, body: Data(#"{"message":{"android":{"priority":"NORMAL"},"data":{"n":"1"}}}"#.utf8))
            _ = try await f.engine.send(
                SendRequest(target: .devices([DirectTarget(platform: .fcm, handle: "fcm-1")]), content: .native([fcm]), options: options))
            let wns = PlatformPayload(platform: .wns, body: Data("<toast/>".utf8), headers: [.init(name: "X-WNS-Type", value: "wns/toast")])
            _ = try await f.engine.send(
                SendRequest(target: .devices([DirectTarget(platform: .wns, handle: "https://wns.example.com/1")]), content: .native([wns]), options: options))
            let web = DirectTarget(platform: .webpush, handle: "https://push.example.com/1", webPushKeys: Self.keys)
            _ = try await f.engine.send(
                SendRequest(target: .devices([web]), content: .native([PlatformPayload(platform: .webpush, body: Data("text".utf8))]), options: options))
            try await f.deliverAll()

            let sentAPNs = f.apns.sent.sorted { $0.handle < $1.handle }
            #expect(sentAPNs.map { $0.headers["apns-priority"] } == ["10", "5"])
            #expect(sentAPNs.map { $0.headers["apns-collapse-id"] } == ["score-42", "score-42"])
            // The payload's own priority stays; the other options are added to message.android.
            let sentFCM = try #require(f.fcm.sent.first)
            #expect(sentFCM.body.contains(#""android":{"collapse_key":"score-42","priority":"NORMAL","ttl":"90s"}"#))
            #expect(sentFCM.body.contains(#""data":{"n":"1"}"#))
            #expect(f.wns.sent.first?.headers["x-wns-tag"] == "score-42")
            #expect(f.wns.sent.first?.headers["x-wns-ttl"] == "90")
            #expect(f.webPush.sent.first?.headers["urgency"] == "high")
            #expect(f.webPush.sent.first?.headers["topic"] == "score-42")
        }
    }

    @Test func optionsThatAPlatformCannotSayAreRefusedBeforeAnythingIsStored() async throws {
        try await HubFixture.with { f in
            let web = DirectTarget(platform: .webpush, handle: "https://push.example.com/1", webPushKeys: Self.keys)
            let webPayload = PlatformPayload(platform: .webpush, body: Data("text".utf8))
            await expectHeraldError(.badRequest, containing: "Web Push collapse id (Topic) is at most 32 characters") {
                _ = try await f.engine.send(
                    SendRequest(target: .devices([web]), content: .native([webPayload]), options: .init(collapseID: "has spaces")))
            }
            let apns = DirectTarget(platform: .apns, handle: apnsToken(1))
            await expectHeraldError(.badRequest, containing: "APNs takes at most 64") {
                _ = try await f.engine.send(
                    SendRequest(target: .devices([apns]), content: .native([Self.apnsPayload]), options: .init(collapseID: String(repeating: "x", count: 65))))
            }
            let background = PlatformPayload(
                platform: .apns, body: Data(#"{"aps":{"content-available":1}}"#.utf8), headers: [.init(name: "apns-push-type", value: "background")])
            await expectHeraldError(.badRequest, containing: "background APNs push is sent at priority normal") {
                _ = try await f.engine.send(SendRequest(target: .devices([apns]), content: .native([background]), options: .init(priority: .high)))
            }
            let fcm = DirectTarget(platform: .fcm, handle: "fcm-1")
            let oddAndroid = PlatformPayload(platform: .fcm, body: Data(#"{"message":{"android":"high"}}"#.utf8))
            await expectHeraldError(.badRequest, containing: "message.android must be an object") {
                _ = try await f.engine.send(SendRequest(target: .devices([fcm]), content: .native([oddAndroid]), options: .init(priority: .high)))
            }
            let delivered = try await f.deliverAll()
            #expect(delivered == 0)
            #expect(f.apns.sent.isEmpty && f.webPush.sent.isEmpty && f.fcm.sent.isEmpty)
        }
    }

    @Test func aPriorityIsParsedFromItsName() throws {
        #expect(throws: HeraldError.self) { try SendRequest.Priority(parsing: "urgent") }
        let high: SendRequest.Priority = try SendRequest.Priority(parsing: " High ")
        #expect(high == .high)
    }

    @Test func requestsThatCannotBeSentAreRefusedBeforeAnythingIsStored() async throws {
        try await HubFixture.with { f in
            try await f.register(.apns(1))
            let native = SendRequest.Content.native([Self.apnsPayload])
            await expectHeraldError(.badRequest, containing: "1 to 10 registrations, not 11") {
                _ = try await f.engine.send(SendRequest(target: .test(nil, limit: 11), content: native))
            }
            await expectHeraldError(.badRequest, containing: "1 to 10 registrations, not 0") {
                _ = try await f.engine.send(SendRequest(target: .test(nil, limit: 0), content: native))
            }
            await expectHeraldError(.badRequest, containing: "cannot be scheduled") {
                _ = try await f.engine.send(
                    SendRequest(target: .registration("reg-00001"), content: native, options: .init(scheduledAt: Date().addingTimeInterval(60)))
                )
            }
            await expectHeraldError(.badRequest, containing: "one native payload") {
                _ = try await f.engine.send(
                    SendRequest(target: .devices([DirectTarget(platform: .apns, handle: apnsToken(1))]), content: .template(TemplateSend(properties: [:])))
                )
            }
            await expectHeraldError(.notFound) {
                _ = try await f.engine.send(SendRequest(target: .registration("reg-99999"), content: native))
            }
            #expect(try await f.deliverAll() == 0)
            #expect(f.apns.sent.isEmpty)
        }
    }
}
