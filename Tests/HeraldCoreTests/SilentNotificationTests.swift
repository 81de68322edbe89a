import Foundation
import HeraldCore
import Testing

@Suite("Silent and rich payloads")
struct SilentNotificationTests {
    private func text(_ payload: PlatformPayload) -> String {
        String(decoding: payload.body, as: UTF8.self)
    }

    // MARK: Secure push: the id and nothing else

    @Test func apnsIsABackgroundPushWithPriority5() throws {
        let payload = try SilentNotification.secure(id: "abc").payload(for: .apns)
        #expect(payload.platform == .apns)
        #expect(text(payload) == #"{"aps":{"content-available":1},"secureId":"abc"}"#)
        #expect(payload.headers == [.init(name: "apns-push-type", value: "background"), .init(name: "apns-priority", value: "5")])
    }

    @Test func fcmIsAHighPriorityDataMessage() throws {
        let payload = try SilentNotification.secure(id: "abc").payload(for: .fcm)
        #expect(text(payload) == #"{"android":{"priority":"high"},"data":{"secureId":"abc"}}"#)
        #expect(payload.headers.isEmpty)
    }

    @Test func wnsIsARawNotificationWithTheJSON() throws {
        let payload = try SilentNotification.secure(id: "abc").payload(for: .wns)
        #expect(text(payload) == #"{"secureId":"abc"}"#)
        #expect(
            payload.headers == [
                .init(name: "X-WNS-Type", value: "wns/raw"), .init(name: "Content-Type", value: "application/octet-stream"),
            ])
    }

    @Test func webPushIsPlaintextJSONWithTTLAndNormalUrgency() throws {
        let payload = try SilentNotification.secure(id: "abc").payload(for: .webpush)
        #expect(text(payload) == #"{"secureId":"abc"}"#)
        #expect(payload.headers == [.init(name: "TTL", value: "86400"), .init(name: "Urgency", value: "normal")])
    }

    @Test func dataIsEscapedByTheEncoderAndKeysAreSorted() throws {
        let silent = SilentNotification(data: ["z": "\"quoted\"\n</x>", "a": "é"])
        #expect(text(try silent.payload(for: .apns)) == #"{"a":"é","aps":{"content-available":1},"z":"\"quoted\"\n</x>"}"#)
        let decoded = try JSONDecoder().decode([String: String].self, from: try silent.payload(for: .webpush).body)
        #expect(decoded == silent.data)
    }

    @Test(arguments: [
        (Platform.apns, ["aps": "x"], "aps"),
        (.fcm, ["from": "x"], "from"),
        (.fcm, ["google.c": "x"], "google.c"),
        (.webpush, [:], "at least one"),
    ])
    func reservedOrMissingKeysAreRefused(platform: Platform, data: [String: String], message: String) {
        #expect {
            try SilentNotification(data: data).payload(for: platform)
        } throws: { error in
            let error = error as? HeraldError
            return error?.code == .badRequest && error?.message.contains(message) == true
        }
    }

    @Test(arguments: Platform.allCases)
    func tooLargeIs413(platform: Platform) {
        let silent = SilentNotification(data: ["k": String(repeating: "x", count: 5100)])
        #expect {
            try silent.payload(for: platform)
        } throws: { error in
            (error as? HeraldError)?.code == .payloadTooLarge
        }
    }

    // MARK: Rich push

    @Test func richSilentCarriesIdTypeAndMessageEverywhere() throws {
        let rich = RichNotification(id: "12", contentType: "image/png", message: "New photo", url: "https://h/api/notifications/12")
        #expect(
            text(try rich.payload(for: .apns))
                == #"{"aps":{"content-available":1},"richContentType":"image/png","richId":"12","richMessage":"New photo","richType":"img"}"#
        )
        #expect(try rich.payload(for: .apns).headers.contains(.init(name: "apns-push-type", value: "background")))
        #expect(
            text(try rich.payload(for: .fcm))
                == #"{"android":{"priority":"high"},"data":{"richContentType":"image/png","richId":"12","richMessage":"New photo","richType":"img"}}"#
        )
        #expect(text(try rich.payload(for: .wns)) == #"{"richContentType":"image/png","richId":"12","richMessage":"New photo","richType":"img"}"#)
        #expect(text(try rich.payload(for: .webpush)) == #"{"richContentType":"image/png","richId":"12","richMessage":"New photo","richType":"img"}"#)
    }

    @Test func richAlertOnAPNsIsMutableContentWithTheURL() throws {
        let rich = RichNotification(id: "12", contentType: "image/png", message: "New photo", url: "https://h/api/notifications/12", style: .alert)
        let payload = try rich.payload(for: .apns)
        #expect(
            text(payload)
                == #"{"aps":{"alert":{"body":"New photo"},"mutable-content":1},"richContentType":"image/png","richId":"12","richType":"img","richUrl":"https://h/api/notifications/12"}"#
        )
        #expect(payload.headers == [.init(name: "apns-push-type", value: "alert"), .init(name: "apns-priority", value: "10")])
    }

    @Test func richAlertElsewhereIsANormalNotificationWithTheSameDataKeys() throws {
        let rich = RichNotification(id: "12", contentType: "image/png", message: "New photo", url: "https://h/api/notifications/12", style: .alert)
        #expect(
            text(try rich.payload(for: .fcm))
                == #"{"data":{"richContentType":"image/png","richId":"12","richType":"img","richUrl":"https://h/api/notifications/12"},"notification":{"body":"New photo"}}"#
        )
        #expect(try rich.payload(for: .wns).headers.contains(.init(name: "X-WNS-Type", value: "wns/toast")))
        #expect(text(try rich.payload(for: .wns)).contains("New photo"))
        #expect(
            text(try rich.payload(for: .webpush))
                == #"{"body":"New photo","data":{"richContentType":"image/png","richId":"12","richType":"img","richUrl":"https://h/api/notifications/12"}}"#
        )
    }

    @Test(arguments: [
        ("image/png", "img"), ("image/jpeg", "img"), ("IMAGE/WEBP", "img"), ("audio/mpeg", "audio"), ("video/mp4", "video"),
        ("text/uri-list", "url"), ("text/plain", "text"), ("application/json", "json"), ("application/pdf", "file"),
    ])
    func richTypeIsImgForEveryImage(contentType: String, richType: String) {
        #expect(RichNotification.richType(forContentType: contentType) == richType)
        #expect(RichNotification(id: "2", contentType: contentType, message: "m").richType == richType)
    }

    @Test func richAlertNeedsAMessage() {
        #expect(throws: HeraldError.self) {
            try RichNotification(id: "12", contentType: "image/png", message: "", style: .alert).payload(for: .apns)
        }
    }

    @Test func stylesParse() throws {
        #expect(try RichNotificationStyle(parsing: "ALERT") == .alert)
        #expect(try RichNotificationStyle(parsing: "silent") == .silent)
        #expect(throws: HeraldError.self) { try RichNotificationStyle(parsing: "loud") }
    }

    // MARK: Wire types

    @Test func securePayloadUsesTheTutorialsKeys() throws {
        let value = SecurePayload(id: "i", payload: .object([("pin", .string("1234"))]), read: false)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        #expect(String(decoding: try encoder.encode(value), as: UTF8.self) == #"{"Id":"i","Payload":{"pin":"1234"},"Read":false}"#)
        #expect(try JSONDecoder().decode(SecurePayload.self, from: try encoder.encode(value)) == value)
    }
}
