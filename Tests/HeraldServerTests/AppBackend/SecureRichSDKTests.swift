import Foundation
import HeraldClient
import HeraldCore
import HeraldEmulator
import HeraldServer
import Hummingbird
import HummingbirdTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The SDK against a live server, as an app and a backend use it: what the device receives
/// is parsed with ``IncomingNotification`` and fetched with the client.
@Suite struct SecureRichSDKTests {
    @Test func secureAndRichRoundTripThroughTheSDK() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.live) { client in
                let base = URL(string: "http://127.0.0.1:\(try #require(client.port))")!
                let setup = HeraldClient(baseURL: base)
                try await setup.signUp(username: "alice", password: "alice-password")
                try await setup.signUp(username: "bob", password: "bob-password")
                let alice = HeraldClient(baseURL: base)
                let bob = HeraldClient(baseURL: base)
                try await alice.signIn(username: "alice", password: "alice-password")
                try await bob.signIn(username: "bob", password: "bob-password")
                let aliceIPhone = herald.apns.registerDevice(topic: TestHerald.topic)
                let bobAndroid = herald.fcm.registerDevice()
                try await alice.register(handle: aliceIPhone, platform: .apns)
                try await bob.register(handle: bobAndroid, platform: .fcm)

                // Secure: bob → alice's iPhone.
                let secret = JSONValue.object([("account", .string("NL91 ABNA 0417 1643 00")), ("amount", .number(12.5))])
                let receipt = try await bob.sendSecure(to: "alice", payload: secret)
                #expect(receipt.notification.state == "Completed")
                #expect(receipt.notification.success == 1)
                let received = try #require(herald.apns.notifications(for: aliceIPhone).last)
                #expect(!received.payload.contains("ABNA"))
                guard case .secure(let id) = try IncomingNotification(json: Data(received.payload.utf8)) else {
                    Issue.record("not a secure notification: \(received.payload)")
                    return
                }
                #expect(id == receipt.secureID)
                let first = try await alice.fetchSecurePayload(id: id)
                #expect(first == SecurePayload(id: id, payload: secret, read: false))
                #expect(try await alice.fetchSecurePayload(id: id).read)
                await #expect(throws: HeraldClientError.self) { try await bob.fetchSecurePayload(id: id) }
                do {
                    _ = try await bob.fetchSecurePayload(id: id)
                } catch let error as HeraldClientError {
                    #expect(error.status == 404)
                }

                // Rich: alice uploads a picture and sends it to bob's Android phone, alert style.
                // Larger than the 64 KiB JSON bodies are limited to: uploads stream.
                let picture = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
                let upload = try await alice.uploadRich(picture, type: "image/jpeg")
                #expect(upload.type == "image/jpeg" && upload.size == picture.count)
                let sent = try await alice.sendRich(to: "bob", richID: upload.id, message: "Our new kitchen", style: .alert)
                #expect(sent.richID == upload.id)
                #expect(sent.notification.success == 1)
                let message = try #require(herald.fcm.notifications(for: bobAndroid).last)
                guard case .rich(let richID, let type, let text, let url) = try IncomingNotification(json: Data(message.payload.utf8)) else {
                    Issue.record("not a rich notification: \(message.payload)")
                    return
                }
                #expect(richID == upload.id && type == "image/jpeg" && text == "Our new kitchen")
                #expect(url == base.absoluteString + "/api/notifications/\(upload.id)")
                let content = try await bob.fetchRichContent(id: richID)
                #expect(content.data == picture)
                #expect(content.type == "image/jpeg")

                // Someone who was not sent it gets 404.
                try await setup.signUp(username: "carol", password: "carol-password")
                let carol = HeraldClient(baseURL: base)
                try await carol.signIn(username: "carol", password: "carol-password")
                do {
                    _ = try await carol.fetchRichContent(id: richID)
                    Issue.record("carol fetched content not sent to her")
                } catch let error as HeraldClientError {
                    #expect(error.status == 404)
                }
            }
        }
    }
}
