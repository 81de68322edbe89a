import Foundation
import HeraldCore
import HeraldPush
import NIOCore
import Testing

@testable import HeraldHub

/// Where a notification carries its id for receipts (`herald.id`): first in an APNs or Web Push
/// JSON object, in an FCM message's data; never where it would break the payload or its limit.
@Suite struct ReceiptIDTests {
    static func text(_ bytes: [UInt8]?) -> String? { bytes.map { String(decoding: $0, as: UTF8.self) } }

    @Test func theIDIsTheFirstMemberOfAJSONObject() {
        #expect(
            Self.text(ReceiptID("n-1").inserted(into: Array(#"{"aps":{"alert":"x"}}"#.utf8), limit: 4096))
                == #"{"herald.id":"n-1","aps":{"alert":"x"}}"#)
        #expect(Self.text(ReceiptID("n-1").inserted(into: Array(" { } ".utf8), limit: 4096)) == #" {"herald.id":"n-1" } "#)
        // A quote or a backslash in an id stays valid JSON.
        let odd = Self.text(ReceiptID(#"a"b\c"#).inserted(into: Array("{}".utf8), limit: 4096))
        #expect(odd == #"{"herald.id":"a\"b\\c"}"#)
        let decoded = try? JSONSerialization.jsonObject(with: Data((odd ?? "").utf8)) as? [String: String]
        #expect(decoded?["herald.id"] == #"a"b\c"#)
    }

    @Test func aPayloadItCannotGoInIsLeftAsItIs() {
        // Not a JSON object; the sender's own key; over the limit.
        #expect(ReceiptID("n-1").inserted(into: Array("hello".utf8), limit: 4096) == nil)
        #expect(ReceiptID("n-1").inserted(into: Array("[1]".utf8), limit: 4096) == nil)
        #expect(ReceiptID("n-1").inserted(into: Array(#"{"herald.id":"mine"}"#.utf8), limit: 4096) == nil)
        let full = Array(("{\"a\":\"" + String(repeating: "x", count: 4080) + "\"}").utf8)
        #expect(ReceiptID("n-1").inserted(into: full, limit: 4096) == nil)
    }

    @Test func everyPlatformCarriesItWhereItsDeviceCanReadIt() throws {
        let apns = PushNotification(body: .bytes(ByteBuffer(string: #"{"aps":{"alert":"x"}}"#)), headers: [("apns-push-type", "alert")])
        #expect(Self.body(apns.carryingReceiptID(ReceiptID("n-1"), on: .apns)) == #"{"herald.id":"n-1","aps":{"alert":"x"}}"#)
        // A Live Activity push is handled by the system, not the app: left alone.
        let activity = PushNotification(body: .bytes(ByteBuffer(string: #"{"aps":{"event":"update"}}"#)), headers: [("apns-push-type", "liveactivity")])
        #expect(Self.body(activity.carryingReceiptID(ReceiptID("n-1"), on: .apns)) == #"{"aps":{"event":"update"}}"#)
        let web = PushNotification(body: .bytes(ByteBuffer(string: #"{"title":"x"}"#)))
        #expect(Self.body(web.carryingReceiptID(ReceiptID("n-1"), on: .webpush)) == #"{"herald.id":"n-1","title":"x"}"#)
        let wns = PushNotification(body: .bytes(ByteBuffer(string: "<toast/>")), headers: [("X-WNS-Type", "wns/toast")])
        #expect(Self.body(wns.carryingReceiptID(ReceiptID("n-1"), on: .wns)) == "<toast/>")

        let withData = PushNotification(body: .fcmMessage(.object([("data", .object([("score", .string("1-0"))]))])))
        #expect(
            Self.message(withData.carryingReceiptID(ReceiptID("n-1"), on: .fcm, byteCount: 30))
                == .object([
                    ("data", .object([("score", .string("1-0")), ("herald.id", .string("n-1"))]))
                ]))
        let withoutData = PushNotification(body: .fcmMessage(.object([("notification", .object([("title", .string("Goal"))]))])))
        #expect(
            Self.message(withoutData.carryingReceiptID(ReceiptID("n-1"), on: .fcm, byteCount: 30))
                == .object([
                    ("notification", .object([("title", .string("Goal"))])), ("data", .object([("herald.id", .string("n-1"))])),
                ]))
        // Near FCM's limit, the message is sent as it is.
        #expect(
            Self.message(withData.carryingReceiptID(ReceiptID("n-1"), on: .fcm, byteCount: 4090))
                == .object([
                    ("data", .object([("score", .string("1-0"))]))
                ]))
    }

    static func body(_ notification: PushNotification) -> String? {
        guard case .bytes(let buffer) = notification.body else { return nil }
        return String(buffer: buffer)
    }

    static func message(_ notification: PushNotification) -> JSONValue? {
        guard case .fcmMessage(let message) = notification.body else { return nil }
        return message
    }
}
