import Foundation
import HeraldCore
import HeraldHubWire
import Testing

@Suite("Installations on the wire")
struct InstallationJSONTests {
    static let token = String(repeating: "A1B2C3D4", count: 8)

    static func decode(_ json: String) throws -> Installation {
        try Installation.decodeWire(Data(json.utf8))
    }

    static func expectBadRequest(
        _ json: String, containing message: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(sourceLocation: sourceLocation) {
            try decode(json)
        } throws: { error in
            guard let error = error as? HeraldError else { return false }
            return error.code == .badRequest && error.message.contains(message)
        }
    }

    // MARK: Reading

    @Test func readsAnAPNsInstallationTheWayTheDotNetSDKWritesIt() throws {
        // The .NET SDK writes every property, null when unset, and fcmV1 in mixed case.
        let installation = try Self.decode(
            """
            {"installationId":"0f8fad5b-d9cb-469f-a165-70867728950e","userId":null,"pushChannel":"\(Self.token)",
             "pushChannelExpired":null,"platform":"apns","expirationTime":null,"tags":["sports","news"],
             "pushVariables":null,"templates":{"Alert Template":{"body":"{\\"aps\\":{\\"alert\\":\\"$(message)\\"}}",
             "headers":{"apns-priority":"10"},"expiry":null,"tags":["alerts"]}},"secondaryTiles":null}
            """
        )
        #expect(installation.id == "0f8fad5b-d9cb-469f-a165-70867728950e")
        #expect(installation.platform == .apns)
        #expect(installation.pushChannel == Self.token.lowercased())
        #expect(installation.userId == nil)
        #expect(installation.tags == ["sports", "news"])
        #expect(installation.expirationTime == nil)
        #expect(installation.pushChannelExpired == false)
        #expect(installation.templates["Alert Template"]?.body == #"{"aps":{"alert":"$(message)"}}"#)
        #expect(installation.templates["Alert Template"]?.headers == ["apns-priority": "10"])
        #expect(installation.templates["Alert Template"]?.tags == ["alerts"])
        #expect(installation.version == 1)
    }

    static let platforms: [(name: String, platform: Platform, legacyGCM: Bool, channel: String)] = [
        ("apns", .apns, false, token), ("APNS", .apns, false, token),
        ("fcmv1", .fcm, false, "fcm-token:abc"), ("fcmV1", .fcm, false, "fcm-token:abc"), ("fcm", .fcm, false, "t"),
        ("gcm", .fcm, true, "legacy-token"), ("GCM", .fcm, true, "legacy-token"),
        ("wns", .wns, false, "https://wns.example/?token=1"), ("Wns", .wns, false, "https://wns.example/?token=1"),
    ]

    @Test(arguments: platforms)
    func readsPlatformNamesInAnyCase(
        _ example: (name: String, platform: Platform, legacyGCM: Bool, channel: String)
    )
        throws
    {
        let installation = try Self.decode(
            #"{"installationId":"i","platform":"\#(example.name)","pushChannel":"\#(example.channel)"}"#
        )
        #expect(installation.platform == example.platform)
        #expect(installation.legacyGCM == example.legacyGCM)
    }

    @Test(arguments: ["browser", "Browser", "webpush"])
    func readsABrowserChannelObject(_ name: String) throws {
        let installation = try Self.decode(
            #"{"installationId":"web-1","platform":"\#(name)","pushChannel":{"endpoint":"https://push.example/sub/1","p256dh":"BPk","auth":"c2VjcmV0"}}"#
        )
        #expect(installation.platform == .webpush)
        #expect(installation.pushChannel == "https://push.example/sub/1")
        #expect(installation.webPushKeys == WebPushKeys(p256dh: "BPk", auth: "c2VjcmV0"))
    }

    @Test func readsFieldNamesInAnyCase() throws {
        let installation = try Self.decode(
            #"{"InstallationId":"i","PLATFORM":"apns","pushchannel":"\#(Self.token)","Tags":["a"],"USERID":"u"}"#
        )
        #expect(installation.id == "i")
        #expect(installation.platform == .apns)
        #expect(installation.tags == ["a"])
        #expect(installation.userId == "u")
        // Another name of the same length is not the field.
        #expect(throws: HeraldError.self) { try Self.decode(#"{"installationIe":"i","platform":"apns","pushChannel":"\#(Self.token)"}"#) }
    }

    @Test func ignoresReadOnlyAndUnknownFieldsOnAPut() throws {
        let installation = try Self.decode(
            #"""
            {"installationId":"i","platform":"apns","pushChannel":"\#(Self.token)","pushChannelExpired":true,
             "lastUpdate":"2001-01-01T00:00:00Z","lastActiveOn":"2001-01-01T00:00:00Z","appId":"x","future":{"a":[1,2]}}
            """#
        )
        #expect(installation.pushChannelExpired == false)
        #expect(installation.updatedAt > Date(timeIntervalSince1970: 978_307_200 + 86_400))
    }

    @Test func decodableReadsWhatTheHubReturned() throws {
        let json = #"""
            {"installationId":"i","platform":"fcmv1","pushChannel":"tok","pushChannelExpired":true,
             "expirationTime":"2031-02-03T04:05:06.789Z","lastUpdate":"2025-05-01T10:00:00Z"}
            """#
        let installation = try JSONDecoder().decode(Installation.self, from: Data(json.utf8))
        #expect(installation.pushChannelExpired)
        #expect(installation.updatedAt == Date(timeIntervalSince1970: 1_746_093_600))
        let expiration = try #require(installation.expirationTime)
        #expect(abs(expiration.timeIntervalSince1970 - 1_927_857_906.789) < 0.000_01)
    }

    static let dates: [(text: String, seconds: Double?)] = [
        ("2030-01-01T00:00:00Z", 1_893_456_000),
        ("2030-01-01T00:00:00", 1_893_456_000),
        ("2030-01-01", 1_893_456_000),
        ("2030-01-01T00:00Z", 1_893_456_000),
        ("2030-01-01T01:30:00+01:30", 1_893_456_000),
        ("2029-12-31T22:00:00-0200", 1_893_456_000),
        ("2030-01-01T00:00:00.5Z", 1_893_456_000.5),
        ("2030-01-01T00:00:00.1234567Z", 1_893_456_000.1234567),
        ("2028-02-29T00:00:00Z", 1_835_395_200),
        ("9999-12-31T23:59:59.9999999Z", nil),
        ("9999-12-31T23:59:59.999", nil),
    ]

    @Test(arguments: dates)
    func readsExpirationTimes(_ example: (text: String, seconds: Double?)) throws {
        let installation = try Self.decode(
            #"{"installationId":"i","platform":"fcmv1","pushChannel":"t","expirationTime":"\#(example.text)"}"#
        )
        if let seconds = example.seconds {
            let actual = try #require(installation.expirationTime).timeIntervalSince1970
            #expect(abs(actual - seconds) < 0.000_01)
        } else {
            #expect(installation.expirationTime == nil)
        }
    }

    @Test(arguments: [
        "tomorrow", "2030-13-01T00:00:00Z", "2029-02-29T00:00:00Z", "2030-01-01T24:00:00Z", "2030-01-01T00:00:00Zjunk",
        "2030-01-01T00:00:00.",
    ])
    func refusesMalformedExpirationTimes(_ text: String) {
        Self.expectBadRequest(
            #"{"installationId":"i","platform":"fcmv1","pushChannel":"t","expirationTime":"\#(text)"}"#,
            containing: "expirationTime: expected an ISO 8601 date and time"
        )
    }

    // MARK: Refusals

    static let invalid: [(json: String, message: String)] = [
        ("[]", "expected an installation as a JSON object"),
        (#"{"platform":"apns","pushChannel":"\#(token)"}"#, "installationId: required"),
        (#"{"installationId":"","platform":"apns","pushChannel":"\#(token)"}"#, "installationId: required"),
        (
            #"{"installationId":"a b","platform":"apns","pushChannel":"\#(token)"}"#,
            "installationId: 'a b' is not a valid id"
        ),
        (
            #"{"installationId":"\#(String(repeating: "x", count: 201))","platform":"apns","pushChannel":"\#(token)"}"#,
            "is not a valid id"
        ),
        (#"{"installationId":42,"platform":"apns","pushChannel":"\#(token)"}"#, "installationId: expected a string"),
        (#"{"installationId":"i","pushChannel":"\#(token)"}"#, "platform: required"),
        (
            #"{"installationId":"i","platform":"mpns","pushChannel":"x"}"#,
            "platform: 'mpns' (Windows Phone) was retired"
        ),
        (#"{"installationId":"i","platform":"adm","pushChannel":"x"}"#, "platform: 'adm' is not supported by this hub"),
        (
            #"{"installationId":"i","platform":"Baidu","pushChannel":"x"}"#,
            "platform: 'baidu' is not supported by this hub"
        ),
        (#"{"installationId":"i","platform":"xiaomi","pushChannel":"x"}"#, "platform: 'xiaomi' is not supported"),
        (#"{"installationId":"i","platform":"pager","pushChannel":"x"}"#, "platform: unknown platform 'pager'"),
        (#"{"installationId":"i","platform":"apns"}"#, "pushChannel: required"),
        (
            #"{"installationId":"i","platform":"apns","pushChannel":"abc"}"#,
            "pushChannel: an APNs device token has 64 to 200 hex digits"
        ),
        (
            #"{"installationId":"i","platform":"wns","pushChannel":"http://insecure"}"#,
            "pushChannel: a WNS channel URI is an https URL"
        ),
        (
            #"{"installationId":"i","platform":"apns","pushChannel":{"endpoint":"https://x"}}"#,
            "pushChannel: expected a string"
        ),
        (
            #"{"installationId":"i","platform":"browser","pushChannel":"https://push.example/1"}"#,
            "pushChannel: a browser push channel is an object"
        ),
        (
            #"{"installationId":"i","platform":"browser","pushChannel":{"endpoint":"https://push.example/1","p256dh":"k"}}"#,
            "pushChannel: a browser push channel needs endpoint, p256dh and auth"
        ),
        (
            #"{"installationId":"i","platform":"fcmv1","pushChannel":"t","userId":"bob smith"}"#,
            "userId: 'bob smith' has a character other than"
        ),
        (
            #"{"installationId":"i","platform":"fcmv1","pushChannel":"t","userId":"\#(String(repeating: "u", count: 111))"}"#,
            "userId: at most 110 characters"
        ),
        (
            #"{"installationId":"i","platform":"fcmv1","pushChannel":"t","tags":"a,b"}"#,
            "tags: expected an array of strings"
        ),
        (#"{"installationId":"i","platform":"fcmv1","pushChannel":"t","tags":["ok",7]}"#, "tags[1]: expected a string"),
        (
            #"{"installationId":"i","platform":"fcmv1","pushChannel":"t","tags":["ok","not ok"]}"#,
            "tags[1]: tag 'not ok' is invalid"
        ),
        (
            #"{"installationId":"i","platform":"fcmv1","pushChannel":"t","tags":["$UserId:{mallory}"]}"#,
            "tags[0]: '$UserId:{mallory}' is a system tag"
        ),
        (
            #"{"installationId":"i","platform":"fcmv1","pushChannel":"t","pushVariables":{"a-b":"x"}}"#,
            "pushVariables.a-b: a variable name is 1–120"
        ),
        (
            #"{"installationId":"i","platform":"fcmv1","pushChannel":"t","pushVariables":{"n":1}}"#,
            "pushVariables.n: expected a string"
        ),
        (
            #"{"installationId":"i","platform":"fcmv1","pushChannel":"t","templates":[]}"#,
            "templates: expected an object of named templates"
        ),
        (
            #"{"installationId":"i","platform":"fcmv1","pushChannel":"t","templates":{"t":{"headers":{}}}}"#,
            #"templates["t"].body: required"#
        ),
        (
            #"{"installationId":"i","platform":"fcmv1","pushChannel":"t","templates":{"t":{"body":"  "}}}"#,
            #"templates["t"].body: required"#
        ),
        (
            #"{"installationId":"i","platform":"fcmv1","pushChannel":"t","templates":{"t":{"body":"{\"m\":\"$(a\"}"}}}"#,
            #"templates["t"].body: "#
        ),
        (
            #"{"installationId":"i","platform":"fcmv1","pushChannel":"t","templates":{"$body":{"body":"{}"}}}"#,
            #"templates["$body"]: '$body' is reserved"#
        ),
        (
            #"{"installationId":"i","platform":"fcmv1","pushChannel":"t","templates":{"":{"body":"{}"}}}"#,
            "templates: a template name must not be empty"
        ),
        (
            #"{"installationId":"i","platform":"fcmv1","pushChannel":"t","templates":{"\#(String(repeating: "n", count: 201))":{"body":"{}"}}}"#,
            "a template name has at most 200 characters"
        ),
        (
            #"{"installationId":"i","platform":"fcmv1","pushChannel":"t","templates":{"t":{"body":"{}","tags":["a","b c"]}}}"#,
            #"templates["t"].tags[1]: tag 'b c' is invalid"#
        ),
        (
            #"{"installationId":"i","platform":"fcmv1","pushChannel":"t","templates":{"t":{"body":"{}","headers":{"bad header":"v"}}}}"#,
            #"templates["t"].headers: 'bad header' is not a valid HTTP header name"#
        ),
        (
            #"{"installationId":"i","platform":"fcmv1","pushChannel":"t","templates":{"t":{"body":"{}","headers":{"X-WNS-Type":"a\r\nb"}}}}"#,
            "must not contain line breaks"
        ),
        (
            #"{"installationId":"i","platform":"fcmv1","pushChannel":"t","templates":{"t":{"body":"{}","expiry":5}}}"#,
            #"templates["t"].expiry: expected a string"#
        ),
    ]

    @Test(arguments: invalid)
    func refusesWithTheFieldPath(_ example: (json: String, message: String)) {
        Self.expectBadRequest(example.json, containing: example.message)
    }

    @Test func refusesWhatIsNotJSON() {
        Self.expectBadRequest("{\"installationId\":", containing: "the installation is not valid JSON")
    }

    @Test func countsTheImplicitTagsAgainstTheLimit() throws {
        func json(tags: Int, userId: String?, templateTags: Int = 0) -> String {
            let own = (0..<tags).map { "\"t\($0)\"" }.joined(separator: ",")
            let templateOwn = (0..<templateTags).map { "\"x\($0)\"" }.joined(separator: ",")
            let user = userId.map { #","userId":"\#($0)""# } ?? ""
            return
                #"{"installationId":"i","platform":"fcmv1","pushChannel":"t","tags":[\#(own)]\#(user),"templates":{"tpl":{"body":"{}","tags":[\#(templateOwn)]}}}"#
        }
        // 59 own tags + $InstallationId = 60: fine. 58 + $InstallationId + $UserId = 60: fine.
        _ = try Self.decode(json(tags: 59, userId: nil))
        _ = try Self.decode(json(tags: 58, userId: "bob"))
        Self.expectBadRequest(
            json(tags: 59, userId: "bob"), containing: "tags: an installation has at most 58 tags of its own here")
        Self.expectBadRequest(json(tags: 60, userId: nil), containing: "tags: an installation has at most 59 tags")
        Self.expectBadRequest(json(tags: 61, userId: nil), containing: "tags: at most 60 tags; 61 were given")
        // The template's registration adds its own tags.
        _ = try Self.decode(json(tags: 30, userId: "bob", templateTags: 28))
        Self.expectBadRequest(
            json(tags: 30, userId: "bob", templateTags: 29),
            containing: #"templates["tpl"].tags: the template's registration would carry 61 tags"#
        )
    }

    @Test func dropsDuplicateTagsAndAnEmptyUserId() throws {
        let installation = try Self.decode(
            #"{"installationId":"i","platform":"fcmv1","pushChannel":"t","userId":"","tags":["b","a","b"]}"#
        )
        #expect(installation.tags == ["b", "a"])
        #expect(installation.userId == nil)
    }

    // MARK: Writing

    @Test func writesTheSDKSpellingWithStableKeys() throws {
        var installation = Installation(
            id: "device-1",
            platform: .fcm,
            pushChannel: "fcm-token",
            userId: "alice@example.com",
            tags: ["sports", "news"],
            templates: [
                "b": InstallationTemplate(
                    body: #"{"m":"$(m)"}"#, headers: ["z": "1", "a": "2"], expiry: "$(exp)", tags: ["t"]),
                "a": InstallationTemplate(body: "{}"),
            ],
            pushVariables: ["name": "Alice"],
            expirationTime: Date(timeIntervalSince1970: 1_893_456_000.25),
            updatedAt: Date(timeIntervalSince1970: 1_746_093_600)
        )
        let expected = #"""
            {"expirationTime":"2030-01-01T00:00:00.25Z","installationId":"device-1","lastUpdate":"2025-05-01T10:00:00Z","platform":"fcmv1","pushChannel":"fcm-token","pushChannelExpired":false,"pushVariables":{"name":"Alice"},"tags":["sports","news"],"templates":{"a":{"body":"{}"},"b":{"body":"{\"m\":\"$(m)\"}","expiry":"$(exp)","headers":{"a":"2","z":"1"},"tags":["t"]}},"userId":"alice@example.com"}
            """#
        #expect(String(decoding: installation.wireJSON(), as: UTF8.self) == expected)

        installation.legacyGCM = true
        installation.expirationTime = nil
        installation.templates = [:]
        installation.tags = []
        installation.pushVariables = [:]
        installation.userId = nil
        #expect(
            String(decoding: installation.wireJSON(), as: UTF8.self)
                == #"{"expirationTime":"9999-12-31T23:59:59.9999999Z","installationId":"device-1","lastUpdate":"2025-05-01T10:00:00Z","platform":"gcm","pushChannel":"fcm-token","pushChannelExpired":false}"#
        )
    }

    @Test(arguments: [(Platform.apns, "apns"), (.wns, "wns"), (.webpush, "browser"), (.fcm, "fcmv1")])
    func writesPlatformNames(_ example: (platform: Platform, name: String)) throws {
        let installation = Installation(
            id: "i",
            platform: example.platform,
            pushChannel: "https://push.example/1",
            webPushKeys: example.platform == .webpush ? WebPushKeys(p256dh: "p", auth: "a") : nil
        )
        let object = try JSONDecoder().decode(JSONValue.self, from: installation.wireJSON())
        #expect(object["platform"] == .string(example.name))
        if example.platform == .webpush {
            #expect(
                object["pushChannel"]
                    == .object([
                        ("auth", .string("a")), ("endpoint", .string("https://push.example/1")),
                        ("p256dh", .string("p")),
                    ])
            )
        }
    }

    @Test func roundTripsThroughTheWireForm() throws {
        let original = try Self.decode(
            #"""
            {"installationId":"rt","platform":"browser","pushChannel":{"endpoint":"https://push.example/x","p256dh":"p","auth":"a"},
             "userId":"u","tags":["x"],"pushVariables":{"v":"1"},"expirationTime":"2030-01-01T00:00:00.125Z",
             "templates":{"t":{"body":"{}","headers":{"TTL":"60"},"expiry":"e","tags":["y"]}}}
            """#
        )
        let again = try Installation.decodeWire(original.wireJSON())
        #expect(again.id == original.id)
        #expect(again.platform == original.platform)
        #expect(again.pushChannel == original.pushChannel)
        #expect(again.webPushKeys == original.webPushKeys)
        #expect(again.userId == original.userId)
        #expect(again.tags == original.tags)
        #expect(again.templates == original.templates)
        #expect(again.pushVariables == original.pushVariables)
        #expect(again.expirationTime == original.expirationTime)

        var expired = original
        expired.pushChannelExpired = true
        let decoded = try JSONDecoder().decode(Installation.self, from: JSONEncoder().encode(expired))
        #expect(decoded.pushChannelExpired)
        #expect(decoded.templates == original.templates)
    }

    @Test func wellFormedIDs() {
        #expect(Installation.isWellFormedID("a"))
        #expect(Installation.isWellFormedID("user@example.com#phone:1=A_b-c"))
        #expect(Installation.isWellFormedID(String(repeating: "z", count: 102)))
        #expect(!Installation.isWellFormedID(""))
        #expect(!Installation.isWellFormedID(String(repeating: "z", count: 103)))
        #expect(!Installation.isWellFormedID("a/b"))
        #expect(!Installation.isWellFormedID("é"))
        #expect(!Installation.isWellFormedID("$installation:x"))
    }
}
