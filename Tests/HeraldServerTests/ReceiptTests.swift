import Foundation
import HeraldClient
import HeraldCore
import HeraldEmulator
import HeraldHub
import HeraldHubWire
import HeraldMetrics
import HeraldTestSupport
import HummingbirdTesting
import Testing

/// Confirmed receipts on the wire: every payload the emulated push services deliver carries the
/// notification's id under `herald.id`; devices confirm through the hub API (Listen key, by
/// installation or by push channel) and the app backend (the user's registration); each device
/// counts once, and `GET /{hub}/messages/{id}` reports `Confirmed` beside the push services'
/// outcomes. Bad receipts are precise `4xx` and count nothing.
@Suite struct ReceiptTests {
    static let hub = HubTestServer.hubName
    static let version = HubTestServer.apiVersion

    static func confirm(_ server: HubTestServer, _ body: String, auth: WireAuth = .listen) async throws -> WireResponse {
        try await server.wire(
            .POST, "/\(hub)/receipts?\(version)", headers: [("Content-Type", "application/json")], body: Data(body.utf8), auth: auth
        )
    }

    static func putInstallation(_ server: HubTestServer, id: String, _ json: String) async throws {
        let response = try await server.wire(
            .PUT, "/\(hub)/installations/\(id)?\(version)",
            headers: [("Content-Type", "application/json")], body: Data(json.utf8), auth: .listen
        )
        try #require(response.status == 200, "PUT installation: \(response.status) \(response.text)")
    }

    @Test func devicesConfirmThroughTheHubAPIAndEachCountsOnce() async throws {
        try await HubTestServer.withServer { server in
            let herald = server.herald
            let apns = (0..<3).map { _ in herald.apns.registerDevice(topic: TestHerald.topic) }
            let fcm = herald.fcm.registerDevice()
            for (n, token) in apns.enumerated() {
                try await Self.putInstallation(
                    server, id: "ios-\(n)", #"{"installationId":"ios-\#(n)","platform":"apns","pushChannel":"\#(token)","tags":["fans"]}"#)
            }
            try await Self.putInstallation(
                server, id: "android-0", #"{"installationId":"android-0","platform":"fcmv1","pushChannel":"\#(fcm)","tags":["fans"]}"#)

            let apple = try await server.send(format: "apple", #"{"aps":{"alert":"Goal! 1-0"}}"#, tags: "fans", headers: [("apns-push-type", "alert")])
            let appleID = try server.acceptedID(apple)
            let android = try await server.send(format: "fcmv1", #"{"message":{"notification":{"title":"Goal! 1-0"}}}"#, tags: "fans")
            let androidID = try server.acceptedID(android)
            _ = try await server.finishedDetails(appleID)
            _ = try await server.finishedDetails(androidID)

            // What each device got carries its notification's id.
            for token in apns {
                let received = try #require(herald.apns.notifications(for: token).last)
                #expect(ReceiptIDs.id(in: received.payload) == appleID, "\(received.payload)")
                #expect(ReceiptIDs.removed(from: received.payload) == #"{"aps":{"alert":"Goal! 1-0"}}"#)
            }
            let message = try #require(herald.fcm.notifications(for: fcm).last)
            #expect(ReceiptIDs.id(in: message.payload) == androidID, "\(message.payload)")

            // Two iPhones confirm, one of them twice and once by its push channel; the Android
            // phone confirms by installation.
            for body in [
                #"{"notificationId":"\#(appleID)","installationId":"ios-0"}"#,
                #"{"notificationId":"\#(appleID)","installationId":"ios-1"}"#,
                #"{"notificationId":"\#(appleID)","installationId":"ios-1"}"#,
                // The token as some SDKs write it, in capitals: the same device.
                #"{"notificationIds":["\#(appleID)"],"platform":"apns","pushChannel":"\#(apns[1].uppercased())"}"#,
                #"{"notificationId":"\#(androidID)","installationId":"android-0"}"#,
            ] {
                let answer = try await Self.confirm(server, body)
                #expect(answer.status == 204, "\(body): \(answer.status) \(answer.text)")
            }
            let details = try await server.finishedDetails(appleID)
            #expect(HubAPISendTests.count(details, "ApnsOutcomeCounts") == 3)
            #expect(HubAPISendTests.count(details, "ApnsOutcomeCounts", "Confirmed") == 2)
            let androidDetails = try await server.finishedDetails(androidID)
            #expect(HubAPISendTests.count(androidDetails, "FcmV1OutcomeCounts", "Confirmed") == 1)

            // /metrics counts each device once.
            let page = String(decoding: herald.metrics.emit(), as: UTF8.self)
            #expect(page.contains(#"herald_receipts_total{hub="\#(Self.hub)",platform="apns"} 2"#), "\(page)")
            #expect(page.contains(#"herald_receipts_total{hub="\#(Self.hub)",platform="fcm"} 1"#), "\(page)")

            // The SDK reads them apart from the push services' outcomes.
            let read = try await server.client(.tls).notificationDetails(id: appleID)
            #expect(read.confirmed == [.apns: 2])
            #expect(read.counts.total(.success) == 3)
        }
    }

    /// The emulators' devices confirm what they receive, a share of them chosen by token: the
    /// hub's `Confirmed` count is exactly the number of confirming devices the send reached.
    @Test func emulatedDevicesThatConfirmAreCountedExactly() async throws {
        try await HubTestServer.withServer { server in
            let herald = server.herald
            let listen = try server.client(.urlSession, rule: SharedAccessRule.defaultListenRuleName)
            herald.apns.receipts.configure(DeviceReceipts.Configuration(hub: listen, fraction: 0.5))
            herald.fcm.receipts.configure(DeviceReceipts.Configuration(hub: listen, fraction: 0.5))
            let apns = (0..<40).map { _ in herald.apns.registerDevice(topic: TestHerald.topic) }
            let fcm = (0..<20).map { _ in herald.fcm.registerDevice() }
            for (n, token) in apns.enumerated() {
                try await Self.putInstallation(
                    server, id: "ios-\(n)", #"{"installationId":"ios-\#(n)","platform":"apns","pushChannel":"\#(token)","tags":["fans"]}"#)
            }
            for (n, token) in fcm.enumerated() {
                try await Self.putInstallation(
                    server, id: "android-\(n)", #"{"installationId":"android-\#(n)","platform":"fcmv1","pushChannel":"\#(token)","tags":["fans"]}"#)
            }
            let expectedAPNs = apns.filter { DeviceReceipts.confirms(token: $0, fraction: 0.5) }.count
            let expectedFCM = fcm.filter { DeviceReceipts.confirms(token: $0, fraction: 0.5) }.count
            #expect(expectedAPNs > 0 && expectedAPNs < apns.count, "the fraction picks some devices, not all")

            let apple = try server.acceptedID(
                try await server.send(format: "apple", #"{"aps":{"alert":"Goal!"}}"#, tags: "fans", headers: [("apns-push-type", "alert")]))
            let android = try server.acceptedID(try await server.send(format: "fcmv1", #"{"message":{"data":{"goal":"1-0"}}}"#, tags: "fans"))
            _ = try await server.finishedDetails(apple)
            _ = try await server.finishedDetails(android)
            try await eventually("every confirming device's receipt is posted") {
                herald.apns.receipts.counts.confirmed == expectedAPNs && herald.fcm.receipts.counts.confirmed == expectedFCM
            }
            #expect(herald.apns.receipts.counts.failed == 0 && herald.fcm.receipts.counts.failed == 0)
            let details = try await server.finishedDetails(apple)
            #expect(HubAPISendTests.count(details, "ApnsOutcomeCounts") == apns.count)
            #expect(HubAPISendTests.count(details, "ApnsOutcomeCounts", "Confirmed") == expectedAPNs)
            #expect(HubAPISendTests.count(try await server.finishedDetails(android), "FcmV1OutcomeCounts", "Confirmed") == expectedFCM)
        }
    }

    @Test func badReceiptsArePreciseAndCountNothing() async throws {
        try await HubTestServer.withServer { server in
            let token = server.herald.apns.registerDevice(topic: TestHerald.topic)
            try await Self.putInstallation(server, id: "ios-0", #"{"installationId":"ios-0","platform":"apns","pushChannel":"\#(token)","tags":["fans"]}"#)
            let id = try server.acceptedID(
                try await server.send(format: "apple", #"{"aps":{"alert":"x"}}"#, tags: "fans", headers: [("apns-push-type", "alert")])
            )
            _ = try await server.finishedDetails(id)
            let cases: [(String, Int, String)] = [
                (#"{"notificationId":"no-such-notification","installationId":"ios-0"}"#, 404, "no notification with id no-such-notification"),
                (#"{"notificationId":"\#(id)","installationId":"nobody"}"#, 404, "no installation with id nobody"),
                (
                    #"{"notificationId":"\#(id)","platform":"apns","pushChannel":"\#(String(repeating: "ab", count: 32))"}"#, 404,
                    "no apns registration has this push channel"
                ),
                (#"{"notificationId":"\#(id)","pushChannel":"\#(token)"}"#, 400, "goes with its platform"),
                (#"{"notificationId":"\#(id)"}"#, 400, "name the device"),
                (#"{"installationId":"ios-0"}"#, 400, "notificationId"),
                (#"{"notificationId":7,"installationId":"ios-0"}"#, 400, "notificationId is a string"),
                (#"{"notificationIds":[],"installationId":"ios-0"}"#, 400, "at least one"),
                (#"{"notificationId":"\#(id)","notificationIds":["\#(id)"],"installationId":"ios-0"}"#, 400, "not both"),
                ("not json", 400, "not valid JSON"),
            ]
            for (body, status, detail) in cases {
                let answer = try await Self.confirm(server, body)
                #expect(answer.status == status, "\(body): \(answer.status) \(answer.text)")
                #expect(answer.text.contains(detail), "\(body): \(answer.text)")
            }
            // Unsigned: refused before anything is read.
            #expect(try await Self.confirm(server, #"{"notificationId":"\#(id)","installationId":"ios-0"}"#, auth: .none).status == 401)
            let details = try await server.finishedDetails(id)
            #expect(HubAPISendTests.count(details, "ApnsOutcomeCounts", "Confirmed") == nil)
        }
    }

    @Test func aUsersDeviceConfirmsThroughTheAppBackend() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.live) { client in
                let base = URL(string: "http://127.0.0.1:\(try #require(client.port))")!
                let ann = try await signedUpClient("ann", at: base)
                let bob = try await signedUpClient("bob", at: base)
                let token = herald.apns.registerDevice(topic: TestHerald.topic)
                try await ann.register(handle: token, platform: .apns)
                let bobsRegistration = try await bob.register(handle: herald.apns.registerDevice(topic: TestHerald.topic), platform: .apns)

                let summary = try await bob.notify(user: "ann", message: "hello")
                let received = try #require(herald.apns.notifications(for: token).last)
                let id = try #require(ReceiptIDs.id(in: received.payload))
                #expect(id == summary.id)
                // The SDK confirms with the device's registration; a repeat counts once.
                try await ann.acknowledge(id)
                try await ann.acknowledge(id)
                #expect(try await herald.appHubEngine.confirmedCounts(notificationID: id) == [.apns: 1])
                // Another user's registration is not the caller's to confirm with.
                await #expect(throws: HeraldError.notFound("no registration with id \(bobsRegistration)")) {
                    try await herald.devices.confirm([id], registrationID: bobsRegistration, user: "ann")
                }
                let unknown = await #expect(throws: HeraldClientError.self) { try await ann.acknowledge("no-such-notification") }
                #expect(unknown?.status == 404)
                #expect(try await herald.appHubEngine.confirmedCounts(notificationID: id) == [.apns: 1])
            }
        }
    }
}
