import Foundation
import HeraldClient
import HeraldCore
import HeraldEmulator
import HeraldServer
import Hummingbird
import HummingbirdTesting
import Testing

/// The three flows of the design — notify users, secure push, rich push — for an APNs, an
/// FCM, a WNS and a Web Push device of one user, through the SDK over a live server, with
/// each device handling what it received as an app would.
@Suite struct ThreeFlowsEveryPlatformTests {
    /// A simulated device: how it registers, and what its push service delivered to it.
    struct DeviceUnderTest {
        var name: String
        var platform: Platform
        var handle: String
        var keys: WebPushKeys?
        var received: @Sendable () -> [ReceivedNotification]

        /// The last notification as the app sees it: APNs userInfo and FCM data maps, WNS raw
        /// and toast bodies, Web Push plaintext.
        func lastIncoming() throws -> IncomingNotification {
            let last = try #require(received().last, "\(name) received nothing")
            var body = Data(last.payload.utf8)
            if platform == .wns, last.headers["x-wns-type"] == "wns/raw" {
                body = try #require(Data(base64Encoded: last.payload))
            }
            if platform == .wns, last.headers["x-wns-type"] == "wns/toast" {
                return .plain(title: nil, body: last.payload)
            }
            return try IncomingNotification(json: body)
        }
    }

    @Test func everyFlowReachesEveryPlatform() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.live) { client in
                let base = URL(string: "http://127.0.0.1:\(try #require(client.port))")!
                let subscription = herald.webPush.subscribe()
                let apnsToken = herald.apns.registerDevice(topic: TestHerald.topic)
                let fcmToken = herald.fcm.registerDevice()
                let channel = herald.wns.registerChannel()
                let devices = [
                    DeviceUnderTest(name: "iPhone", platform: .apns, handle: apnsToken) { herald.apns.notifications(for: apnsToken) },
                    DeviceUnderTest(name: "Android", platform: .fcm, handle: fcmToken) { herald.fcm.notifications(for: fcmToken) },
                    DeviceUnderTest(name: "Windows", platform: .wns, handle: channel) { herald.wns.notifications(for: channel) },
                    DeviceUnderTest(name: "browser", platform: .webpush, handle: subscription.endpoint, keys: subscription.keys) {
                        herald.webPush.notifications(for: subscription)
                    },
                ]

                let bob = HeraldClient(baseURL: base)
                try await bob.signUp(username: "bob", password: "bob-password")
                try await bob.signUp(username: "alice", password: "alice-password")
                try await bob.signIn(username: "bob", password: "bob-password")
                var clients: [HeraldClient] = []
                for device in devices {
                    let app = HeraldClient(baseURL: base)
                    try await app.signIn(username: "alice", password: "alice-password")
                    try await app.register(handle: device.handle, platform: device.platform, webPushKeys: device.keys)
                    clients.append(app)
                }

                // 1. Notify users.
                let plain = try await bob.notify(user: "alice", message: "Dinner at 8?")
                #expect(plain.success == 4, "\(plain.outcomes)")
                for device in devices {
                    let text = try #require(device.received().last?.payload, "\(device.name)")
                    #expect(text.contains("From bob: Dinner at 8?"), "\(device.name): \(text)")
                }

                // 2. Secure push: only the id travels; each device fetches the payload.
                let secret = JSONValue.object([("pin", .string("8461-secret"))])
                let secure = try await bob.sendSecure(to: "alice", payload: secret)
                #expect(secure.notification.success == 4, "\(secure.notification.outcomes)")
                for (device, app) in zip(devices, clients) {
                    #expect(!(device.received().last?.payload.contains("8461-secret") ?? true), "\(device.name) saw the secret")
                    let incoming = try device.lastIncoming()
                    #expect(incoming == .secure(id: secure.secureID), "\(device.name): \(incoming)")
                    let fetched = try await app.fetchSecurePayload(id: secure.secureID)
                    #expect(fetched.payload == secret)
                }

                // 3. Rich push: an image; each device fetches the bytes by id.
                let image = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + (0..<2048).map { UInt8($0 % 251) })
                let upload = try await bob.uploadRich(image, type: "image/png")
                let rich = try await bob.sendRich(to: "alice", richID: upload.id, message: "Look at this")
                #expect(rich.notification.success == 4, "\(rich.notification.outcomes)")
                for (device, app) in zip(devices, clients) {
                    guard case .rich(let id, let type, let message, _) = try device.lastIncoming() else {
                        Issue.record("\(device.name) did not get a rich notification")
                        continue
                    }
                    #expect(id == upload.id && type == "image/png" && message == "Look at this", "\(device.name)")
                    let content = try await app.fetchRichContent(id: id)
                    #expect(content.data == image && content.type == "image/png")
                }

                // Nobody else can read either.
                let mallory = HeraldClient(baseURL: base)
                try await mallory.signUp(username: "mallory", password: "mallory-password")
                try await mallory.signIn(username: "mallory", password: "mallory-password")
                await #expect(throws: HeraldClientError.self) { try await mallory.fetchSecurePayload(id: secure.secureID) }
                await #expect(throws: HeraldClientError.self) { try await mallory.fetchRichContent(id: upload.id) }
            }
        }
    }
}
