public import HeraldCore

/// An error from encrypting or decrypting a Web Push message (RFC 8188, RFC 8291).
///
/// Messages say what is wrong with the input (a key of the wrong length, a bad padding
/// delimiter) and never contain key material or plaintext. Equality compares the code only
/// (``CodedError``).
public struct WebPushCryptoError: CodedError {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case invalidKey, invalidHeader, plaintextTooLarge, decryptionFailed, invalidPadding, truncated
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// A public key is not an uncompressed P-256 point, a private key or an authentication
        /// secret has the wrong length, or the key agreement failed.
        public static let invalidKey = Code(.invalidKey)
        /// The content-coding header is short, its record size is below 18, or (RFC 8291) its
        /// key id is not a 65-byte public key or the message has more than one record.
        public static let invalidHeader = Code(.invalidHeader)
        /// The plaintext does not fit the one record that RFC 8291 allows.
        public static let plaintextTooLarge = Code(.plaintextTooLarge)
        /// A record does not authenticate: wrong key, wrong secret or altered bytes.
        public static let decryptionFailed = Code(.decryptionFailed)
        /// A record has no padding delimiter, or the wrong one for its position.
        public static let invalidPadding = Code(.invalidPadding)
        /// The content ends before its last record (RFC 8188 §2).
        public static let truncated = Code(.truncated)

        /// A short name, safe as a metric label.
        public var description: String { base.rawValue }
    }

    public let code: Code
    /// What went wrong, never containing key material or plaintext.
    public let message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    static func invalidKey(_ message: String) -> WebPushCryptoError { .init(code: .invalidKey, message: message) }
    static func invalidHeader(_ message: String) -> WebPushCryptoError { .init(code: .invalidHeader, message: message) }
    static func plaintextTooLarge(_ message: String) -> WebPushCryptoError {
        .init(code: .plaintextTooLarge, message: message)
    }
    static func decryptionFailed(_ message: String) -> WebPushCryptoError {
        .init(code: .decryptionFailed, message: message)
    }
    static func invalidPadding(_ message: String) -> WebPushCryptoError { .init(code: .invalidPadding, message: message) }
    static func truncated(_ message: String) -> WebPushCryptoError { .init(code: .truncated, message: message) }
}
