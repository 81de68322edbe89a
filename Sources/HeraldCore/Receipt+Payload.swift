extension Receipt {
    /// The key as it appears in a JSON payload, quotes included: `"herald.id"`.
    public static let quotedPayloadKey: [UInt8] = Array("\"\(payloadKey)\"".utf8)

    /// Whether `payload` has a member named ``payloadKey`` (whatever its value): the sender's
    /// own, which Herald leaves as it is.
    public static func payloadHasKey(_ payload: some Collection<UInt8>) -> Bool {
        keyEnd(in: Array(payload)) != nil
    }

    /// The notification id `payload` carries under ``payloadKey`` (a JSON string), if any: what
    /// a device posts back in its receipt.
    public static func notificationID(inPayload payload: some Collection<UInt8>) -> String? {
        let bytes = Array(payload)
        guard var cursor = keyEnd(in: bytes) else { return nil }
        while cursor < bytes.count, bytes[cursor] == UInt8(ascii: " ") || bytes[cursor] == UInt8(ascii: ":") { cursor += 1 }
        guard cursor < bytes.count, bytes[cursor] == UInt8(ascii: "\"") else { return nil }
        let start = cursor + 1
        guard let end = bytes[start...].firstIndex(of: UInt8(ascii: "\"")) else { return nil }
        return String(decoding: bytes[start..<end], as: UTF8.self)
    }

    /// The index just after the first `"herald.id"` in `bytes`.
    private static func keyEnd(in bytes: [UInt8]) -> Int? {
        let key = quotedPayloadKey
        guard bytes.count >= key.count else { return nil }
        for start in 0...(bytes.count - key.count) where bytes[start] == key[0] {
            if bytes[start..<(start + key.count)].elementsEqual(key) { return start + key.count }
        }
        return nil
    }
}
