import Foundation
import HeraldClient
import HeraldCore
import HeraldEmulator
import HeraldSQLite
import HeraldStore
import Hummingbird
import HummingbirdTesting
import Synchronization
import Testing

@testable import HeraldServer

/// The secure-push and rich-push tutorials' device code, played byte for byte against what the
/// push services delivered, on every platform:
///
/// ```objc
/// int secureId = [[userInfo objectForKey:@"secureId"] intValue];
/// // GET {backend}/api/notifications/%d with the Basic header; show the answer's "Payload"
///
/// NSString *richType = [userInfo objectForKey:@"richType"];
/// int richId = [[userInfo objectForKey:@"richId"] intValue];
/// if ([richType isEqualToString:@"img"]) {
///     // GET {backend}/api/notifications/%d; [UIImage imageWithData:body]; show richMessage
/// }
/// ```
@Suite struct TutorialDeviceCodeTests {
    static let image = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + (0..<4000).map { UInt8(truncatingIfNeeded: $0 &* 13) })

    /// A device of alice's, and what its push service delivered to it.
    struct Device {
        var name: String
        var platform: Platform
        var received: @Sendable () -> [ReceivedNotification]

        /// The last notification as the app's code gets it: the APNs `userInfo`, the FCM data
        /// map, the JSON of a WNS raw notification or of a Web Push message.
        func lastUserInfo() throws -> JSONValue {
            let last = try #require(received().last, "\(name) received nothing")
            switch platform {
            case .apns:
                return try JSONDecoder().decode(JSONValue.self, from: Data(last.payload.utf8))
            case .fcm:
                let message = try JSONDecoder().decode(JSONValue.self, from: Data(last.payload.utf8))
                return try #require((message["message"] ?? message)["data"], "\(name): no data in \(last.payload)")
            case .wns:
                #expect(last.headers["x-wns-type"] == "wns/raw", "\(name)")
                return try JSONDecoder().decode(JSONValue.self, from: try #require(Data(base64Encoded: last.payload)))
            case .webpush:
                return try JSONDecoder().decode(JSONValue.self, from: Data(last.payload.utf8))
            }
        }
    }

    /// alice's iPhone, Android phone, Windows laptop and browser, registered through the SDK;
    /// bob, signed in, as the backend's caller.
    static func aliceOnEveryPlatform(_ herald: TestHerald, base: URL) async throws -> (devices: [Device], bob: HeraldClient) {
        let bob = HeraldClient(baseURL: base)
        try await bob.signUp(username: "alice", password: "alice-password")
        try await bob.signUp(username: "bob", password: "bob-password")
        try await bob.signIn(username: "bob", password: "bob-password")
        let apnsToken = herald.apns.registerDevice(topic: TestHerald.topic)
        let fcmToken = herald.fcm.registerDevice()
        let channel = herald.wns.registerChannel()
        let subscription = herald.webPush.subscribe()
        let handles: [(Device, String, WebPushKeys?)] = [
            (Device(name: "iPhone", platform: .apns) { herald.apns.notifications(for: apnsToken) }, apnsToken, nil),
            (Device(name: "Android", platform: .fcm) { herald.fcm.notifications(for: fcmToken) }, fcmToken, nil),
            (Device(name: "Windows", platform: .wns) { herald.wns.notifications(for: channel) }, channel, nil),
            (
                Device(name: "browser", platform: .webpush) { herald.webPush.notifications(for: subscription) },
                subscription.endpoint, subscription.keys
            ),
        ]
        for (device, handle, keys) in handles {
            let app = HeraldClient(baseURL: base)
            try await app.signIn(username: "alice", password: "alice-password")
            try await app.register(handle: handle, platform: device.platform, webPushKeys: keys)
        }
        return (handles.map(\.0), bob)
    }

    @Test func theSecurePushTutorialsDeviceCodeWorksUnchangedOnEveryPlatform() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.live) { client in
                let base = URL(string: "http://127.0.0.1:\(try #require(client.port))")!
                let (devices, bob) = try await Self.aliceOnEveryPlatform(herald, base: base)
                let secret = JSONValue.object([("note", .string("the vault code")), ("pin", .string("8461"))])  // sorted, as stored
                let sent = try await bob.sendSecure(to: "alice", payload: secret)
                #expect(sent.notification.success == 4, "\(sent.notification.outcomes)")

                for device in devices {
                    let userInfo = try device.lastUserInfo()
                    let secureId = ObjCIntValue.of(userInfo["secureId"])
                    #expect(secureId > 0, "\(device.name): \(userInfo)")
                    let path = String(format: "/api/notifications/%d", secureId)
                    try await client.execute(uri: path, method: .get, headers: .basic("alice", "alice-password")) { response in
                        #expect(response.status == .ok, "\(device.name): \(path)")
                        let answer = try JSONDecoder().decode(JSONValue.self, from: response.body)
                        #expect(answer["Payload"] == secret, "\(device.name)")
                    }
                }
            }
        }
    }

    @Test func theRichPushTutorialsDeviceCodeWorksUnchangedOnEveryPlatform() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.live) { client in
                let base = URL(string: "http://127.0.0.1:\(try #require(client.port))")!
                let (devices, bob) = try await Self.aliceOnEveryPlatform(herald, base: base)
                let upload = try await bob.uploadRich(Self.image, type: "image/png")
                let sent = try await bob.sendRich(to: "alice", richID: upload.id, message: "Look at this")
                #expect(sent.notification.success == 4, "\(sent.notification.outcomes)")

                for device in devices {
                    let userInfo = try device.lastUserInfo()
                    let richType = try #require(userInfo["richType"], "\(device.name): \(userInfo)")
                    let richId = ObjCIntValue.of(userInfo["richId"])
                    #expect(userInfo["richMessage"] == .string("Look at this"), "\(device.name)")
                    // The tutorial fetches only an image.
                    #expect(richType == .string("img"), "\(device.name): \(richType)")
                    guard richType == .string("img") else { continue }
                    let path = String(format: "/api/notifications/%d", richId)
                    try await client.execute(uri: path, method: .get, headers: .basic("alice", "alice-password")) { response in
                        #expect(response.status == .ok, "\(device.name): \(path)")
                        #expect(response.headers[.contentType] == "image/png")
                        #expect(Data(response.body.readableBytesView) == Self.image, "\(device.name): not the picture's bytes")
                    }
                }
            }
        }
    }

    /// An id of someone else's content gets the very answer an id that names nothing gets,
    /// for both kinds; so does an id that is not in Herald's form.
    @Test func anotherUsersIdIsAnsweredLikeAnUnknownOne() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.router) { client in
                let alice = try await client.signUp("alice")
                let bob = try await client.signUp("bob")
                let mallory = try await client.signUp("mallory")
                let secureID = try SecurePushTests.secureID(try await SecurePushTests.sendSecure(client, from: bob, to: "alice"))
                let upload = try await RichPushTests.upload(client, bob)
                try await client.execute(
                    uri: "/api/notifications/rich?to_tag=alice", method: .post, headers: bob,
                    body: .json(#"{"richId":"\#(upload.id)","message":"hi"}"#)
                ) { response in
                    #expect(response.status == .ok)
                }
                let secureValue = try #require(Int32(secureID))
                let richValue = try #require(Int32(upload.id))
                // The same kind's neighbours, which name nothing (or nothing of mallory's).
                let unknown = [secureValue == Int32.max ? secureValue - 2 : secureValue + 2, richValue == 2 ? richValue + 2 : richValue - 2]
                var answers: Set<String> = []
                for (headers, id) in [(mallory, secureID), (mallory, upload.id)] + unknown.map({ (mallory, String($0)) })
                    + [(alice, "0"), (alice, "-\(secureID)"), (alice, "0\(secureID)"), (alice, "2147483648"), (alice, "x")]
                {
                    try await client.execute(uri: "/api/notifications/\(id)", method: .get, headers: headers) { response in
                        #expect(response.status == .notFound, "\(id)")
                        answers.insert("\(response.status) \(response.headers[.contentType] ?? "") \(response.body.string)")
                    }
                }
                #expect(answers.count == 1, "\(answers)")
                // Mallory's attempts marked nothing read.
                try await client.execute(uri: "/api/notifications/\(secureID)", method: .get, headers: alice) { response in
                    let fetched = try JSONDecoder().decode(SecurePayload.self, from: response.body)
                    #expect(fetched.read == false)
                }
            }
        }
    }

    /// Every id is a number in `1...Int32.max`, in its canonical decimal form; secure ids are
    /// odd and rich ids even, so the two kinds never share one.
    @Test func idsAreCanonicalNumbersWithinTheRangeOfAnObjCInt() throws {
        var generator = SystemRandomNumberGenerator()
        for bits in [0, 1, 0x3FFF_FFFF, 0x4000_0000, .max, 0x8000_0000_0000_0001] + (0..<2000).map({ _ in generator.next() as UInt64 }) {
            for kind in [ContentID.Kind.secure, .rich] {
                guard let id = ContentID.make(kind, bits: bits) else {
                    #expect(kind == .rich && bits & 0x3FFF_FFFF == 0)
                    continue
                }
                let value = try #require(Int32(id))
                #expect((1...Int32.max).contains(value))
                #expect(String(value) == id)
                #expect(ObjCIntValue.ofString(id) == value)
                #expect(value % 2 == (kind == .secure ? 1 : 0))
                #expect(ContentID.kinds(of: id) == [kind])
            }
        }
        #expect(ContentID.make(.secure, bits: 0x3FFF_FFFF) == String(Int32.max))
        #expect(ContentID.make(.rich, bits: 0x3FFF_FFFF) == String(Int32.max - 1))
        for notAnID in ["", "0", "00", "01", "-1", "+1", " 1", "1 ", "2147483648", "99999999999", "1e3", "١٢"] {
            #expect(ContentID.kinds(of: notAnID).isEmpty, "\(notAnID)")
        }
        #expect(ContentID.kinds(of: "AAAAAAAAAAAAAAAAAAAAAA") == [.secure, .rich], "an id of an earlier release")
    }

    /// The random source repeats an id that is taken: the send and the upload try other ids and
    /// succeed, and what was there is untouched.
    @Test func aTakenIdIsRetriedWithAnother() async throws {
        let draws = Draws([5, 5, 5, 9, 6, 6, 0, 7])
        try await TestHerald.withHerald(configure: { $0.contentIDRandom = { draws.next() } }) { herald in
            try await herald.application().test(.router) { client in
                let alice = try await client.signUp("alice")
                let bob = try await client.signUp("bob")
                // 5 → secure 11; 5 again → taken, 9 → 19.
                let first = try SecurePushTests.secureID(try await SecurePushTests.sendSecure(client, from: bob, to: "alice"))
                let second = try SecurePushTests.secureID(
                    try await SecurePushTests.sendSecure(client, from: bob, to: "alice", body: #""second""#)
                )
                #expect(first == "11" && second == "19")
                // 6 → rich 12; 6 again → taken, 0 → no id, 7 → 14.
                let image = try await RichPushTests.upload(client, alice)
                let other = try await RichPushTests.upload(client, alice, bytes: [1, 2, 3], type: "text/plain")
                #expect(image.id == "12" && other.id == "14")

                let secret = try JSONDecoder().decode(JSONValue.self, from: Data(SecurePushTests.secretBody.utf8))
                for (id, payload) in [("11", secret), ("19", .string("second"))] {
                    try await client.execute(uri: "/api/notifications/\(id)", method: .get, headers: alice) { response in
                        let fetched = try JSONDecoder().decode(SecurePayload.self, from: response.body)
                        #expect(fetched.payload == payload, "\(id)")
                    }
                }
                try await client.execute(uri: "/api/notifications/12", method: .get, headers: alice) { response in
                    #expect(Array(response.body.readableBytesView) == RichPushTests.image)
                }
                try await client.execute(uri: "/api/notifications/14", method: .get, headers: alice) { response in
                    #expect(Array(response.body.readableBytesView) == [1, 2, 3])
                }
            }
        }
    }

    /// A source that never gives a free id: after ``ContentID/attempts`` tries the send fails
    /// with a 500 and sends nothing.
    @Test func aSourceThatOnlyRepeatsTakenIdsGivesUp() async throws {
        try await TestHerald.withHerald(configure: { $0.contentIDRandom = { 5 } }) { herald in
            try await herald.application().test(.router) { client in
                _ = try await client.signUp("alice")
                let bob = try await client.signUp("bob")
                _ = try await SecurePushTests.sendSecure(client, from: bob, to: "alice")
                try await client.execute(
                    uri: "/api/notifications/secure?to_tag=alice", method: .post, headers: bob, body: .json(#""again""#)
                ) { response in
                    #expect(response.status == .internalServerError)
                    #expect(response.body.string.contains("no free id"))
                }
                #expect(try await herald.store.integerForTesting("SELECT count(*) FROM secure_messages") == 1)
            }
        }
    }

    /// `/api/rich/{id}` is kept for apps built with an earlier SDK: it serves rich content only.
    @Test func theDeprecatedRichRouteServesRichContentOnly() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.router) { client in
                let alice = try await client.signUp("alice")
                let bob = try await client.signUp("bob")
                let upload = try await RichPushTests.upload(client, alice)
                let secureID = try SecurePushTests.secureID(try await SecurePushTests.sendSecure(client, from: bob, to: "alice"))
                try await client.execute(uri: "/api/rich/\(upload.id)", method: .get, headers: alice) { response in
                    #expect(response.status == .ok)
                    #expect(Array(response.body.readableBytesView) == RichPushTests.image)
                }
                try await client.execute(uri: "/api/rich/\(secureID)", method: .get, headers: alice) { response in
                    #expect(response.status == .notFound)
                }
            }
        }
    }

    /// The helper agrees with Foundation's own `NSString.intValue`.
    @Test(arguments: [
        "42", "  42", "\t\n 42abc", "+42", "-42", "2147483647", "2147483648", "-2147483648", "-2147483649",
        "99999999999999999999", "9f3KqL", "f3KqL", "", " ", "-", "+-1", "0042", "1364025483",
    ])
    func theIntValueHelperAgreesWithFoundation(text: String) {
        #expect(ObjCIntValue.ofString(text) == NSString(string: text).intValue, "\(text)")
    }
}

/// Random bits from a list, in order, then the last one again and again.
final class Draws: Sendable {
    private let values: Mutex<[UInt64]>

    init(_ values: [UInt64]) { self.values = Mutex(values) }

    func next() -> UInt64 {
        values.withLock { values in values.count > 1 ? values.removeFirst() : values[0] }
    }
}
