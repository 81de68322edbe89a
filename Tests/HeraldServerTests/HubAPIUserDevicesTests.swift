import Foundation
import HeraldClient
import HeraldCore
import HeraldEmulator
import HeraldHub
import HeraldHubAPIUserDevices
import HeraldHubWire
import HeraldSQLite
import HeraldServer
import HeraldStore
import HeraldTestSupport
import Hummingbird
import HummingbirdTesting
import Logging
import Testing

/// The app backend of one Herald on the hub API of another: the layering works end to end.
@Suite struct HubAPIUserDevicesTests {
    /// Herald A runs the app backend (accounts, notify-users) with a ``HubAPIUserDevices`` over
    /// Herald B's hub API (TLS, the generated CA). Devices register through A; their
    /// registrations live in B; a notify sent through A reaches the devices through B.
    @Test func theNotifyUsersFlowRunsOnAnotherHeraldsHubAPI() async throws {
        try await HubTestServer.withServer { hubServer in
            let devices = HubAPIUserDevices(client: try hubServer.client(.tls))
            try await TestHerald.withHerald { backend in
                var logger = Logger(label: "test.backend")
                logger.logLevel = .warning
                let app = buildApplication(
                    hubs: backend.registry, devices: devices, appStore: backend.store, configuration: backend.server, logger: logger
                )
                try await app.test(.live) { client in
                    let base = URL(string: "http://127.0.0.1:\(try #require(client.port))")!
                    // The devices are B's emulated devices: B delivers.
                    let aliceIPhone = hubServer.herald.apns.registerDevice(topic: TestHerald.topic)
                    let aliceAndroid = hubServer.herald.fcm.registerDevice()
                    let bobIPhone = hubServer.herald.apns.registerDevice(topic: TestHerald.topic)

                    let (a1, a2, b1) = try await signInAliceTwiceAndBob(at: base)
                    let aliceIPhoneID = try await a1.register(handle: aliceIPhone, platform: .apns, tags: ["news"])
                    try await a2.register(handle: aliceAndroid, platform: .fcm)
                    try await b1.register(handle: bobIPhone, platform: .apns)

                    // The registrations are B's, with the tags A set; A's own hub has none.
                    let stored = try #require(try await hubServer.engine().store.registration(id: aliceIPhoneID))
                    #expect(stored.handle == aliceIPhone && stored.tags == ["news", "username:alice"])
                    #expect(try await backend.store.registrationCount() == 0)

                    // bob notifies alice on every platform: two of her devices get it, his does not.
                    let outcome = try await b1.notify(user: "alice", message: "Dinner at 8?")
                    #expect(outcome.state == "Completed")
                    #expect(outcome.success == 2 && outcome.targets == 2, "\(outcome.outcomes)")
                    #expect(outcome.outcomes.counts[.apns]?[.success] == 1 && outcome.outcomes.counts[.fcm]?[.success] == 1)
                    #expect(Set(outcome.platforms) == ["apns", "fcm", "wns", "webpush"])
                    let apns = try #require(hubServer.herald.apns.notifications(for: aliceIPhone).last)
                    #expect(ReceiptIDs.removed(from: apns.payload) == #"{"aps":{"alert":"From bob: Dinner at 8?"}}"#)
                    #expect(apns.headers["apns-push-type"] == "alert")
                    let fcm = try #require(hubServer.herald.fcm.notifications(for: aliceAndroid).last)
                    let fcmJSON = try JSONDecoder().decode(JSONValue.self, from: Data(fcm.payload.utf8))
                    #expect(fcmJSON["data"]?["message"] == .string("From bob: Dinner at 8?"))
                    #expect(hubServer.herald.apns.notifications(for: bobIPhone).isEmpty)

                    // Alice's iPhone confirms through A: B counts it, once; bob cannot confirm
                    // with her registration.
                    let id = try #require(ReceiptIDs.id(in: apns.payload))
                    try await a1.acknowledge(id)
                    try await a1.acknowledge(id)
                    #expect(try await hubServer.engine().confirmedCounts(notificationID: id) == [.apns: 1])
                    await #expect(throws: HeraldError.notFound("no registration with id \(aliceIPhoneID)")) {
                        try await devices.confirm([id], registrationID: aliceIPhoneID, user: "bob")
                    }

                    // A registration B no longer has: B's 410 reaches the device through A,
                    // which gets a new id and registers again.
                    try await hubServer.client(.tls).deleteRegistration(id: aliceIPhoneID)
                    let renewed = try await a1.register(handle: aliceIPhone, platform: .apns, tags: ["news"])
                    #expect(renewed != aliceIPhoneID)
                    #expect(try await hubServer.engine().store.registration(id: renewed)?.tags == ["news", "username:alice"])

                    // Unregistering deletes it on B.
                    try await a1.unregister()
                    #expect(try await hubServer.engine().store.registration(id: renewed) == nil)

                    // A backend whose key may not send is a server problem (503), not the
                    // caller's 401 or 403.
                    let listenOnly = HubAPIUserDevices(client: try hubServer.client(.tls, rule: SharedAccessRule.defaultListenRuleName))
                    let refused = await #expect(throws: HeraldError.self) {
                        let content = try NotificationContent.notifyUser(from: "bob", message: "hi").payload(for: .apns)
                        _ = try await listenOnly.send(SendRequest(target: .user("alice"), content: .native([content])), wait: .zero)
                    }
                    #expect(refused?.code == .unavailable)
                    #expect(refused?.message.contains("Send") == true)
                }
            }
        }
    }

    /// A send repeated under its idempotency key reaches each device once through the other
    /// hub; the same key with another message is the hub's 422; another user's same key is
    /// another send.
    @Test func aRepeatedSendUnderItsKeyReachesTheOtherHubsDevicesOnce() async throws {
        try await HubTestServer.withServer { hubServer in
            let devices = HubAPIUserDevices(client: try hubServer.client(.tls))
            let phone = hubServer.herald.apns.registerDevice(topic: TestHerald.topic)
            let otherPhone = hubServer.herald.apns.registerDevice(topic: TestHerald.topic)
            for (user, handle) in [("alice", phone), ("carol", otherPhone)] {
                let id = try await devices.newRegistrationID()
                _ = try await devices.saveRegistration(Registration(id: id, platform: .apns, handle: handle, tags: ["username:\(user)"]), user: user)
            }
            func send(_ message: String, to user: String) async throws -> SendResult {
                let payload = try NotificationContent.notifyUser(from: "bob", message: message).payload(for: .apns)
                let key = try IdempotencyKey("dinner", scope: IdempotencyKey.userScope(user), digest: "d")
                return try await devices.send(
                    SendRequest(target: .user(user), content: .native([payload]), options: .init(idempotencyKey: key)), wait: .seconds(10)
                )
            }
            let first = try await send("Dinner at 8?", to: "alice")
            let again = try await send("Dinner at 8?", to: "alice")
            #expect(again.record.id == first.record.id, "the hub answered the repeat with the first notification")
            #expect(hubServer.herald.apns.notifications(for: phone).count == 1)

            let refused = await #expect(throws: HeraldError.self) { _ = try await send("Dinner at 9?", to: "alice") }
            #expect(refused?.code == .unprocessableContent, "\(String(describing: refused))")
            #expect(hubServer.herald.apns.notifications(for: phone).count == 1)

            let carol = try await send("Dinner at 8?", to: "carol")
            #expect(carol.record.id != first.record.id)
            #expect(hubServer.herald.apns.notifications(for: otherPhone).count == 1)
            #expect(HubAPIUserDevices.hubKey(for: try IdempotencyKey("k", scope: "user:a", digest: "d"), platform: .apns).count == 71)
        }
    }

    /// A hub that cannot be reached makes the app backend answer 503, not 500.
    @Test func anUnreachableHubIsUnavailable() async throws {
        let nowhere = try NotificationHubClient(
            connectionString: "Endpoint=http://127.0.0.1:1/;SharedAccessKeyName=DefaultFullSharedAccessSignature;SharedAccessKey=a2V5",
            hubName: "hub"
        )
        let error = await #expect(throws: HeraldError.self) { try await HubAPIUserDevices(client: nowhere).newRegistrationID() }
        #expect(error?.code == .unavailable)
    }

    /// Each platform's payload becomes the hub API's native notification for it.
    @Test func payloadsBecomeNativeHubNotifications() throws {
        let apns = try HubAPIUserDevices.notification(
            for: PlatformPayload(
                platform: .apns, body: Data(#"{"aps":{}}"#.utf8),
                headers: [.init(name: "apns-push-type", value: "background"), .init(name: "x-other", value: "dropped")]
            )
        )
        #expect(apns.format == .apple && apns.headers == ["apns-push-type": "background"] && apns.body == Data(#"{"aps":{}}"#.utf8))
        let fcm = try HubAPIUserDevices.notification(for: PlatformPayload(platform: .fcm, body: Data(#"{"data":{"a":"b"}}"#.utf8)))
        #expect(fcm.format == .fcmV1 && String(decoding: fcm.body, as: UTF8.self) == #"{"message":{"data":{"a":"b"}}}"#)
        let wns = try HubAPIUserDevices.notification(
            for: PlatformPayload(platform: .wns, body: Data("id".utf8), headers: [.init(name: "X-WNS-Type", value: "wns/raw")])
        )
        #expect(wns.format == .windows && wns.contentType == "application/octet-stream" && wns.headers == ["X-WNS-Type": "wns/raw"])
        let web = try HubAPIUserDevices.notification(
            for: PlatformPayload(platform: .webpush, body: Data("{}".utf8), headers: [.init(name: "TTL", value: "60")])
        )
        #expect(web.format == .browser && web.headers == ["TTL": "60"])
    }

    /// The sends of one notify are reported as one: the first id, counts summed, the worst state.
    @Test func sendsMergeIntoOneRecord() {
        func details(_ state: NotificationState, _ platform: Platform, success: Int) -> NotificationDetails {
            var counts = OutcomeCounts()
            if success > 0 { counts.add(.success, platform: platform, count: success) }
            return NotificationDetails(id: UUID().uuidString, location: "", state: state, counts: counts)
        }
        let done = HubAPIUserDevices.merge(
            id: "first", tagExpression: "username:alice", payloads: [],
            details: [details(.completed, .apns, success: 2), details(.noTargetFound, .wns, success: 0), details(.completed, .fcm, success: 1)],
            enqueuedAt: Date()
        )
        #expect(done.id == "first" && done.state == .completed && done.counts.total(.success) == 3)
        #expect(done.counts.counts[.apns]?[.success] == 2 && done.counts.counts[.fcm]?[.success] == 1)
        let pending = HubAPIUserDevices.merge(
            id: "first", tagExpression: "t", payloads: [],
            details: [details(.completed, .apns, success: 1), details(.processing, .fcm, success: 0)], enqueuedAt: Date()
        )
        #expect(pending.state == .processing && pending.endedAt == nil)
        let failed = HubAPIUserDevices.merge(
            id: "first", tagExpression: "t", payloads: [],
            details: [details(.abandoned, .apns, success: 0), details(.processing, .fcm, success: 0)], enqueuedAt: Date()
        )
        #expect(failed.state == .abandoned)
        let nobody = HubAPIUserDevices.merge(
            id: "first", tagExpression: "t", payloads: [], details: [details(.noTargetFound, .apns, success: 0)], enqueuedAt: Date()
        )
        #expect(nobody.state == .noTargetFound)
    }
}
