import Foundation
import HeraldCore
import Testing

@Suite("Incoming notification parsing")
struct IncomingNotificationTests {
    /// JSON bodies as each push service delivers them, and what the app should make of them.
    @Test(arguments: [
        // APNs payloads
        (#"{"aps":{"content-available":1},"secureId":"s1"}"#, IncomingNotification.secure(id: "s1")),
        (
            #"{"aps":{"content-available":1},"richId":"r1","richMessage":"hi","richType":"image/png"}"#,
            .rich(id: "r1", type: "image/png", message: "hi", url: nil)
        ),
        (
            #"{"aps":{"alert":{"body":"New photo"},"mutable-content":1},"richId":"r1","richType":"image/png","richUrl":"https://h/api/rich/r1"}"#,
            .rich(id: "r1", type: "image/png", message: "New photo", url: "https://h/api/rich/r1")
        ),
        // What Herald sends: the kind the tutorial reads, and the media type
        (
            #"{"aps":{"content-available":1},"richContentType":"image/png","richId":"12","richMessage":"hi","richType":"img"}"#,
            .rich(id: "12", type: "image/png", message: "hi", url: nil)
        ),
        // A sender that gives only the kind
        (#"{"richId":"12","richMessage":"hi","richType":"img"}"#, .rich(id: "12", type: "img", message: "hi", url: nil)),
        (#"{"aps":{"alert":"From bob: hi"}}"#, .plain(title: nil, body: "From bob: hi")),
        (#"{"aps":{"alert":{"title":"T","body":"B"},"badge":1}}"#, .plain(title: "T", body: "B")),
        (#"{"aps":{"content-available":1}}"#, .plain(title: nil, body: nil)),
        // FCM messages (what Herald sends, and the full request around it)
        (#"{"android":{"priority":"high"},"data":{"secureId":"s2"}}"#, .secure(id: "s2")),
        (#"{"message":{"token":"t","data":{"secureId":"s3"}}}"#, .secure(id: "s3")),
        (
            #"{"data":{"richId":"r1","richType":"audio/mpeg","richUrl":"u"},"notification":{"body":"Listen"}}"#,
            .rich(id: "r1", type: "audio/mpeg", message: "Listen", url: "u")
        ),
        (#"{"android":{"priority":"high"},"data":{"message":"From bob: hi"}}"#, .plain(title: nil, body: "From bob: hi")),
        (#"{"notification":{"title":"T","body":"B"}}"#, .plain(title: "T", body: "B")),
        // WNS raw and Web Push bodies
        (#"{"secureId":"s4"}"#, .secure(id: "s4")),
        (#"{"title":"T","body":"B","data":{"x":"1"}}"#, .plain(title: "T", body: "B")),
        // Not Herald's: an empty id, a rich id without a type
        (#"{"secureId":"","body":"b"}"#, .plain(title: nil, body: "b")),
        (#"{"richId":"r1"}"#, .plain(title: nil, body: nil)),
        (#"[1,2]"#, .plain(title: nil, body: nil)),
    ])
    func jsonBodies(json: String, expected: IncomingNotification) throws {
        #expect(try IncomingNotification(json: Data(json.utf8)) == expected)
    }

    @Test func invalidJSONThrows() {
        #expect(throws: (any Error).self) { try IncomingNotification(json: Data("{".utf8)) }
    }

    /// What iOS hands `application(_:didReceiveRemoteNotification:)`.
    @Test func apnsUserInfo() {
        let secure: [AnyHashable: Any] = ["aps": ["content-available": 1], "secureId": "s1"]
        #expect(IncomingNotification(userInfo: secure) == .secure(id: "s1"))

        let richAlert: [AnyHashable: Any] = [
            "aps": ["alert": ["body": "New photo"] as [String: Any], "mutable-content": 1] as [String: Any],
            "richId": "r1", "richType": "image/png", "richUrl": "https://h/api/rich/r1",
        ]
        #expect(IncomingNotification(userInfo: richAlert) == .rich(id: "r1", type: "image/png", message: "New photo", url: "https://h/api/rich/r1"))

        let richSilent: [AnyHashable: Any] = [
            "aps": ["content-available": 1], "richId": "r1", "richType": "video/mp4", "richMessage": "Watch",
        ]
        #expect(IncomingNotification(userInfo: richSilent) == .rich(id: "r1", type: "video/mp4", message: "Watch", url: nil))

        let plain: [AnyHashable: Any] = ["aps": ["alert": "From bob: hi", "badge": 2] as [String: Any]]
        #expect(IncomingNotification(userInfo: plain) == .plain(title: nil, body: "From bob: hi"))

        let titled: [AnyHashable: Any] = ["aps": ["alert": ["title": "T", "body": "B"]]]
        #expect(IncomingNotification(userInfo: titled) == .plain(title: "T", body: "B"))

        // Non-string values and non-string keys are ignored, not crashed on.
        let odd: [AnyHashable: Any] = [1: "x", "secureId": 42, "aps": "not a dictionary"]
        #expect(IncomingNotification(userInfo: odd) == .plain(title: nil, body: nil))
        #expect(IncomingNotification(userInfo: [:]) == .plain(title: nil, body: nil))
    }

    /// What Android hands `onMessageReceived` as `RemoteMessage.data`.
    @Test func fcmDataMap() {
        #expect(IncomingNotification(data: ["secureId": "s1"]) == .secure(id: "s1"))
        #expect(
            IncomingNotification(data: ["richId": "r1", "richType": "image/gif", "richMessage": "lol"])
                == .rich(id: "r1", type: "image/gif", message: "lol", url: nil)
        )
        #expect(IncomingNotification(data: ["message": "From bob: hi", "title": "T"]) == .plain(title: "T", body: "From bob: hi"))
        #expect(IncomingNotification(data: [:]) == .plain(title: nil, body: nil))
        #expect(IncomingNotification(data: ["secureId": "s1"]).contentID == "s1")
    }

    /// What Herald renders, read back: every platform and style round-trips.
    @Test(arguments: Platform.allCases)
    func heraldsOwnPayloadsRoundTrip(platform: Platform) throws {
        let secure = try SilentNotification.secure(id: "s1").payload(for: platform)
        #expect(try IncomingNotification(json: secure.body) == .secure(id: "s1"))
        let rich = try RichNotification(id: "r1", contentType: "image/png", message: "m").payload(for: platform)
        #expect(try IncomingNotification(json: rich.body) == .rich(id: "r1", type: "image/png", message: "m", url: nil))
        guard platform != .wns else { return }  // a WNS toast is XML: the app gets its launch arguments
        let alert = try RichNotification(id: "r1", contentType: "image/png", message: "m", url: "u", style: .alert).payload(for: platform)
        #expect(try IncomingNotification(json: alert.body) == .rich(id: "r1", type: "image/png", message: "m", url: "u"))
    }
}
