import Foundation
import HeraldCore
import HeraldTestSupport
import Testing

@Suite("Notification payloads")
struct NotificationContentPayloadTests {
    // MARK: Exact renderings

    @Test func apnsWithoutTitleIsThePlainAlertOfTheTutorial() throws {
        let payload = try NotificationContent.notifyUser(from: "alice", message: "hi").payload(for: .apns)
        #expect(payload.platform == .apns)
        #expect(String(decoding: payload.body, as: UTF8.self) == #"{"aps":{"alert":"From alice: hi"}}"#)
        #expect(
            payload.headers == [
                .init(name: "apns-push-type", value: "alert"), .init(name: "apns-priority", value: "10"),
            ])
    }

    @Test func apnsWithEverything() throws {
        let content = NotificationContent(
            title: "Score", body: "2-1", data: ["match": "42", "a/b": "c"], badge: 3, sound: "default"
        )
        let body = String(decoding: try content.payload(for: .apns).body, as: UTF8.self)
        #expect(body == #"{"a/b":"c","aps":{"alert":{"body":"2-1","title":"Score"},"badge":3,"sound":"default"},"match":"42"}"#)
    }

    @Test func apnsBadgeZeroIsKeptEmptyTitleAndSoundAreLeftOut() throws {
        let content = NotificationContent(title: "", body: "b", badge: 0, sound: "")
        let body = String(decoding: try content.payload(for: .apns).body, as: UTF8.self)
        #expect(body == #"{"aps":{"alert":"b","badge":0}}"#)
    }

    /// The notify-users tutorial's Android code builds its notification from `data.message`.
    @Test func notifyUserGoesToFCMAsADataMessage() throws {
        let payload = try NotificationContent.notifyUser(from: "alice", message: "hi").payload(for: .fcm)
        #expect(
            String(decoding: payload.body, as: UTF8.self)
                == #"{"android":{"priority":"high"},"data":{"message":"From alice: hi"}}"#
        )
        #expect(payload.headers.isEmpty)
    }

    @Test func fcmDataOnlyKeepsTheCallersOwnKeys() throws {
        var content = NotificationContent(title: "T", body: "shown", data: ["message": "mine", "id": "7"])
        content.fcmDataOnly = true
        #expect(
            String(decoding: try content.payload(for: .fcm).body, as: UTF8.self)
                == #"{"android":{"priority":"high"},"data":{"id":"7","message":"mine","title":"T"}}"#
        )
    }

    @Test func fcmNotificationMessageCarriesTheBodyOnce() throws {
        let content = NotificationContent(title: "T", body: "shown", data: ["id": "7"])
        #expect(
            String(decoding: try content.payload(for: .fcm).body, as: UTF8.self)
                == #"{"data":{"id":"7"},"notification":{"body":"shown","title":"T"}}"#
        )
    }

    @Test func fcmIgnoresBadgeAndSound() throws {
        let content = NotificationContent(body: "b", badge: 2, sound: "default")
        #expect(
            String(decoding: try content.payload(for: .fcm).body, as: UTF8.self)
                == #"{"notification":{"body":"b"}}"#
        )
    }

    @Test func wnsToast() throws {
        let payload = try NotificationContent(title: "Hello", body: "World").payload(for: .wns)
        #expect(
            String(decoding: payload.body, as: UTF8.self)
                == #"<toast><visual><binding template="ToastGeneric"><text>Hello</text><text>World</text></binding></visual></toast>"#
        )
        #expect(
            payload.headers == [
                .init(name: "X-WNS-Type", value: "wns/toast"), .init(name: "Content-Type", value: "text/xml"),
            ])
        let untitled = try NotificationContent(body: "Tom & Jerry <3").payload(for: .wns)
        #expect(
            String(decoding: untitled.body, as: UTF8.self)
                == #"<toast><visual><binding template="ToastGeneric"><text>Tom &amp; Jerry &lt;3</text></binding></visual></toast>"#
        )
    }

    @Test func wnsDataGoesToTheLaunchAttribute() throws {
        let payload = try NotificationContent(body: "b", data: ["id": "7", "q": "a\"b"]).payload(for: .wns)
        #expect(
            String(decoding: payload.body, as: UTF8.self)
                == #"<toast launch="{&quot;id&quot;:&quot;7&quot;,&quot;q&quot;:&quot;a\&quot;b&quot;}"><visual><binding template="ToastGeneric"><text>b</text></binding></visual></toast>"#
        )
    }

    @Test func webPush() throws {
        let payload = try NotificationContent(title: "T", body: "b", data: ["k": "v"]).payload(for: .webpush)
        #expect(String(decoding: payload.body, as: UTF8.self) == #"{"body":"b","data":{"k":"v"},"title":"T"}"#)
        #expect(payload.headers == [.init(name: "TTL", value: "86400"), .init(name: "Urgency", value: "normal")])
        let plain = try NotificationContent(body: "b").payload(for: .webpush)
        #expect(String(decoding: plain.body, as: UTF8.self) == #"{"body":"b"}"#)
    }

    @Test(arguments: Platform.allCases)
    func renderingIsDeterministic(platform: Platform) throws {
        let data = Dictionary(uniqueKeysWithValues: (0..<40).map { ("key\($0)", "value \($0)") })
        let first = try NotificationContent(title: "t", body: "b", data: data).payload(for: platform)
        let second = try NotificationContent(title: "t", body: "b", data: data).payload(for: platform)
        #expect(first == second)
    }

    // MARK: Refusals

    @Test(arguments: Platform.allCases)
    func emptyBodyIsRefused(platform: Platform) {
        expectError(HeraldError.badRequest("a notification needs a body; 'body' is empty")) {
            try NotificationContent(title: "t", body: "").payload(for: platform)
        }
    }

    @Test(arguments: Platform.allCases)
    func negativeBadgeIsRefused(platform: Platform) {
        expectError(HeraldError.badRequest("'badge' must be 0 or more; it is -1")) {
            try NotificationContent(body: "b", badge: -1).payload(for: platform)
        }
    }

    @Test func apsDataKeyIsRefusedForAPNsOnly() throws {
        let content = NotificationContent(body: "b", data: ["aps": "x"])
        expectError(HeraldError.badRequest("data key 'aps' is reserved by APNs for the notification itself")) {
            try content.payload(for: .apns)
        }
        for platform in [Platform.fcm, .wns, .webpush] { _ = try content.payload(for: platform) }
    }

    @Test(arguments: ["from", "message_type", "google.c.a.e", "gcm.notification.title"])
    func fcmReservedDataKeysAreRefused(key: String) throws {
        let content = NotificationContent(body: "b", data: [key: "x"])
        let error = try #require(throws: HeraldError.self) { try content.payload(for: .fcm) }
        #expect(error.code == .badRequest)
        #expect(error.message.hasPrefix("data key '\(key)' is reserved by FCM"))
        _ = try content.payload(for: .apns)
    }

    @Test(arguments: ["\u{0}", "\u{1}", "\u{8}", "\u{B}", "\u{C}", "\u{1F}", "\u{FFFE}", "\u{FFFF}"])
    func wnsRefusesCharactersXMLCannotCarry(character: String) throws {
        let scalar = character.unicodeScalars.first!
        let name =
            "U+" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count)
            + String(scalar.value, radix: 16, uppercase: true)
        let expected = HeraldError.badRequest("the wns payload cannot carry the character \(name): XML 1.0 does not allow it")
        expectError(expected) { try NotificationContent(body: "a\(character)b").payload(for: .wns) }
        expectError(expected) { try NotificationContent(title: character, body: "b").payload(for: .wns) }
        // Data travels as JSON in the launch attribute: JSON escapes control characters, so
        // only the noncharacters reach the XML writer.
        let withData = NotificationContent(body: "b", data: ["k": character])
        if scalar.value < 0x20 {
            let body = try withData.payload(for: .wns).body
            #expect(try Self.decodedData(body, platform: .wns) == ["k": character])
        } else {
            expectError(expected) { try withData.payload(for: .wns) }
        }
        // JSON carries them escaped.
        for platform in [Platform.apns, .fcm, .webpush] {
            let body = try NotificationContent(body: "a\(character)b").payload(for: platform).body
            #expect(try Self.decodedBodyText(body, platform: platform) == "a\(character)b")
        }
    }

    // MARK: Round trips

    static let awkwardTexts: [String] = [
        #"He said "hi""#,
        #"back\slash \n is not a newline, \"escaped\" neither"#,
        "line1\nline2\r\nline3\ttabbed\rcarriage",
        "emoji 👍🏽🇳🇴 and 家族, ça va?",
        #"<b>&amp;</b> 'quoted' & "double" ]]> <![CDATA["#,
        "\u{7F}\u{85}\u{2028}\u{2029}\u{FEFF}",
        "/slashes/ and </script>",
        String(repeating: "Grüße, \"Welt\" \\ 👋\n", count: 131),  // about 3 KB
    ]

    @Test(arguments: Platform.allCases, awkwardTexts)
    func textRoundTrips(platform: Platform, text: String) throws {
        // A caller's own `message` keeps FCM from carrying 3 KB twice.
        let data = ["quote\"key": "value\nwith \"newline\"", "message": "m"]
        let content = NotificationContent(title: String(text.prefix(40)), body: text, data: data)
        let payload = try content.payload(for: platform)
        #expect(try Self.decodedBodyText(payload.body, platform: platform) == text)
        #expect(try Self.decodedTitle(payload.body, platform: platform) == String(text.prefix(40)))
        #expect(try Self.decodedData(payload.body, platform: platform) == data)
    }

    @Test func threeKilobytesOfText() {
        #expect(Self.awkwardTexts.last!.utf8.count > 3000)
        #expect(Self.awkwardTexts.last!.utf8.count < 3500)
    }

    // MARK: Size limits

    @Test(arguments: Platform.allCases)
    func exactlyTheLimitPassesOneByteOverFails(platform: Platform) throws {
        let limit = PayloadLimits.limit(for: platform)
        for title: String? in [nil, "Title"] {
            let fitting = try Self.content(ofSize: limit, platform: platform, title: title)
            let payload = try fitting.payload(for: platform)
            #expect(payload.body.count == limit)

            let over = NotificationContent(title: title, body: fitting.body + "x", data: fitting.data)
            let name = ["apns": "APNs", "fcm": "FCM", "wns": "WNS", "webpush": "Web Push"][platform.rawValue]!
            let expected = HeraldError.payloadTooLarge(
                "the \(platform) payload would be \(limit + 1) bytes; \(name) accepts at most \(limit)"
            )
            expectError(expected) { try over.payload(for: platform) }
        }
    }

    @Test func threeKilobytesFitEveryPlatform() throws {
        let message = String(repeating: "é", count: 1500)  // 3000 bytes
        for platform in Platform.allCases {
            _ = try NotificationContent.notifyUser(from: "bob", message: message).payload(for: platform)
        }
    }

    @Test func sizesAreBytesNotCharacters() throws {
        // 1100 characters, 4400 bytes.
        let body = String(repeating: "😀", count: 1100)
        let error = try #require(throws: HeraldError.self) { try NotificationContent(body: body).payload(for: .apns) }
        #expect(error.code == .payloadTooLarge)
        #expect(error.code.httpStatus == 413)
        #expect(error.message == "the apns payload would be 4420 bytes; APNs accepts at most 4096")
    }

    @Test func limits() {
        #expect(PayloadLimits.apns == 4096)
        #expect(PayloadLimits.apnsVoIP == 5120)
        #expect(PayloadLimits.fcm == 4096)
        #expect(PayloadLimits.wns == 5000)
        #expect(PayloadLimits.webPushPlaintext == 3993)
        #expect(PayloadLimits.limit(for: .apns) == 4096)
        #expect(PayloadLimits.limit(for: .fcm) == 4096)
        #expect(PayloadLimits.limit(for: .wns) == 5000)
        #expect(PayloadLimits.limit(for: .webpush) == 3993)
    }

    @Test func checkNamesPlatformSizeAndLimit() throws {
        try PayloadLimits.check(byteCount: 5000, for: .wns)
        expectError(HeraldError.payloadTooLarge("the apns payload would be 5012 bytes; APNs accepts at most 4096")) {
            try PayloadLimits.check(byteCount: 5012, for: .apns)
        }
    }

    // MARK: The content itself

    @Test func notifyUser() {
        let content = NotificationContent.notifyUser(from: "bob", message: "lunch?")
        var expected = NotificationContent(body: "From bob: lunch?")
        expected.fcmDataOnly = true
        #expect(content == expected)
    }

    @Test func decodesWithOnlyABody() throws {
        let content = try JSONDecoder().decode(NotificationContent.self, from: Data(#"{"body":"hi"}"#.utf8))
        #expect(content == NotificationContent(body: "hi"))
        let full = NotificationContent(title: "t", body: "b", data: ["k": "v"], badge: 1, sound: "s")
        #expect(try JSONDecoder().decode(NotificationContent.self, from: JSONEncoder().encode(full)) == full)
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(NotificationContent.self, from: Data(#"{"title":"t"}"#.utf8))
        }
    }

    // MARK: Helpers

    /// Content whose rendering for `platform` is exactly `size` bytes: the body grows one
    /// ASCII byte at a time.
    static func content(ofSize size: Int, platform: Platform, title: String?) throws -> NotificationContent {
        let data: [String: String] = [:]
        func rendered(_ length: Int) throws -> Int {
            try NotificationContent(title: title, body: String(repeating: "x", count: length), data: data)
                .payload(for: platform).body.count
        }
        let one = try rendered(1)
        #expect(try rendered(2) == one + 1)
        return NotificationContent(title: title, body: String(repeating: "x", count: size - one + 1), data: data)
    }

    static func json(_ body: Data) throws -> JSONValue { try JSONDecoder().decode(JSONValue.self, from: body) }

    static func decodedBodyText(_ body: Data, platform: Platform) throws -> String? {
        switch platform {
        case .apns:
            let alert = try json(body)["aps"]?["alert"]
            if case .string(let text)? = alert { return text }
            return string(alert?["body"])
        case .fcm: return string(try json(body)["notification"]?["body"])
        case .webpush: return string(try json(body)["body"])
        case .wns: return try TinyXML.texts(String(decoding: body, as: UTF8.self)).last
        }
    }

    static func decodedTitle(_ body: Data, platform: Platform) throws -> String? {
        switch platform {
        case .apns: return string(try json(body)["aps"]?["alert"]?["title"])
        case .fcm: return string(try json(body)["notification"]?["title"])
        case .webpush: return string(try json(body)["title"])
        case .wns:
            let texts = try TinyXML.texts(String(decoding: body, as: UTF8.self))
            return texts.count == 2 ? texts[0] : nil
        }
    }

    static func decodedData(_ body: Data, platform: Platform) throws -> [String: String] {
        switch platform {
        case .apns:
            var top = try JSONDecoder().decode([String: JSONValue].self, from: body)
            top["aps"] = nil
            return top.compactMapValues { string($0) }
        case .fcm: return try JSONDecoder().decode([String: [String: String]].self, from: body)["data"] ?? [:]
        case .webpush:
            return try JSONDecoder().decode([String: JSONValue].self, from: body)["data"]
                .map { try JSONDecoder().decode([String: String].self, from: JSONEncoder().encode($0)) } ?? [:]
        case .wns:
            guard let launch = try TinyXML.attribute("launch", in: String(decoding: body, as: UTF8.self)) else {
                return [:]
            }
            return try JSONDecoder().decode([String: String].self, from: Data(launch.utf8))
        }
    }

    static func string(_ value: JSONValue?) -> String? {
        if case .string(let text)? = value { return text }
        return nil
    }
}

/// Just enough XML reading to check a toast: the `<text>` contents and the attributes of the
/// root, with entity and character references resolved. Independent of the writer.
enum TinyXML {
    struct Malformed: Error, CustomStringConvertible {
        var description: String
    }

    static func texts(_ xml: String) throws -> [String] {
        var result: [String] = []
        var rest = xml[...]
        while let start = rest.range(of: "<text>") {
            guard let end = rest.range(of: "</text>", range: start.upperBound..<rest.endIndex) else {
                throw Malformed(description: "unclosed <text>")
            }
            let raw = rest[start.upperBound..<end.lowerBound]
            if raw.contains("<") { throw Malformed(description: "markup inside <text>") }
            result.append(try unescape(raw))
            rest = rest[end.upperBound...]
        }
        return result
    }

    static func attribute(_ name: String, in xml: String) throws -> String? {
        guard let tagEnd = xml.firstIndex(of: ">") else { throw Malformed(description: "no root element") }
        let root = xml[..<tagEnd]
        guard let start = root.range(of: " \(name)=\"") else { return nil }
        guard let end = root[start.upperBound...].firstIndex(of: "\"") else {
            throw Malformed(description: "unclosed attribute")
        }
        let raw = root[start.upperBound..<end]
        if raw.contains("<") || raw.contains("\n") || raw.contains("\t") {
            throw Malformed(description: "unescaped character in attribute")
        }
        return try unescape(raw)
    }

    static func unescape(_ raw: Substring) throws -> String {
        var result = ""
        var rest = raw
        // What an XML parser does with line ends in literal text: CR LF and CR become LF.
        func literal(_ text: Substring) -> String {
            text.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\r", with: "\n")
        }
        while let amp = rest.firstIndex(of: "&") {
            result += literal(rest[..<amp])
            guard let semicolon = rest[amp...].firstIndex(of: ";") else { throw Malformed(description: "bare &") }
            let entity = rest[rest.index(after: amp)..<semicolon]
            switch entity {
            case "amp": result += "&"
            case "lt": result += "<"
            case "gt": result += ">"
            case "quot": result += "\""
            case "apos": result += "'"
            default:
                guard entity.hasPrefix("#"), let value = UInt32(entity.dropFirst()),
                    let scalar = Unicode.Scalar(value)
                else { throw Malformed(description: "unknown entity &\(entity);") }
                result.unicodeScalars.append(scalar)
            }
            rest = rest[rest.index(after: semicolon)...]
        }
        return result + literal(rest)
    }
}
