import AsyncHTTPClient
import Foundation
import HeraldEmulator
import NIOHTTP1
import Testing

@Suite("Emulator control over HTTP (/_emulator/)")
struct EmulatorControlAPITests {
    @Test("APNs: register, send, read the inbox, inject a fault, unregister, stats")
    func apnsControl() async throws {
        try await APNsHarness.with { apns in
            let base = apns.emulator.baseURL + "/_emulator"
            let registered = try await apns.client.send(.POST, base + "/devices", body: #"{"topic":"\#(APNsHarness.topic)"}"#)
            #expect(registered.status == 200)
            #expect(registered.version == .http2)
            let token = try #require(try registered.json()["token"] as? String)
            #expect(token.count == 64)

            let noTopic = try await apns.client.send(.POST, base + "/devices", body: "{}")
            #expect(noTopic.status == 400)

            #expect(try await apns.send(token: token, payload: #"{"aps":{"alert":"one"}}"#).status == 200)
            let inbox = try await apns.client.send(.GET, base + "/devices/\(token)/notifications")
            #expect(inbox.status == 200)
            let notifications = try inbox.decode([ReceivedNotification].self)
            #expect(notifications.count == 1)
            #expect(notifications.first?.payload == #"{"aps":{"alert":"one"}}"#)
            #expect(notifications.first?.token == token)
            #expect(notifications.first?.headers["apns-topic"] == APNsHarness.topic)

            let fault = try await apns.client.send(
                .POST,
                base + "/faults",
                body: #"{"status":503,"reason":"ServiceUnavailable","retryAfter":3,"count":1}"#
            )
            #expect(fault.status == 200)
            let faulted = try await apns.send(token: token)
            #expect(faulted.status == 503)
            #expect(faulted.headers.first(name: "retry-after") == "3")
            #expect(try apns.reason(of: faulted) == "ServiceUnavailable")

            let badFault = try await apns.client.send(.POST, base + "/faults", body: #"{"status":"x"}"#)
            #expect(badFault.status == 400)

            let unregister = try await apns.client.send(.POST, base + "/devices/\(token)/unregister")
            #expect(unregister.status == 200)
            let gone = try await apns.send(token: token)
            #expect(gone.status == 410)
            #expect(try gone.json()["timestamp"] as? Int == Int(apns.clock.now.timeIntervalSince1970 * 1000))

            let stats = try await apns.client.send(.GET, base + "/stats")
            #expect(try stats.json()["accepted"] as? Int == 1)

            let unknown = try await apns.client.send(.GET, base + "/nothing")
            #expect(unknown.status == 404)
        }
    }

    @Test("the control API works over HTTP/1.1")
    func http1Control() async throws {
        try await APNsHarness.with(httpVersion: .http1Only) { apns in
            let registered = try await apns.client.send(
                .POST,
                apns.emulator.baseURL + "/_emulator/devices",
                body: #"{"topic":"\#(APNsHarness.topic)"}"#
            )
            #expect(registered.version == .http1_1)
            let token = try #require(try registered.json()["token"] as? String)
            #expect(try await apns.send(token: token).status == 200)
            let inbox = try await apns.client.send(.GET, apns.emulator.baseURL + "/_emulator/devices/\(token)/notifications")
            #expect(try inbox.decode([ReceivedNotification].self).count == 1)
        }
    }

    @Test("FCM: register a device over HTTP and read its inbox")
    func fcmControl() async throws {
        try await FCMHarness.with { fcm in
            let registered = try await fcm.client.send(.POST, fcm.emulator.baseURL + "/_emulator/devices")
            #expect(registered.status == 200)
            let token = try #require(try registered.json()["token"] as? String)
            let response = try await fcm.sendMessage(["token": token, "data": ["k": "v"]])
            #expect(response.status == 200)
            let inbox = try await fcm.client.send(.GET, fcm.emulator.baseURL + "/_emulator/devices/\(token)/notifications")
            let notifications = try inbox.decode([ReceivedNotification].self)
            #expect(notifications.count == 1)
            #expect(notifications.first?.headers.isEmpty == true)
        }
    }
}
