import Foundation
import HeraldCore
import HeraldPush
import NIOCore

/// Where a notification carries its id, so that the device can confirm it (``Receipt``):
///
/// | platform | where | |
/// |---|---|---|
/// | APNs | a top-level key of the payload, `"herald.id"` | not in a Live Activity push, which the system handles |
/// | FCM | a key of the message's `data`, `"herald.id"` | `data` is added if the message has none |
/// | Web Push | a top-level key of a JSON object payload, `"herald.id"` | not in a payload that is not a JSON object |
/// | WNS | — | a toast's or tile's XML has no place an app could read it from |
///
/// The key is added as the first member, unless the sender put one there, and only when the
/// payload stays within the push service's limit.
enum ReceiptID {
    /// `body`, a JSON object, with `"herald.id": id` as its first member; `nil` when it is not a
    /// JSON object, already has the key, or would grow larger than `limit` bytes.
    static func inserting(_ id: String, into body: some Collection<UInt8>, limit: Int) -> [UInt8]? {
        guard let open = body.firstIndex(where: { !isWhitespace($0) }), body[open] == UInt8(ascii: "{") else { return nil }
        let key = Array("\"\(Receipt.payloadKey)\"".utf8)
        guard !contains(body, key) else { return nil }
        let afterOpen = body.index(after: open)
        let isEmpty = body[afterOpen...].first(where: { !isWhitespace($0) }) == UInt8(ascii: "}")
        var member = key + [UInt8(ascii: ":")] + jsonString(id)
        if !isEmpty { member.append(UInt8(ascii: ",")) }
        guard body.count + member.count <= limit else { return nil }
        var result: [UInt8] = []
        result.reserveCapacity(body.count + member.count)
        result += body[..<afterOpen]
        result += member
        result += body[afterOpen...]
        return result
    }

    /// An FCM `message` with `"herald.id": id` in its `data`; `nil` when its `data` is not an
    /// object or has the key already, or when the message (of `byteCount` bytes) would grow
    /// beyond FCM's limit.
    static func inserting(_ id: String, into message: JSONValue, byteCount: Int) -> JSONValue? {
        guard case .object(var members) = message else { return nil }
        // `"herald.id":"…",` and, for a message without data, `"data":{},`.
        guard byteCount + id.utf8.count + 40 <= PayloadLimits.fcm else { return nil }
        if let index = members.firstIndex(where: { $0.key == "data" }) {
            guard case .object(var data) = members[index].value, !data.contains(where: { $0.key == Receipt.payloadKey }) else { return nil }
            data.append((Receipt.payloadKey, .string(id)))
            members[index].value = .object(data)
        } else {
            members.append(("data", .object([(Receipt.payloadKey, .string(id))])))
        }
        return .object(members)
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    private static func contains(_ body: some Collection<UInt8>, _ needle: [UInt8]) -> Bool {
        let bytes = Array(body)
        guard bytes.count >= needle.count else { return false }
        for start in 0...(bytes.count - needle.count) where bytes[start] == needle[0] {
            if bytes[start..<(start + needle.count)].elementsEqual(needle) { return true }
        }
        return false
    }

    /// `text` as a JSON string, quotes included.
    private static func jsonString(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = [UInt8(ascii: "\"")]
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                bytes += [UInt8(ascii: "\\"), byte]
            case 0..<0x20:
                bytes += Array("\\u00".utf8) + Array(String(byte, radix: 16).utf8).leftPadded(to: 2)
            default:
                bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
        return bytes
    }
}

extension Array<UInt8> {
    fileprivate func leftPadded(to length: Int) -> [UInt8] {
        count >= length ? self : Array(repeating: UInt8(ascii: "0"), count: length - count) + self
    }
}

extension PushNotification {
    /// This notification carrying `id` where `platform`'s device can read it (see
    /// ``ReceiptID``); unchanged where it cannot, or when it would not fit. `byteCount` is an
    /// FCM message's size as sent.
    func carryingReceiptID(_ id: String?, on platform: Platform, byteCount: Int = 0) -> PushNotification {
        guard let id else { return self }
        var notification = self
        switch (platform, body) {
        case (.apns, .bytes(let buffer)):
            let pushType = header("apns-push-type")
            guard ReplacingCopies.takesCollapseID(apnsPushType: pushType) else { return self }
            let voip = pushType?.trimmingCharacters(in: .whitespaces).lowercased() == "voip"
            guard let bytes = ReceiptID.inserting(id, into: buffer.readableBytesView, limit: voip ? PayloadLimits.apnsVoIP : PayloadLimits.apns)
            else { return self }
            notification.body = .bytes(ByteBuffer(bytes: bytes))
        case (.webpush, .bytes(let buffer)):
            guard let bytes = ReceiptID.inserting(id, into: buffer.readableBytesView, limit: PayloadLimits.webPushPlaintext) else { return self }
            notification.body = .bytes(ByteBuffer(bytes: bytes))
        case (.fcm, .fcmMessage(let message)):
            guard let carrying = ReceiptID.inserting(id, into: message, byteCount: byteCount) else { return self }
            notification.body = .fcmMessage(carrying)
        default:
            return self
        }
        return notification
    }
}
