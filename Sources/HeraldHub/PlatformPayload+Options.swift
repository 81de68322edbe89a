import Foundation
public import HeraldCore

extension PlatformPayload {
    /// This payload with a send's options in its platform's own terms, where it does not set
    /// them itself:
    ///
    /// | option | APNs | FCM (`message.android`) | WNS | Web Push |
    /// |---|---|---|---|---|
    /// | time to live | `apns-expiration` (unix seconds, from `now`) | `ttl` | `X-WNS-TTL` | `TTL` |
    /// | priority | `apns-priority` 10, 5, 1 | `priority` `HIGH`, `NORMAL` | – | `Urgency` |
    /// | collapse id | `apns-collapse-id` | `collapse_key` | `X-WNS-Tag` | `Topic` |
    ///
    /// The Web Push urgency option, when given, is the `Urgency` rather than the priority's.
    ///
    /// - Throws: ``HeraldError/badRequest(_:)`` when an option cannot be said on this platform:
    ///   a collapse id too long for it (APNs 64 bytes, WNS 64 characters, Web Push 32
    ///   characters of the base64url alphabet), a high priority for an APNs background push
    ///   (Apple requires 5), an FCM body that is not a message object.
    func applying(_ options: SendRequest.Options, now: Date = Date()) throws(HeraldError) -> PlatformPayload {
        let present = Set(headers.map { $0.name.lowercased() })
        var payload = self
        func add(_ name: String, _ value: String) {
            if !present.contains(name.lowercased()) { payload.headers.append(Header(name: name, value: value)) }
        }
        let seconds = options.timeToLive.map { Int($0.components.seconds) }
        if let collapseID = options.collapseID { try Self.check(collapseID: collapseID, on: platform) }
        switch platform {
        case .apns:
            if let seconds { add("apns-expiration", String(Int(now.timeIntervalSince1970) + seconds)) }
            if let priority = options.priority, !present.contains("apns-priority") {
                let pushType = headers.last { $0.name.lowercased() == "apns-push-type" }?.value.lowercased()
                if priority == .high, pushType == "background" {
                    throw .badRequest("a background APNs push is sent at priority normal (Apple requires apns-priority 5), not high")
                }
                add("apns-priority", priority == .high ? "10" : priority == .normal ? "5" : "1")
            }
            if let collapseID = options.collapseID { add("apns-collapse-id", collapseID) }
        case .fcm:
            var android: [(key: String, value: JSONValue)] = []
            if let seconds { android.append((key: "ttl", value: .string("\(seconds)s"))) }
            if let priority = options.priority { android.append((key: "priority", value: .string(priority == .high ? "HIGH" : "NORMAL"))) }
            if let collapseID = options.collapseID { android.append((key: "collapse_key", value: .string(collapseID))) }
            if !android.isEmpty { payload.body = try Self.fcmBody(body, addingToAndroid: android) }
        case .wns:
            if let seconds { add("X-WNS-TTL", String(seconds)) }
            if let collapseID = options.collapseID { add("X-WNS-Tag", collapseID) }
        case .webpush:
            if let seconds { add("TTL", String(seconds)) }
            if let urgency = options.urgency ?? options.priority?.rawValue { add("Urgency", urgency.lowercased()) }
            if let collapseID = options.collapseID { add("Topic", collapseID) }
        }
        return payload
    }

    /// Whether `collapseID` fits the header or field that says it on `platform`.
    private static func check(collapseID: String, on platform: Platform) throws(HeraldError) {
        guard !collapseID.isEmpty else { throw .badRequest("a collapse id cannot be empty") }
        switch platform {
        case .apns where collapseID.utf8.count > 64:
            throw .badRequest("the collapse id has \(collapseID.utf8.count) bytes; APNs takes at most 64 (apns-collapse-id)")
        case .wns where collapseID.count > 64:
            throw .badRequest("the collapse id has \(collapseID.count) characters; WNS takes at most 64 (X-WNS-Tag)")
        case .webpush:
            let base64URL = collapseID.utf8.allSatisfy { byte in
                (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39)
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
            }
            guard collapseID.utf8.count <= 32, base64URL else {
                throw .badRequest("a Web Push collapse id (Topic) is at most 32 characters of the base64url alphabet (A-Z, a-z, 0-9, - and _)")
            }
        default:
            if collapseID.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) {
                throw .badRequest("a collapse id cannot contain control characters")
            }
        }
    }

    /// An FCM message body with `fields` added to its `android` object where it does not set
    /// them.
    private static func fcmBody(_ body: Data, addingToAndroid fields: [(key: String, value: JSONValue)]) throws(HeraldError) -> Data {
        guard case .object(var root)? = try? JSONValue(parsing: body),
            let messageIndex = root.firstIndex(where: { $0.key == "message" }),
            case .object(var message) = root[messageIndex].value
        else {
            throw .badRequest("the fcm payload must be the JSON object of an FCM v1 message")
        }
        var android: [(key: String, value: JSONValue)] = []
        let androidIndex = message.firstIndex { $0.key == "android" }
        if let androidIndex {
            guard case .object(let existing) = message[androidIndex].value else {
                throw .badRequest("the fcm payload's message.android must be an object")
            }
            android = existing
        }
        for field in fields where !android.contains(where: { $0.key == field.key }) {
            android.append(field)
        }
        if let androidIndex {
            message[androidIndex].value = .object(android)
        } else {
            message.append((key: "android", value: .object(android)))
        }
        root[messageIndex].value = .object(message)
        do {
            return try JSONEncoder().encode(JSONValue.object(root))
        } catch {
            throw .badRequest("the fcm payload cannot be encoded again: \(error)")
        }
    }
}

extension SendRequest.Options {
    /// `payloads` that Herald built from a ``NotificationContent`` (whose APNs priority, 10, is
    /// a default rather than the sender's choice) ready for these options: without that
    /// default when a priority is asked for, so that the priority applies.
    public func replacingDefaults(in payloads: [PlatformPayload]) -> [PlatformPayload] {
        guard priority != nil else { return payloads }
        return payloads.map { payload in
            var payload = payload
            payload.headers.removeAll { $0.name.lowercased() == "apns-priority" }
            return payload
        }
    }
}
