import Foundation
import HeraldCore
import HeraldPush
import NIOCore

/// One notification's id as its payloads carry it, so that a device can confirm it
/// (``Receipt``); made once per notification:
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
struct ReceiptID: Sendable {
    let id: String
    /// `"herald.id":"<id>"`, the id escaped as a JSON string.
    let member: [UInt8]

    init(_ id: String) {
        self.id = id
        let encoder = JSONEncoder()
        encoder.outputFormatting = .withoutEscapingSlashes
        // A string always encodes.
        member = Receipt.quotedPayloadKey + [UInt8(ascii: ":")] + Array(try! encoder.encode(id))
    }

    /// `body`, a JSON object, with the id as its first member; `nil` when it is not a JSON
    /// object, already has the key, or would grow larger than `limit` bytes.
    func inserted(into body: some Collection<UInt8>, limit: Int) -> [UInt8]? {
        guard let open = body.firstIndex(where: { !Self.isWhitespace($0) }), body[open] == UInt8(ascii: "{") else { return nil }
        let afterOpen = body.index(after: open)
        let isEmpty = body[afterOpen...].first(where: { !Self.isWhitespace($0) }) == UInt8(ascii: "}")
        let added = member.count + (isEmpty ? 0 : 1)
        guard body.count + added <= limit, !Receipt.payloadHasKey(body) else { return nil }
        var result: [UInt8] = []
        result.reserveCapacity(body.count + added)
        result += body[..<afterOpen]
        result += member
        if !isEmpty { result.append(UInt8(ascii: ",")) }
        result += body[afterOpen...]
        return result
    }

    /// An FCM `message` with the id in its `data`; `nil` when its `data` is not an object or
    /// has the key already, or when the message (of `byteCount` bytes) would grow beyond FCM's
    /// limit.
    func inserted(into message: JSONValue, byteCount: Int) -> JSONValue? {
        guard case .object(var members) = message else { return nil }
        // The member, a comma and, for a message without data, `"data":{},`.
        guard byteCount + member.count + 10 <= PayloadLimits.fcm else { return nil }
        if let index = members.firstIndex(where: { $0.key == "data" }) {
            guard case .object(var data) = members[index].value, !data.contains(where: { $0.key == Receipt.payloadKey }) else { return nil }
            data.append((Receipt.payloadKey, .string(id)))
            members[index].value = .object(data)
        } else {
            members.append(("data", .object([(Receipt.payloadKey, .string(id))])))
        }
        return .object(members)
    }

    /// The limit of an APNs payload with `apns-push-type` `pushType`; `nil` for a Live Activity
    /// push, which carries no id.
    static func apnsLimit(pushType: String?) -> Int? {
        guard ReplacingCopies.takesCollapseID(apnsPushType: pushType) else { return nil }
        let voip = pushType?.trimmingSpaces().lowercased() == "voip"
        return voip ? PayloadLimits.apnsVoIP : PayloadLimits.apns
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }
}

extension PushNotification {
    /// This notification carrying `id` where `platform`'s device can read it (see
    /// ``ReceiptID``); unchanged where it cannot, or when it would not fit. `byteCount` is an
    /// FCM message's size as sent.
    func carryingReceiptID(_ id: ReceiptID, on platform: Platform, byteCount: Int = 0) -> PushNotification {
        var notification = self
        switch (platform, body) {
        case (.apns, .bytes(let buffer)):
            guard let limit = ReceiptID.apnsLimit(pushType: header("apns-push-type")),
                let bytes = id.inserted(into: buffer.readableBytesView, limit: limit)
            else { return self }
            notification.body = .bytes(ByteBuffer(bytes: bytes))
        case (.webpush, .bytes(let buffer)):
            guard let bytes = id.inserted(into: buffer.readableBytesView, limit: PayloadLimits.webPushPlaintext) else { return self }
            notification.body = .bytes(ByteBuffer(bytes: bytes))
        case (.fcm, .fcmMessage(let message)):
            guard let carrying = id.inserted(into: message, byteCount: byteCount) else { return self }
            notification.body = .fcmMessage(carrying)
        default:
            return self
        }
        return notification
    }
}
