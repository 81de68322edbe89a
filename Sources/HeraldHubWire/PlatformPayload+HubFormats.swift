public import Foundation
public import HeraldCore

extension PlatformPayload {
    /// Turns a notification body in the form the hub API's native sends carry (the push
    /// service's own format) into the payload Herald delivers, checking what the push service
    /// would refuse so that a caller gets a clear `4xx` at once.
    ///
    /// - ``Platform/apns``: the body must be a JSON object; it is sent as it is. `apns-*`
    ///   headers are kept (names lowercased); the legacy `ServiceBusNotification-Apns-Expiry`
    ///   (a date, see ``apnsExpiration(_:)``) becomes `apns-expiration` in unix seconds and
    ///   `X-Apns-Priority` becomes `apns-priority`, unless the `apns-*` header is given too.
    ///   `apns-priority` must be `10`, `5` or `1`. Other headers are dropped.
    /// - ``Platform/fcm``: the body is an FCM v1 request, `{"message": {…}}` (or the message
    ///   object alone, when all its keys are message fields); the payload is
    ///   the `message` object. Herald picks the devices, so a `token`, `topic` or `condition`
    ///   in it is refused; `data` must map names to strings. With `legacyGCM`, the body is the
    ///   legacy GCM/FCM JSON instead and is translated (see below). Headers are dropped.
    /// - ``Platform/wns``: the body is sent as it is. `X-WNS-Type` (`wns/toast`, `wns/tile`,
    ///   `wns/badge`, `wns/raw`) is required; when it is missing it is inferred from the XML
    ///   root element (`toast`, `tile`, `badge`). Toast, tile and badge bodies must be XML with
    ///   the matching root element; a raw body may be anything. `X-WNS-*` headers are kept.
    /// - ``Platform/webpush``: the body (JSON or text) is encrypted and sent as it is; `TTL`,
    ///   `Urgency` and `Topic` are kept.
    ///
    /// The legacy GCM/FCM translation: `notification.title`, `.body` and `.image` go to the
    /// message's `notification`; `icon`, `color`, `sound`, `tag`, `click_action`,
    /// `android_channel_id` (as `channel_id`), `ticker`, `sticky`, `notification_count` and the
    /// `*_loc_key`/`*_loc_args` fields go to `android.notification`; `data` values become
    /// strings (non-string values as their JSON text); `priority` (`high`/`normal`) becomes
    /// `android.priority`, `time_to_live` (seconds) `android.ttl` (`"3600s"`), `collapse_key`
    /// and `restricted_package_name` move under `android`. `to`, `registration_ids`,
    /// `condition` and `notification_key` are refused (Herald picks the devices). Everything
    /// else — `content_available`, `mutable_content`, `dry_run`, `delay_while_idle` and keys FCM
    /// v1 has no place for — is dropped.
    ///
    /// - Throws: ``HeraldError`` `400` for a body or header the push service would refuse,
    ///   `413` when the payload is larger than ``PayloadLimits`` allows (for APNs VoIP pushes,
    ///   ``PayloadLimits/apnsVoIP``).
    public static func hubNative(
        platform: Platform,
        legacyGCM: Bool,
        body: Data,
        headers: [PlatformPayload.Header]
    ) throws(HeraldError) -> PlatformPayload {
        switch platform {
        case .apns: try apnsNative(body: body, headers: headers)
        case .fcm: legacyGCM ? try legacyGCMNative(body: body) : try fcmNative(body: body)
        case .wns: try wnsNative(body: body, headers: headers)
        case .webpush: try webPushNative(body: body, headers: headers)
        }
    }

    // MARK: APNs

    private static func apnsNative(body: Data, headers: [Header]) throws(HeraldError) -> PlatformPayload {
        guard case .object? = try? JSONValue(parsing: body) else {
            throw .badRequest("an APNs notification body must be a JSON object, such as {\"aps\":{\"alert\":\"Hello\"}}")
        }
        var kept: [Header] = []
        var legacyExpiry: String?
        var legacyPriority: String?
        var pushType: String?
        for header in headers {
            let name = header.name.lowercased()
            if name.hasPrefix("apns-") {
                try checkHeaderValue(header)
                switch name {
                case "apns-expiration": kept.append(Header(name: name, value: try apnsExpiration(header.value)))
                case "apns-priority": kept.append(Header(name: name, value: try apnsPriority(header.value, header: header.name)))
                default:
                    if name == "apns-push-type" { pushType = header.value.lowercased() }
                    kept.append(Header(name: name, value: header.value))
                }
            } else if name == "servicebusnotification-apns-expiry" {
                legacyExpiry = header.value
            } else if name == "x-apns-priority" {
                legacyPriority = header.value
            }
        }
        if let legacyExpiry, !kept.contains(where: { $0.name == "apns-expiration" }) {
            kept.append(Header(name: "apns-expiration", value: try apnsExpiration(legacyExpiry)))
        }
        if let legacyPriority, !kept.contains(where: { $0.name == "apns-priority" }) {
            kept.append(Header(name: "apns-priority", value: try apnsPriority(legacyPriority, header: "X-Apns-Priority")))
        }
        try PayloadLimits.checkAPNs(
            byteCount: body.count, voip: pushType?.trimmingSpaces() == "voip",
            broadcast: kept.contains { $0.name == "apns-channel-id" })
        return PlatformPayload(platform: .apns, body: body, headers: kept)
    }

    /// An APNs priority as `apns-priority` wants it (`10`, `5` or `1`), from the value of
    /// the header named `header`.
    package static func apnsPriority(_ value: String, header: String) throws(HeraldError) -> String {
        let trimmed = value.trimmingSpaces()
        guard ["10", "5", "1"].contains(trimmed) else {
            throw .badRequest("\(header) must be 10 (immediately), 5 (power-considerate) or 1 (low); it is '\(value)'")
        }
        return trimmed
    }

    /// An APNs expiry as `apns-expiration` wants it: unix seconds (`0`: do not store).
    ///
    /// Accepts unix seconds, and the dates that the hub API's clients send: ISO 8601/W3C
    /// dates (`2030-07-16T19:20:30Z`, with optional seconds and fraction, a `Z` or `±hh:mm`
    /// offset, `T` or a space between date and time; no offset means UTC) and the invariant
    /// .NET form `07/16/2030 19:20:30` (UTC, optionally with `AM`/`PM`).
    ///
    /// - Throws: `400` for anything else.
    public static func apnsExpiration(_ value: String) throws(HeraldError) -> String {
        let trimmed = value.trimmingSpaces()
        if !trimmed.isEmpty, trimmed.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            guard let seconds = Int64(trimmed) else {
                throw .badRequest("the APNs expiry '\(value)' is too large for unix seconds")
            }
            return String(seconds)
        }
        guard let date = HubDate.parse(trimmed) else {
            throw .badRequest(
                "the APNs expiry '\(value)' is not a date; use unix seconds or a UTC date such as 2030-07-16T19:20:30Z"
            )
        }
        return String(max(0, Int64(date.timeIntervalSince1970.rounded(.down))))
    }

    // MARK: FCM

    private static func decodeObject(_ body: Data, what: String) throws(HeraldError) -> [(key: String, value: JSONValue)] {
        guard case .object(let members)? = try? JSONValue(parsing: body) else {
            throw .badRequest("\(what) must be a JSON object")
        }
        return members
    }

    /// The FCM v1 `message` of a hub API native FCM body (with `legacyGCM`, of a legacy GCM/FCM
    /// body, translated), checked as ``hubNative(platform:legacyGCM:body:headers:)`` checks it,
    /// without the payload's encoded bytes: for a caller that needs the message itself.
    ///
    /// - Throws: ``HeraldError`` `400` for a body FCM would refuse, `413` when its encoding is
    ///   larger than ``PayloadLimits/fcm``.
    package static func hubNativeFCMMessage(legacyGCM: Bool, body: Data) throws(HeraldError) -> JSONValue {
        let message = legacyGCM ? try legacyGCMMessage(body: body) : try fcmMessage(body: body)
        try PayloadLimits.check(byteCount: try encode(message).count, for: .fcm)
        // As the payload's body decodes: members in the order of their keys.
        return sortingMembers(message)
    }

    /// `value` with the members of every object in the order of their keys, as `JSONValue`
    /// decodes them.
    private static func sortingMembers(_ value: JSONValue) -> JSONValue {
        switch value {
        case .object(let members):
            .object(members.sorted { $0.key < $1.key }.map { ($0.key, sortingMembers($0.value)) })
        case .array(let items):
            .array(items.map(sortingMembers))
        case .null, .bool, .number, .string:
            value
        }
    }

    private static func fcmNative(body: Data) throws(HeraldError) -> PlatformPayload {
        try fcmPayload(try fcmMessage(body: body))
    }

    private static func fcmMessage(body: Data) throws(HeraldError) -> JSONValue {
        let request = try decodeObject(body, what: "an FCM v1 notification body ({\"message\": {…}})")
        let messageFields: Set<String> = ["notification", "data", "android", "apns", "webpush", "fcm_options"]
        let message: JSONValue
        if let wrapped = request.first(where: { $0.key == "message" })?.value {
            message = wrapped
        } else if !request.isEmpty, request.allSatisfy({ messageFields.contains($0.key) }) {
            // Some clients send the message object itself, without its wrapper.
            message = .object(request)
        } else {
            throw .badRequest("an FCM v1 notification body is {\"message\": {…}}; it has no 'message'")
        }
        guard case .object(let fields) = message else {
            throw .badRequest("'message' of an FCM v1 notification body must be a JSON object")
        }
        for target in ["token", "topic", "condition"] where fields.contains(where: { $0.key == target }) {
            throw .badRequest(
                "remove 'message.\(target)' from the FCM v1 body: the hub chooses the devices (by tags, or the direct send's handle)"
            )
        }
        if let data = fields.first(where: { $0.key == "data" })?.value {
            guard case .object(let entries) = data else {
                throw .badRequest("'message.data' must be a JSON object of string values")
            }
            for entry in entries {
                guard case .string = entry.value else {
                    throw .badRequest("'message.data.\(entry.key)' must be a string; FCM data values are strings")
                }
                try checkFCMDataKey(entry.key)
            }
        }
        return .object(fields)
    }

    private static func legacyGCMNative(body: Data) throws(HeraldError) -> PlatformPayload {
        try fcmPayload(try legacyGCMMessage(body: body))
    }

    private static func legacyGCMMessage(body: Data) throws(HeraldError) -> JSONValue {
        let legacy = try decodeObject(body, what: "a GCM/FCM legacy notification body")
        var notification: [(key: String, value: JSONValue)] = []
        var androidNotification: [(key: String, value: JSONValue)] = []
        var android: [(key: String, value: JSONValue)] = []
        var data: [(key: String, value: JSONValue)] = []
        for (key, value) in legacy {
            switch key {
            case "to", "registration_ids", "condition", "notification_key":
                throw .badRequest("remove '\(key)' from the GCM/FCM body: the hub chooses the devices (by tags, or the direct send's handle)")
            case "notification":
                guard case .object(let fields) = value else {
                    throw .badRequest("'notification' of a GCM/FCM body must be a JSON object")
                }
                for (field, fieldValue) in fields {
                    switch field {
                    case "title", "body", "image":
                        notification.append((field, .string(try scalarText(fieldValue, at: "notification.\(field)"))))
                    case "android_channel_id":
                        androidNotification.append(("channel_id", .string(try scalarText(fieldValue, at: "notification.\(field)"))))
                    case "icon", "color", "sound", "tag", "click_action", "body_loc_key", "title_loc_key", "ticker":
                        androidNotification.append((field, .string(try scalarText(fieldValue, at: "notification.\(field)"))))
                    case "body_loc_args", "title_loc_args":
                        androidNotification.append((field, try locArgs(fieldValue, at: "notification.\(field)")))
                    case "sticky":
                        guard case .bool = fieldValue else { throw .badRequest("'notification.sticky' must be true or false") }
                        androidNotification.append((field, fieldValue))
                    case "notification_count":
                        guard case .number(let n) = fieldValue, n >= 0, n.rounded() == n else {
                            throw .badRequest("'notification.notification_count' must be a whole number of 0 or more")
                        }
                        androidNotification.append((field, fieldValue))
                    default:
                        continue  // No place for it in FCM v1: dropped.
                    }
                }
            case "data":
                guard case .object(let entries) = value else {
                    throw .badRequest("'data' of a GCM/FCM body must be a JSON object")
                }
                for (name, entry) in entries {
                    try checkFCMDataKey(name)
                    data.append((name, .string(try jsonText(entry))))
                }
            case "priority":
                let text = try scalarText(value, at: "priority").lowercased()
                switch text {
                case "high", "10": android.append(("priority", .string("high")))
                case "normal", "5": android.append(("priority", .string("normal")))
                default: throw .badRequest("'priority' of a GCM/FCM body must be 'high' or 'normal'; it is '\(text)'")
                }
            case "time_to_live":
                guard case .number(let seconds) = value, seconds.rounded() == seconds, (0...2_419_200).contains(seconds) else {
                    throw .badRequest("'time_to_live' must be a whole number of seconds from 0 to 2419200 (28 days)")
                }
                android.append(("ttl", .string("\(Int(seconds))s")))
            case "collapse_key", "restricted_package_name":
                android.append((key, .string(try scalarText(value, at: key))))
            default:
                continue  // content_available, mutable_content, dry_run, delay_while_idle, …: dropped.
            }
        }
        if !androidNotification.isEmpty { android.append(("notification", .object(androidNotification))) }
        var message: [(key: String, value: JSONValue)] = []
        if !android.isEmpty { message.append(("android", .object(android))) }
        if !data.isEmpty { message.append(("data", .object(data))) }
        if !notification.isEmpty { message.append(("notification", .object(notification))) }
        return .object(message)
    }

    private static func fcmPayload(_ message: JSONValue) throws(HeraldError) -> PlatformPayload {
        let body = try encode(message)
        try PayloadLimits.check(byteCount: body.count, for: .fcm)
        return PlatformPayload(platform: .fcm, body: body, headers: [])
    }

    private static func checkFCMDataKey(_ key: String) throws(HeraldError) {
        if NotificationContent.isReservedByFCM(key) {
            throw .badRequest(
                "data key '\(key)' is reserved by FCM; keys may not be 'from', 'message_type' or start with 'google' or 'gcm'"
            )
        }
    }

    /// A string, number or boolean as text; anything else is refused.
    private static func scalarText(_ value: JSONValue, at path: String) throws(HeraldError) -> String {
        switch value {
        case .string(let text): return text
        case .number, .bool: return try jsonText(value)
        default: throw .badRequest("'\(path)' must be a string")
        }
    }

    /// A value as an FCM data string: a string as it is, anything else as its JSON text.
    private static func jsonText(_ value: JSONValue) throws(HeraldError) -> String {
        if case .string(let text) = value { return text }
        return String(decoding: try encode(value), as: UTF8.self)
    }

    /// Localization arguments: a JSON array, or (as the legacy API allowed) a string holding one.
    private static func locArgs(_ value: JSONValue, at path: String) throws(HeraldError) -> JSONValue {
        var items: [JSONValue]
        switch value {
        case .array(let array):
            items = array
        case .string(let text):
            guard case .array(let array)? = try? JSONValue(parsing: text.utf8) else {
                throw .badRequest("'\(path)' must be an array of strings")
            }
            items = array
        default:
            throw .badRequest("'\(path)' must be an array of strings")
        }
        for index in items.indices { items[index] = .string(try scalarText(items[index], at: "\(path)[\(index)]")) }
        return .array(items)
    }

    private static func encode(_ value: JSONValue) throws(HeraldError) -> Data {
        try NotificationContent.encodeJSON(value)
    }

    // MARK: WNS

    private static let wnsTypes = ["wns/toast", "wns/tile", "wns/badge", "wns/raw"]

    /// The value of an `X-WNS-Type` header, trimmed and lowercased.
    ///
    /// - Throws: `400` for a value that is not a WNS notification type.
    package static func wnsType(_ value: String) throws(HeraldError) -> String {
        let type = value.trimmingSpaces().lowercased()
        guard wnsTypes.contains(type) else {
            throw .badRequest("X-WNS-Type must be one of \(wnsTypes.joined(separator: ", ")); it is '\(value)'")
        }
        return type
    }

    private static func wnsNative(body: Data, headers: [Header]) throws(HeraldError) -> PlatformPayload {
        var type: String?
        var kept: [Header] = []
        for header in headers {
            let name = header.name.lowercased()
            guard name.hasPrefix("x-wns-") else { continue }
            try checkHeaderValue(header)
            if name == "x-wns-type" {
                type = try wnsType(header.value)
            } else {
                kept.append(header)
            }
        }
        let sentType = try wnsType(type, root: type == "wns/raw" ? nil : rootElement(of: body))
        try PayloadLimits.check(byteCount: body.count, for: .wns)
        kept.insert(Header(name: "X-WNS-Type", value: sentType), at: 0)
        return PlatformPayload(platform: .wns, body: body, headers: kept)
    }

    /// The WNS notification type to send: `type`, the checked `X-WNS-Type` (see
    /// ``wnsType(_:)``), or when there is none the one the body's root element (`root`, see
    /// ``rootElement(of:)``) names.
    ///
    /// - Throws: `400` when a toast, tile or badge body's root element does not match its
    ///   type, or when there is no type and the root element names none.
    package static func wnsType(_ type: String?, root: String?) throws(HeraldError) -> String {
        if type == "wns/raw" { return "wns/raw" }
        if let type {
            let expected = String(type.dropFirst("wns/".count))
            guard let root else {
                throw .badRequest("a \(type) notification body must be XML with a <\(expected)> root element")
            }
            guard root == expected else {
                throw .badRequest("X-WNS-Type is \(type), so the body's root element must be <\(expected)>; it is <\(root)>")
            }
            return type
        }
        guard let root, ["toast", "tile", "badge"].contains(root) else {
            throw .badRequest(
                "X-WNS-Type is required (wns/toast, wns/tile, wns/badge or wns/raw); it can be left out only for XML whose root element is toast, tile or badge"
            )
        }
        return "wns/" + root
    }

    /// The name of the root element of an XML document: skips a byte-order mark, white space,
    /// the XML declaration, processing instructions, comments and a doctype. `nil` when the
    /// body does not start like XML.
    package static func rootElement(of body: Data) -> String? {
        let bytes = [UInt8](body.prefix(4096))
        var i = 0
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { i = 3 }
        func skipSpace() { while i < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[i]) { i += 1 } }
        func skip(past terminator: [UInt8]) -> Bool {
            while i + terminator.count <= bytes.count {
                if Array(bytes[i..<(i + terminator.count)]) == terminator {
                    i += terminator.count
                    return true
                }
                i += 1
            }
            return false
        }
        while true {
            skipSpace()
            guard i + 1 < bytes.count, bytes[i] == UInt8(ascii: "<") else { return nil }
            let next = bytes[i + 1]
            if next == UInt8(ascii: "?") {
                guard skip(past: Array("?>".utf8)) else { return nil }
            } else if bytes[i...].starts(with: Array("<!--".utf8)) {
                guard skip(past: Array("-->".utf8)) else { return nil }
            } else if next == UInt8(ascii: "!") {
                guard skip(past: Array(">".utf8)) else { return nil }
            } else {
                i += 1
                let start = i
                while i < bytes.count, !([0x20, 0x09, 0x0A, 0x0D, UInt8(ascii: ">"), UInt8(ascii: "/")].contains(bytes[i])) {
                    i += 1
                }
                guard i > start, i < bytes.count else { return nil }
                return String(decoding: bytes[start..<i], as: UTF8.self)
            }
        }
    }

    // MARK: Web Push

    private static func webPushNative(body: Data, headers: [Header]) throws(HeraldError) -> PlatformPayload {
        var kept: [Header] = []
        for header in headers {
            let canonical: String
            switch header.name.lowercased() {
            case "ttl": canonical = "TTL"
            case "urgency": canonical = "Urgency"
            case "topic": canonical = "Topic"
            default: continue
            }
            try checkHeaderValue(header)
            kept.append(Header(name: canonical, value: header.value))
        }
        try PayloadLimits.check(byteCount: body.count, for: .webpush)
        return PlatformPayload(platform: .webpush, body: body, headers: kept)
    }

    // MARK: Headers

    /// A header value must not hold line breaks or other control characters (a tab is fine).
    package static func checkHeaderValue(_ header: Header) throws(HeraldError) {
        if header.value.utf8.contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }) {
            throw .badRequest("the value of header \(header.name) holds a line break or another control character")
        }
    }
}

/// The dates the hub API's clients send in headers (see ``PlatformPayload/apnsExpiration(_:)``).
enum HubDate {
    static func parse(_ text: String) -> Date? {
        var scanner = Scanner(Array(text.utf8))
        if let date = scanner.iso() { return date }
        scanner = Scanner(Array(text.utf8))
        return scanner.invariant()
    }

    private struct Scanner {
        let bytes: [UInt8]
        var i = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var atEnd: Bool { i == bytes.count }

        mutating func number(digits: ClosedRange<Int>) -> Int? {
            var value = 0
            var count = 0
            while i < bytes.count, count < digits.upperBound, bytes[i] >= UInt8(ascii: "0"), bytes[i] <= UInt8(ascii: "9") {
                value = value * 10 + Int(bytes[i] - UInt8(ascii: "0"))
                count += 1
                i += 1
            }
            return digits.contains(count) ? value : nil
        }

        mutating func take(_ byte: Character) -> Bool {
            guard i < bytes.count, bytes[i] == byte.asciiValue else { return false }
            i += 1
            return true
        }

        /// `yyyy-MM-dd[(T| )HH:mm[:ss[.f…]]][Z|±hh[:]mm]`.
        mutating func iso() -> Date? {
            guard let year = number(digits: 4...4), take("-"), let month = number(digits: 2...2), take("-"),
                let day = number(digits: 2...2)
            else { return nil }
            var hour = 0
            var minute = 0
            var second = 0
            var fraction = 0.0
            var offset = 0
            if take("T") || take("t") || take(" ") {
                guard let h = number(digits: 2...2), take(":"), let m = number(digits: 2...2) else { return nil }
                hour = h
                minute = m
                if take(":") {
                    guard let s = number(digits: 2...2) else { return nil }
                    second = s
                    if take(".") || take(",") {
                        let start = i
                        guard let f = number(digits: 1...9) else { return nil }
                        fraction = Double(f) / pow(10, Double(i - start))
                        while i < bytes.count, bytes[i] >= UInt8(ascii: "0"), bytes[i] <= UInt8(ascii: "9") { i += 1 }
                    }
                }
                if take("Z") || take("z") {
                    offset = 0
                } else if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") {
                    let sign = bytes[i] == UInt8(ascii: "-") ? -1 : 1
                    i += 1
                    guard let oh = number(digits: 2...2) else { return nil }
                    _ = take(":")
                    guard let om = number(digits: 2...2), oh <= 23, om <= 59 else { return nil }
                    offset = sign * (oh * 3600 + om * 60)
                }
            }
            guard atEnd else { return nil }
            return Self.date(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
                .map { $0.addingTimeInterval(fraction - Double(offset)) }
        }

        /// `MM/dd/yyyy HH:mm[:ss][ AM| PM]`, UTC.
        mutating func invariant() -> Date? {
            guard let month = number(digits: 1...2), take("/"), let day = number(digits: 1...2), take("/"),
                let year = number(digits: 4...4), take(" "), var hour = number(digits: 1...2), take(":"),
                let minute = number(digits: 2...2)
            else { return nil }
            var second = 0
            if take(":") {
                guard let s = number(digits: 2...2) else { return nil }
                second = s
            }
            if take(" ") {
                let rest = String(decoding: bytes[i...], as: UTF8.self).uppercased()
                guard rest == "AM" || rest == "PM", (1...12).contains(hour) else { return nil }
                hour = hour % 12 + (rest == "PM" ? 12 : 0)
                i = bytes.count
            }
            guard atEnd else { return nil }
            return Self.date(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
        }

        static func date(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) -> Date? {
            guard (1...12).contains(month), (1...31).contains(day), hour <= 23, minute <= 59, second <= 60 else { return nil }
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = .gmt
            let components = DateComponents(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
            guard let date = calendar.date(from: components),
                calendar.component(.day, from: date) == day
            else { return nil }
            return date
        }
    }
}
