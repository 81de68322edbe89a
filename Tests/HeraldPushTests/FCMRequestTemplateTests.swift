import Foundation
import HeraldCore
import NIOCore
import Testing

@testable import HeraldPush

/// The FCM request body spliced per device is byte for byte the one the encoder builds.
@Suite struct FCMRequestTemplateTests {
    static let messages: [JSONValue] = [
        .object([("data", .object([("id", .string("42")), ("kind", .string("secure"))]))]),
        .object([
            ("notification", .object([("title", .string("Hi \"you\" </script> é 🎉")), ("body", .string("a/b\\c\n"))])),
            ("android", .object([("priority", .string("high")), ("ttl", .string("60s"))])),
            ("token", .string("stale")),
        ]),
        .object([]),
    ]

    static let tokens: [String] = [
        "crash:" + String(repeating: "0123456789abcdef", count: 3),
        "dGVzdC10b2tlbg:APA91bH-xyz_123/abc+def=",
        String((0x20..<0x7F).map { Character(Unicode.Scalar(UInt8($0))) }),
        "quote\"and\\backslash",
        "control\u{0}\u{1}\t\n\r\u{1F}\u{7F}",
        "unicode é ü 中文 🎉 \u{2028}\u{2029}",
        "",
    ]

    @Test(arguments: messages) func splicedBodiesEqualEncodedOnes(message: JSONValue) throws {
        let notification = PushNotification(body: .fcmMessage(message)).encodedOnceForEveryDevice()
        let template = try #require(notification.fcmRequest)
        for token in Self.tokens {
            let spliced = try #require(template.body(token: token))
            let encoded = try FCMProvider.requestBody(.fcmMessage(message), token: token)
            #expect(Array(spliced.readableBytesView) == Array(encoded.readableBytesView), "token \(token.debugDescription)")
            let decoded = try JSONDecoder().decode(JSONValue.self, from: Data(spliced.readableBytesView))
            #expect(decoded["message"]?["token"] == .string(token))
        }
    }

    @Test func onlyMessageObjectsAreEncodedOnce() {
        #expect(PushNotification(body: .fcmMessage(.string("x"))).encodedOnceForEveryDevice().fcmRequest == nil)
        #expect(PushNotification(body: .bytes(ByteBuffer(string: #"{"data":{}}"#))).encodedOnceForEveryDevice().fcmRequest == nil)
        #expect(PushNotification(body: .fcmMessage(.object([]))).encodedOnceForEveryDevice().fcmRequest != nil)
        // A notification for one device (a template send's) is not encoded ahead of its send.
        #expect(PushNotification(body: .fcmMessage(.object([]))).fcmRequest == nil)
    }

    @Test func aChangedBodyIsNeverSentWithTheOldEncoding() throws {
        var notification = PushNotification(body: .fcmMessage(.object([("data", .object([("v", .string("1"))]))])))
            .encodedOnceForEveryDevice()
        notification.body = .fcmMessage(.object([("data", .object([("v", .string("2"))]))]))
        #expect(notification.fcmRequest == nil)
        let body = try #require(notification.encodedOnceForEveryDevice().fcmRequest?.body(token: "t"))
        let decoded = try JSONDecoder().decode(JSONValue.self, from: Data(body.readableBytesView))
        #expect(decoded["message"]?["data"]?["v"] == .string("2"))
    }
}
