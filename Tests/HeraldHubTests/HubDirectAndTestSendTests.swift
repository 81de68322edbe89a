import Foundation
import HeraldCore
import HeraldHub
import HeraldSQLite
import HeraldStore
import HeraldTestSupport
import Testing

@Suite("Hub: direct and test sends")
struct HubDirectAndTestSendTests {
    static let apnsPayload = PlatformPayload(platform: .apns, body: Data(#"{"aps":{"alert":"hi"}}"#.utf8))

    @Test func aDirectSendReachesOneHandleThatNoRegistrationHolds() async throws {
        try await HubFixture.with { f in
            let shouted = "<" + apnsToken(7).uppercased().enumerated().map { "\($0.offset % 8 == 0 ? " " : "")\($0.element)" }.joined() + ">"
            let record = try await f.engine.enqueueDirect(payload: Self.apnsPayload, targets: [DirectTarget(platform: .apns, handle: shouted)])
            #expect(record.directTargets == [DirectTarget(platform: .apns, handle: apnsToken(7))], "the handle is normalized")
            #expect(record.tagExpression == nil)
            try await f.deliverAll()
            #expect(f.apns.sent.map(\.handle) == [apnsToken(7)])
            #expect(f.apns.sent.first.map { ReceiptIDs.removed(from: $0.body) } == #"{"aps":{"alert":"hi"}}"#)
            let stored = try await f.stored(record.id)
            #expect(stored.state == .completed)
            #expect(stored.directTargets == record.directTargets)
        }
    }

    @Test func aBatchCountsEachDeviceOnceAndReportsExpiredChannels() async throws {
        try await HubFixture.with(configure: { $0.pageSize = 2 }) { f in
            // A registration with an expired handle must stay: a direct send deletes nothing.
            try await f.register(.apns(3))
            f.apns.expire(apnsToken(3))
            let targets = [1, 2, 1, 3].map { DirectTarget(platform: .apns, handle: apnsToken($0)) }
            let record = try await f.engine.enqueueDirect(payload: Self.apnsPayload, targets: targets)
            try await f.deliverAll()
            #expect(f.apns.sent.map(\.handle).sorted() == [apnsToken(1), apnsToken(2), apnsToken(3)])
            let counts = try await f.stored(record.id).counts
            #expect(counts.count(.success, .apns) == 2)
            #expect(counts.count(.skipped, .apns) == 1)
            #expect(counts.count(.expiredChannel, .apns) == 1)
            #expect(try await f.store.registration(id: "reg-00003") != nil)
        }
    }

    @Test func aDirectSendRecordsItsProgressPageByPage() async throws {
        try await HubFixture.with(configure: { $0.pageSize = 2 }) { f in
            let targets = (1...5).map { DirectTarget(platform: .apns, handle: apnsToken($0)) }
            let record = try await f.engine.enqueueDirect(payload: Self.apnsPayload, targets: targets)
            try await f.deliverAll()
            let progress = f.engine.deliveryLog.progress(notificationID: record.id)
            #expect(progress.map(\.reached) == [0, 2, 4, 5], "a sample at the start and one per page")
            #expect(progress.last?.perPlatform == [.apns: 5])
        }
    }

    @Test func aTestSendRecordsItsProgressAndItsDevicesOutcomes() async throws {
        try await HubFixture.with { f in
            try await f.register(.apns(1, tags: ["qa"]), .apns(2, tags: ["qa"]))
            let result = try await f.engine.testSend(tagExpression: "qa", payloads: [Self.apnsPayload], template: nil)
            #expect(result.results.map(\.outcome) == [.success, .success])
            #expect(f.engine.deliveryLog.progress(notificationID: result.record.id).last?.perPlatform == [.apns: 2])
            #expect(f.engine.deliveryLog.outcomes(registrationID: "reg-00001").first?.notificationID == result.record.id)
        }
    }

    @Test func aWebPushDirectSendCarriesTheSubscriptionKeys() async throws {
        try await HubFixture.with { f in
            let keys = WebPushKeys(
                p256dh: "BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM", auth: "tBHItJI5svbpez7KI4CCXg")
            let payload = PlatformPayload(platform: .webpush, body: Data("text".utf8))
            _ = try await f.engine.enqueueDirect(
                payload: payload, targets: [DirectTarget(platform: .webpush, handle: "https://push.example.com/1", webPushKeys: keys)]
            )
            try await f.deliverAll()
            #expect(f.webPush.sent.first?.webPushKeys == keys)
        }
    }

    @Test func badDirectSendsAreRefused() async throws {
        try await HubFixture.with { f in
            let one = DirectTarget(platform: .apns, handle: apnsToken(1))
            await expectHeraldError(.badRequest, containing: "1 to 1000 devices; this one has 0") {
                _ = try await f.engine.enqueueDirect(payload: Self.apnsPayload, targets: [])
            }
            await expectHeraldError(.badRequest, containing: "this one has 1001") {
                _ = try await f.engine.enqueueDirect(payload: Self.apnsPayload, targets: Array(repeating: one, count: 1001))
            }
            await expectHeraldError(.badRequest, containing: "device 2 is on fcm") {
                _ = try await f.engine.enqueueDirect(payload: Self.apnsPayload, targets: [one, DirectTarget(platform: .fcm, handle: "t")])
            }
            await expectHeraldError(.badRequest, containing: "the device: an APNs device token is hexadecimal") {
                _ = try await f.engine.enqueueDirect(payload: Self.apnsPayload, targets: [DirectTarget(platform: .apns, handle: "xyz")])
            }
            await expectHeraldError(.badRequest, containing: "p256dh and auth") {
                _ = try await f.engine.enqueueDirect(
                    payload: PlatformPayload(platform: .webpush, body: Data()),
                    targets: [DirectTarget(platform: .webpush, handle: "https://push.example.com/1")]
                )
            }
            await expectHeraldError(.badRequest, containing: "FCM v1 message") {
                _ = try await f.engine.enqueueDirect(
                    payload: PlatformPayload(platform: .fcm, body: Data("nope".utf8)),
                    targets: [DirectTarget(platform: .fcm, handle: "t")]
                )
            }
        }
    }

    @Test func aTestSendDeliversAtOnceToAtMostLimitDevicesAndStoresTheRecord() async throws {
        try await HubFixture.with(configure: { $0.pageSize = 4 }) { f in
            for n in 1...12 { try await f.register(.apns(n, tags: ["qa"])) }
            // A duplicate handle and a template registration are not among the results.
            try await f.register(Registration(id: "reg-00001-dup", platform: .apns, handle: apnsToken(1), tags: ["qa"]))
            try await f.register(
                .template("reg-00002-tpl", handle: apnsToken(2), tags: ["qa"], template: RegistrationTemplate(body: "{}"))
            )
            f.apns.expire(apnsToken(2))

            let result = try await f.engine.testSend(tagExpression: "qa", payloads: [Self.apnsPayload], template: nil)
            #expect(result.results.map(\.registration.id) == (1...10).map { String(format: "reg-%05d", $0) })
            #expect(result.results.map(\.outcome) == [.success, .expiredChannel] + Array(repeating: .success, count: 8))
            #expect(f.apns.sent.count == 10)
            #expect(result.record.state == .completed)
            #expect(result.record.counts.count(.success, .apns) == 9)
            #expect(result.record.counts.count(.expiredChannel, .apns) == 1)

            let stored = try await f.stored(result.record.id)
            #expect(stored.state == .completed)
            #expect(stored.counts == result.record.counts)
            #expect(stored.endedAt != nil)
            #expect(try await f.store.registration(id: "reg-00002") == nil, "an expired channel is removed")
            #expect(try await f.deliverAll() == 0, "a test send does not go through the queue")
        }
    }

    @Test func aTemplateTestSendAndOneThatFindsNobody() async throws {
        try await HubFixture.with { f in
            let template = RegistrationTemplate(name: "t", body: #"{"aps":{"alert":"$(m)"}}"#)
            try await f.register(.template("tpl-1", handle: apnsToken(1), template: template), .apns(2))
            let result = try await f.engine.testSend(
                tagExpression: nil, payloads: [], template: TemplateSend(properties: ["m": "x"]), limit: 5
            )
            #expect(result.results.map(\.registration.id) == ["tpl-1"])
            #expect(f.apns.sent.map { ReceiptIDs.removed(from: $0.body) } == [#"{"aps":{"alert":"x"}}"#])

            let nobody = try await f.engine.testSend(tagExpression: "missing", payloads: [Self.apnsPayload], template: nil)
            #expect(nobody.results.isEmpty)
            #expect(nobody.record.state == .noTargetFound)
            #expect(try await f.stored(nobody.record.id).state == .noTargetFound)
        }
    }
}
