public import Foundation

/// The hub API's JSON form of an installation.
///
/// ```json
/// {"installationId": "1b8f…", "userId": "alice", "platform": "apns", "pushChannel": "6d1c…",
///  "pushChannelExpired": false, "expirationTime": "9999-12-31T23:59:59.9999999Z",
///  "lastUpdate": "2025-05-01T10:00:00.000Z", "tags": ["sports"], "pushVariables": {"name": "Alice"},
///  "templates": {"greeting": {"body": "{\"aps\":{\"alert\":\"$(message)\"}}",
///                              "headers": {"apns-priority": "10"}, "expiry": "…", "tags": ["news"]}}}
/// ```
///
/// - `platform` is read in any letter case: `apns`, `fcmv1` (the .NET SDK writes `fcmV1`),
///   `gcm` (legacy FCM, kept as ``Installation/legacyGCM``), `wns`, `browser`, and Herald's
///   own names `fcm` and `webpush`. It is written as `apns`, `fcmv1` (`gcm` for a legacy
///   installation), `wns` or `browser`.
/// - `pushChannel` is a string, or `{"endpoint", "p256dh", "auth"}` for `browser`.
/// - `pushChannelExpired`, `lastActiveOn` and `lastUpdate` are read-only: ``decodeWire(_:)``
///   ignores them (a PUT clears `pushChannelExpired`); `Decodable` reads them back, for a
///   client reading what the hub returned.
/// - An `expirationTime` in the year 9999 means "never", and "never" is written that way.
/// - Unknown fields are ignored.
///
/// Decoding validates what it reads (see ``validated()``) and throws a `400` ``HeraldError``
/// whose message begins with the path of the offending field, e.g. `templates["greeting"].tags[2]: …`.
extension Installation: Codable {
    public init(from decoder: any Decoder) throws {
        let document = try JSONValue(from: decoder)
        self = try Installation(wire: document, readingReadOnlyFields: true)
    }

    public func encode(to encoder: any Encoder) throws {
        try wireValue.encode(to: encoder)
    }

    /// Reads an installation from a PUT body: validated, read-only fields ignored,
    /// `pushChannelExpired` false, `createdAt` and `updatedAt` now, `version` 1.
    public static func decodeWire(_ data: Data) throws(HeraldError) -> Installation {
        let document: JSONValue
        do {
            document = try JSONDecoder().decode(JSONValue.self, from: data)
        } catch {
            throw .badRequest(
                "the installation is not valid JSON; expected an object such as {\"installationId\": …, \"platform\": …, \"pushChannel\": …}"
            )
        }
        return try Installation(wire: document, readingReadOnlyFields: false)
    }

    /// The installation as the hub API returns it: compact JSON with keys in a stable
    /// (sorted) order.
    public func wireJSON() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding a JSONValue of strings, booleans, arrays and objects cannot fail.
        return (try? encoder.encode(wireValue)) ?? Data("{}".utf8)
    }

    /// Whether `id` can be an installation id: 1–102 characters (so that `$InstallationId:{id}` is a valid tag) of ASCII letters, digits and
    /// `- _ @ # . : =`.
    public static func isWellFormedID(_ id: String) -> Bool {
        (1...102).contains(id.utf8.count) && id.utf8.allSatisfy(isIdentifierByte)
    }

    /// The installation id and user id alphabet: ASCII letters, digits and `- _ @ # . : =`.
    static func isIdentifierByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "@"), UInt8(ascii: "#"), UInt8(ascii: "."),
            UInt8(ascii: ":"), UInt8(ascii: "="):
            true
        default: false
        }
    }
}

// MARK: - Platform names

extension Installation {
    /// Parses a wire platform name (see the extension's documentation).
    static func wirePlatform(_ name: String) throws(HeraldError) -> (platform: Platform, legacyGCM: Bool) {
        switch name.lowercased() {
        case "apns": return (.apns, false)
        case "fcmv1", "fcm": return (.fcm, false)
        case "gcm": return (.fcm, true)
        case "wns": return (.wns, false)
        case "browser", "webpush": return (.webpush, false)
        case "mpns":
            throw .badRequest(
                "platform: 'mpns' (Windows Phone) was retired and is not supported; use 'wns' for Windows devices"
            )
        case "adm", "baidu", "xiaomi":
            throw .badRequest(
                "platform: '\(name.lowercased())' is not supported by this hub; supported platforms are apns, fcmv1, gcm, wns and browser"
            )
        case "":
            throw .badRequest("platform: required; one of apns, fcmv1, gcm, wns, browser")
        default:
            throw .badRequest(
                "platform: unknown platform '\(Tag.display(name))'; use one of apns, fcmv1, gcm, wns, browser"
            )
        }
    }

    /// The platform name the SDKs write.
    var wirePlatformName: String {
        switch platform {
        case .apns: "apns"
        case .fcm: legacyGCM ? "gcm" : "fcmv1"
        case .wns: "wns"
        case .webpush: "browser"
        }
    }
}

// MARK: - Reading

extension Installation {
    /// Builds a validated installation from its wire document. With `readingReadOnlyFields`,
    /// `pushChannelExpired` and `lastUpdate` are read too (a client reading the hub's answer).
    init(wire document: JSONValue, readingReadOnlyFields: Bool) throws(HeraldError) {
        let object = try WireObject(document, path: "", what: "an installation")

        guard let id = try object.string("installationId") else {
            throw .badRequest("installationId: required; 1–102 characters of letters, digits and - _ @ # . : = (so that the tag $InstallationId:{id} fits in 120)")
        }
        guard let platformName = try object.string("platform") else {
            throw .badRequest("platform: required; one of apns, fcmv1, gcm, wns, browser")
        }
        let (platform, legacyGCM) = try Self.wirePlatform(platformName)
        guard let channelValue = object["pushChannel"] else {
            throw .badRequest(
                platform == .webpush
                    ? "pushChannel: required; for browser, {\"endpoint\": …, \"p256dh\": …, \"auth\": …} from the push subscription"
                    : "pushChannel: required; the device's push handle (APNs device token, FCM token or WNS channel URI)"
            )
        }
        let (pushChannel, webPushKeys) = try Self.pushChannel(
            from: channelValue, platform: platform, path: "pushChannel")

        var installation = Installation(
            id: id,
            platform: platform,
            legacyGCM: legacyGCM,
            pushChannel: pushChannel,
            webPushKeys: webPushKeys,
            userId: try object.string("userId"),
            tags: try object.stringArray("tags") ?? [],
            templates: try Self.templates(from: object),
            pushVariables: try object.stringMap("pushVariables") ?? [:],
            expirationTime: try object.date("expirationTime")
        )
        if readingReadOnlyFields {
            installation.pushChannelExpired = try object.bool("pushChannelExpired") ?? false
            if let lastUpdate = try object.date("lastUpdate") {
                installation.updatedAt = lastUpdate
                installation.createdAt = lastUpdate
            }
        }
        self = try installation.validated()
    }

    /// A push channel from its wire value: a string, or for Web Push an object with the
    /// endpoint and the subscription keys. Not yet normalized.
    static func pushChannel(
        from value: JSONValue,
        platform: Platform,
        path: String
    ) throws(HeraldError) -> (channel: String, keys: WebPushKeys?) {
        if platform == .webpush {
            let shape = "{\"endpoint\": …, \"p256dh\": …, \"auth\": …} from the browser's push subscription"
            guard case .object = value else {
                throw .badRequest("\(path): a browser push channel is an object \(shape)")
            }
            let object = try WireObject(value, path: path, what: "a browser push channel")
            guard let endpoint = try object.string("endpoint"), let p256dh = try object.string("p256dh"),
                let auth = try object.string("auth"), !p256dh.isEmpty, !auth.isEmpty
            else {
                throw .badRequest("\(path): a browser push channel needs endpoint, p256dh and auth: \(shape)")
            }
            return (endpoint, WebPushKeys(p256dh: p256dh, auth: auth))
        }
        guard case .string(let channel) = value else {
            throw .badRequest("\(path): expected a string, the device's push handle")
        }
        return (channel, nil)
    }

    private static func templates(from object: WireObject) throws(HeraldError) -> [String: InstallationTemplate] {
        guard let value = object["templates"] else { return [:] }
        let templates = try WireObject(value, path: "templates", what: "an object of named templates")
        var result: [String: InstallationTemplate] = [:]
        for (name, templateValue) in templates.members {
            let path = templatePath(name)
            if case .null = templateValue { continue }
            result[name] = try template(from: templateValue, path: path)
        }
        return result
    }

    /// One template from its wire object `{"body", "headers", "expiry", "tags"}`; not yet validated.
    static func template(from value: JSONValue, path: String) throws(HeraldError) -> InstallationTemplate {
        let object = try WireObject(
            value, path: path, what: "a template {\"body\": …, \"headers\": {…}, \"expiry\": …, \"tags\": […]}")
        guard let body = try object.string("body") else {
            throw .badRequest("\(path).body: required; the template's JSON or XML body")
        }
        return InstallationTemplate(
            body: body,
            headers: try object.stringMap("headers") ?? [:],
            expiry: try object.string("expiry"),
            tags: try object.stringArray("tags") ?? []
        )
    }

    /// `templates["name"]`, the path of a template in messages.
    static func templatePath(_ name: String) -> String {
        "templates[\"\(Tag.display(name))\"]"
    }
}

// MARK: - Writing

extension Installation {
    /// The wire document, members in the order the hub writes them.
    var wireValue: JSONValue {
        var members: [(key: String, value: JSONValue)] = [("installationId", .string(id))]
        if let userId { members.append(("userId", .string(userId))) }
        members.append(("platform", .string(wirePlatformName)))
        if platform == .webpush, let webPushKeys {
            members.append(
                (
                    "pushChannel",
                    .object([
                        ("endpoint", .string(pushChannel)), ("p256dh", .string(webPushKeys.p256dh)),
                        ("auth", .string(webPushKeys.auth)),
                    ])
                )
            )
        } else {
            members.append(("pushChannel", .string(pushChannel)))
        }
        members.append(("pushChannelExpired", .bool(pushChannelExpired)))
        members.append(("expirationTime", .string(expirationTime.map(WireDate.format) ?? WireDate.never)))
        members.append(("lastUpdate", .string(WireDate.format(updatedAt))))
        if !tags.isEmpty { members.append(("tags", .array(tags.map(JSONValue.string)))) }
        if !pushVariables.isEmpty { members.append(("pushVariables", Self.sortedObject(pushVariables))) }
        if !templates.isEmpty {
            let entries = templates.sorted { $0.key < $1.key }.map { name, template in
                (key: name, value: Self.wireValue(of: template))
            }
            members.append(("templates", .object(entries)))
        }
        return .object(members)
    }

    static func wireValue(of template: InstallationTemplate) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [("body", .string(template.body))]
        if !template.headers.isEmpty { members.append(("headers", sortedObject(template.headers))) }
        if let expiry = template.expiry { members.append(("expiry", .string(expiry))) }
        if !template.tags.isEmpty { members.append(("tags", .array(template.tags.map(JSONValue.string)))) }
        return .object(members)
    }

    private static func sortedObject(_ map: [String: String]) -> JSONValue {
        .object(map.sorted { $0.key < $1.key }.map { (key: $0.key, value: JSONValue.string($0.value)) })
    }
}

// MARK: - A JSON object with typed, path-reporting accessors

/// Reads members of a wire object. Lookups match the member name exactly, then in any letter
/// case; a `null` member counts as absent. Type errors name the member's path.
struct WireObject {
    let members: [(key: String, value: JSONValue)]
    let path: String

    init(_ value: JSONValue, path: String, what: String) throws(HeraldError) {
        guard case .object(let members) = value else {
            throw .badRequest(path.isEmpty ? "expected \(what) as a JSON object" : "\(path): expected \(what)")
        }
        self.members = members
        self.path = path
    }

    subscript(name: String) -> JSONValue? {
        let member =
            members.first { $0.key == name }
            ?? members.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }
        if case .null? = member?.value { return nil }
        return member?.value
    }

    func path(_ name: String) -> String { path.isEmpty ? name : "\(path).\(name)" }

    func string(_ name: String) throws(HeraldError) -> String? {
        guard let value = self[name] else { return nil }
        guard case .string(let string) = value else { throw .badRequest("\(path(name)): expected a string") }
        return string
    }

    func bool(_ name: String) throws(HeraldError) -> Bool? {
        guard let value = self[name] else { return nil }
        guard case .bool(let bool) = value else { throw .badRequest("\(path(name)): expected true or false") }
        return bool
    }

    func stringArray(_ name: String) throws(HeraldError) -> [String]? {
        guard let value = self[name] else { return nil }
        return try Self.stringArray(value, path: path(name))
    }

    static func stringArray(_ value: JSONValue, path: String) throws(HeraldError) -> [String] {
        guard case .array(let items) = value else { throw .badRequest("\(path): expected an array of strings") }
        var strings: [String] = []
        for (index, item) in items.enumerated() {
            guard case .string(let string) = item else { throw .badRequest("\(path)[\(index)]: expected a string") }
            strings.append(string)
        }
        return strings
    }

    func stringMap(_ name: String) throws(HeraldError) -> [String: String]? {
        guard let value = self[name] else { return nil }
        return try Self.stringMap(value, path: path(name))
    }

    static func stringMap(_ value: JSONValue, path: String) throws(HeraldError) -> [String: String] {
        guard case .object(let members) = value else {
            throw .badRequest("\(path): expected an object of string values")
        }
        var map: [String: String] = [:]
        for (key, member) in members {
            switch member {
            case .string(let string): map[key] = string
            case .null: continue
            default: throw .badRequest("\(path).\(key): expected a string")
            }
        }
        return map
    }

    func date(_ name: String) throws(HeraldError) -> Date? {
        guard let text = try string(name) else { return nil }
        return try Installation.WireDate.parse(text, path: path(name))
    }
}

// MARK: - Dates

extension Installation {
    /// ISO 8601 dates as the hub API writes and reads them.
    enum WireDate {
        /// What the hub writes for "never expires".
        static let never = "9999-12-31T23:59:59.9999999Z"

        /// `yyyy-MM-ddTHH:mm:ss.SSSZ` in UTC.
        static func format(_ date: Date) -> String {
            let totalMilliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
            let (days, dayMilliseconds) = floorDivide(totalMilliseconds, 86_400_000)
            let (year, month, day) = civil(fromDays: days)
            let hour = dayMilliseconds / 3_600_000
            let minute = dayMilliseconds / 60_000 % 60
            let second = dayMilliseconds / 1000 % 60
            let millisecond = dayMilliseconds % 1000
            return
                "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(hour, 2)):\(pad(minute, 2)):\(pad(second, 2)).\(pad(millisecond, 3))Z"
        }

        /// Parses `yyyy-MM-dd`, optionally followed by `THH:mm[:ss[.fraction]]` and `Z` or an
        /// offset (`+01:00`, `+0100`); no zone means UTC. A date in the year 9999 or later
        /// returns `nil` ("never").
        static func parse(_ text: String, path: String) throws(HeraldError) -> Date? {
            guard let parsed = parseComponents(Array(text.utf8)) else {
                throw .badRequest("\(path): expected an ISO 8601 date and time such as 2030-01-31T12:00:00Z")
            }
            if parsed.year >= 9999 { return nil }
            return parsed.date
        }

        private static func parseComponents(_ bytes: [UInt8]) -> (year: Int, date: Date)? {
            var index = 0
            func digits(_ count: Int) -> Int? {
                guard index + count <= bytes.count else { return nil }
                var value = 0
                for byte in bytes[index..<index + count] {
                    guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                    value = value * 10 + Int(byte - UInt8(ascii: "0"))
                }
                index += count
                return value
            }
            func take(_ byte: UInt8) -> Bool {
                guard index < bytes.count, bytes[index] == byte else { return false }
                index += 1
                return true
            }

            guard let year = digits(4), take(UInt8(ascii: "-")), let month = digits(2), take(UInt8(ascii: "-")),
                let day = digits(2), (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day)
            else { return nil }
            var seconds = Double(days(fromYear: year, month: month, day: day)) * 86_400

            if index < bytes.count,
                bytes[index] == UInt8(ascii: "T") || bytes[index] == UInt8(ascii: "t")
                    || bytes[index] == UInt8(ascii: " ")
            {
                index += 1
                guard let hour = digits(2), take(UInt8(ascii: ":")), let minute = digits(2),
                    (0...23).contains(hour), (0...59).contains(minute)
                else { return nil }
                seconds += Double(hour * 3600 + minute * 60)
                if take(UInt8(ascii: ":")) {
                    guard let second = digits(2), (0...60).contains(second) else { return nil }
                    seconds += Double(second)
                    if take(UInt8(ascii: ".")) || take(UInt8(ascii: ",")) {
                        var scale = 0.1
                        var any = false
                        while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
                            seconds += Double(bytes[index] - UInt8(ascii: "0")) * scale
                            scale /= 10
                            index += 1
                            any = true
                        }
                        guard any else { return nil }
                    }
                }
                if take(UInt8(ascii: "Z")) || take(UInt8(ascii: "z")) {
                    // UTC
                } else if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                    let sign: Double = bytes[index] == UInt8(ascii: "+") ? 1 : -1
                    index += 1
                    guard let offsetHours = digits(2), offsetHours <= 23 else { return nil }
                    _ = take(UInt8(ascii: ":"))
                    let offsetMinutes = index < bytes.count ? digits(2) : 0
                    guard let offsetMinutes, offsetMinutes <= 59 else { return nil }
                    seconds -= sign * Double(offsetHours * 3600 + offsetMinutes * 60)
                }
            }
            guard index == bytes.count else { return nil }
            return (year, Date(timeIntervalSince1970: seconds))
        }

        private static func daysIn(month: Int, year: Int) -> Int {
            switch month {
            case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
            case 4, 6, 9, 11: 30
            default: 31
            }
        }

        /// Days since 1970-01-01 of a proleptic Gregorian date.
        private static func days(fromYear year: Int, month: Int, day: Int) -> Int64 {
            let y = Int64(month <= 2 ? year - 1 : year)
            let era = (y >= 0 ? y : y - 399) / 400
            let yearOfEra = y - era * 400
            let m = Int64(month)
            let dayOfYear = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + Int64(day) - 1
            let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
            return era * 146_097 + dayOfEra - 719_468
        }

        private static func civil(fromDays daysSinceEpoch: Int64) -> (year: Int, month: Int, day: Int) {
            let z = daysSinceEpoch + 719_468
            let era = (z >= 0 ? z : z - 146_096) / 146_097
            let dayOfEra = z - era * 146_097
            let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
            let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
            let mp = (5 * dayOfYear + 2) / 153
            let day = dayOfYear - (153 * mp + 2) / 5 + 1
            let month = mp < 10 ? mp + 3 : mp - 9
            let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
            return (Int(year), Int(month), Int(day))
        }

        private static func floorDivide(_ value: Int64, _ divisor: Int64) -> (quotient: Int64, remainder: Int) {
            var quotient = value / divisor
            var remainder = value % divisor
            if remainder < 0 {
                quotient -= 1
                remainder += divisor
            }
            return (quotient, Int(remainder))
        }

        private static func pad(_ value: Int, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
    }
}
