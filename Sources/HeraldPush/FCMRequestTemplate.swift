import Foundation
import HeraldCore
import NIOCore

/// The FCM v1 request body of one notification, encoded once and completed per device by
/// splicing the device's token in: `{"message":{…fields,"token":"` + the token, escaped by
/// the encoder + `"}}`.
///
/// Nothing is written by hand: the prefix and the suffix are ``FCMProvider/requestBody(_:token:)``'s
/// own encoding of the message with an empty token, cut around that token's two quotes, and
/// the token goes in as the same encoder escapes it. A token of printable ASCII other than `"`
/// and `\` (every FCM registration token) is its own escaped form; any other token is encoded
/// by the encoder. The body is therefore byte for byte the one ``FCMProvider/requestBody(_:token:)``
/// builds, at the cost of one buffer per device instead of an encoding of the whole message.
struct FCMRequestTemplate: Sendable {
    /// The encoding up to and including the token's opening quote.
    private let prefix: ByteBuffer

    /// What the encoding of a message with an empty token ends with.
    private static let emptyToken: StaticString = #""token":""}}"#
    /// What follows the token: its closing quote and the ends of `message` and of the request.
    private static let suffix: StaticString = #""}}"#

    /// `nil` unless `body` is an FCM message object (a byte body is decoded per send, as before).
    init?(_ body: PushNotification.Body) {
        guard case .fcmMessage(let message) = body, case .object(let fields) = message,
            let encoded = try? FCMProvider.requestBody(.fcmMessage(.object(fields)), token: "")
        else { return nil }
        let ending = Self.emptyToken.withUTF8Buffer { Array($0) }
        let bytes = encoded.readableBytesView
        guard bytes.count > ending.count, bytes.suffix(ending.count).elementsEqual(ending) else { return nil }
        prefix = encoded.getSlice(at: encoded.readerIndex, length: bytes.count - Self.suffix.utf8CodeUnitCount)!
    }

    /// The request body for `token`; `nil` if the encoder cannot encode it.
    func body(token: String) -> ByteBuffer? {
        if Self.isItsOwnEscape(token) {
            var buffer = ByteBufferAllocator().buffer(
                capacity: prefix.readableBytes + token.utf8.count + Self.suffix.utf8CodeUnitCount)
            buffer.writeImmutableBuffer(prefix)
            buffer.writeString(token)
            buffer.writeStaticString(Self.suffix)
            return buffer
        }
        guard let escaped = Self.escaped(token) else { return nil }
        var buffer = ByteBufferAllocator().buffer(capacity: prefix.readableBytes + escaped.count + Self.suffix.utf8CodeUnitCount)
        buffer.writeImmutableBuffer(prefix)
        buffer.writeBytes(escaped)
        buffer.writeStaticString(Self.suffix)
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
