import Foundation
import HeraldCore
import NIOCore

/// The FCM v1 request body of one notification, encoded once and completed per device by
/// splicing the device's token in: the encoding up to the token's value, the token as the
/// encoder escapes it, and the rest of the encoding.
///
/// Nothing is written by hand: the prefix and the suffix are ``FCMProvider/requestBody(_:token:)``'s
/// own encoding of the message with a random marker as its token (plain ASCII, found exactly
/// once), cut around that marker; the encoder sorts keys, so where the token goes does not
/// depend on its value. The token goes in as the same encoder escapes it: a token of printable
/// ASCII other than `"` and `\` (every FCM registration token) is its own escaped form; any
/// other token is encoded by the encoder. The body is therefore byte for byte the one
/// ``FCMProvider/requestBody(_:token:)`` builds, at the cost of one buffer per device instead of
/// an encoding of the whole message.
struct FCMRequestTemplate: Sendable {
    /// The encoding up to the token's value (its opening quote included).
    private let prefix: ByteBuffer
    /// The encoding after the token's value (its closing quote included).
    private let suffix: ByteBuffer

    /// `nil` unless `body` is an FCM message object (a byte body is decoded per send, as before).
    init?(_ body: PushNotification.Body) {
        let marker = "herald-token-" + String(UInt64.random(in: .min ... .max), radix: 16) + String(UInt64.random(in: .min ... .max), radix: 16)
        guard case .fcmMessage(let message) = body, case .object(let fields) = message,
            let encoded = try? FCMProvider.requestBody(.fcmMessage(.object(fields)), token: marker)
        else { return nil }
        let bytes = Array(encoded.readableBytesView)
        let needle = Array(marker.utf8)
        var found: [Int] = []
        if bytes.count >= needle.count {
            for start in 0...(bytes.count - needle.count) where bytes[start] == needle[0] {
                if bytes[start..<(start + needle.count)].elementsEqual(needle) { found.append(start) }
            }
        }
        guard found.count == 1, let at = found.first else { return nil }
        prefix = ByteBuffer(bytes: bytes[..<at])
        suffix = ByteBuffer(bytes: bytes[(at + needle.count)...])
    }

    /// The request body for `token`; `nil` if the encoder cannot encode it.
    func body(token: String) -> ByteBuffer? {
        if Self.isItsOwnEscape(token) {
            var buffer = ByteBufferAllocator().buffer(capacity: prefix.readableBytes + token.utf8.count + suffix.readableBytes)
            buffer.writeImmutableBuffer(prefix)
            buffer.writeString(token)
            buffer.writeImmutableBuffer(suffix)
            return buffer
        }
        guard let escaped = Self.escaped(token) else { return nil }
        var buffer = ByteBufferAllocator().buffer(capacity: prefix.readableBytes + escaped.count + suffix.readableBytes)
        buffer.writeImmutableBuffer(prefix)
        buffer.writeBytes(escaped)
        buffer.writeImmutableBuffer(suffix)
        return buffer
    }

    /// Whether the encoder writes `token` inside its quotes unchanged: printable ASCII
    /// without `"` and `\` (`/` is not escaped: the encoder runs with `.withoutEscapingSlashes`).
    static func isItsOwnEscape(_ token: String) -> Bool {
        token.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }
    }

    /// `token` as the encoder escapes it, without the quotes around it.
    static func escaped(_ token: String) -> [UInt8]? {
        guard let data = try? FCMProvider.makeEncoder().encode(token), data.count >= 2 else { return nil }
        return Array(data.dropFirst().dropLast())
    }
}
