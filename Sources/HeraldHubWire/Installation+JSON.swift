public import Foundation
public import HeraldCore

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
/// - `pushChannelKind` (Herald's, APNs only) says what the channel addresses: `device` (the
///   default, left out when written), `liveActivity` (an activity's update token) or
///   `pushToStart` (the app's push-to-start token, with `activityType`, the name of the
///   activity's `ActivityAttributes` type). See ``HandleKind``.
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
            document = try JSONValue(parsing: data)
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

}

// MARK: - Platform names

extension Installation {
    /// Parses a wire platform name (see the extension's documentation).
    public static func wirePlatform(_ name: String) throws(HeraldError) -> (platform: Platform, legacyGCM: Bool) {
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
    var wirePlatformName: String { Self.wirePlatformName(platform, legacyGCM: legacyGCM) }

    /// The name the SDKs write for `platform` (`gcm` for legacy FCM).
    public static func wirePlatformName(_ platform: Platform, legacyGCM: Bool = false) -> String {
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
            throw .badRequest(
                "installationId: required; 1–102 characters of letters, digits and - _ @ # . : = (so that the tag $InstallationId:{id} fits in 120)")
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
        let pushChannelKind = try HandleKind(
            wireName: try object.string("pushChannelKind"), activityType: try object.string("activityType"),
            kindField: "pushChannelKind", typeField: "activityType")

        var installation = Installation(
            id: id,
            platform: platform,
            legacyGCM: legacyGCM,
            pushChannel: pushChannel,
            pushChannelKind: pushChannelKind,
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
        if let kind = pushChannelKind.wireName { members.append(("pushChannelKind", .string(kind))) }
        if let activityType = pushChannelKind.activityType { members.append(("activityType", .string(activityType))) }
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

    /// The member `name` (see ``JSONValue/member(_:)``); nil when absent or null.
    subscript(name: String) -> JSONValue? {
        let member = JSONValue.object(members).member(name)
        if case .null? = member { return nil }
        return member
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
        /// Dates from here on mean "never".
        static let neverFrom = Date(timeIntervalSince1970: 253_370_764_800)  // 9999-01-01T00:00:00Z

        /// `yyyy-MM-ddTHH:mm:ss[.SSS]Z` in UTC.
        static func format(_ date: Date) -> String {
            XSDDateTime.string(from: date, precision: .milliseconds)
        }

        /// Parses an ISO 8601 date and time (`Z`, an offset, or no zone for UTC), or a date
        /// alone (midnight UTC). A date in the year 9999 or later returns `nil` ("never").
        static func parse(_ text: String, path: String) throws(HeraldError) -> Date? {
            let trimmed = text.trimmingSpaces()
            let dateAlone = trimmed.utf8.count == 10 ? XSDDateTime.date(from: trimmed + "T00:00:00Z") : nil
            guard let date = XSDDateTime.date(from: trimmed) ?? dateAlone else {
                throw .badRequest("\(path): expected an ISO 8601 date and time such as 2030-01-31T12:00:00Z")
            }
            return date >= neverFrom ? nil : date
        }
    }
}
