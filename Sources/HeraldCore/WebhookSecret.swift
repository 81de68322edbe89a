public import Foundation

/// The secret an endpoint's events are signed with, as Standard Webhooks writes it:
/// `whsec_` and the base64 of 32 random bytes. Shown once, when it is made; never printed.
public struct WebhookSecret: Sendable, Hashable, SecretRedacting {
    /// `whsec_<base64>`.
    public let text: String

    /// The key bytes: the base64 after `whsec_`.
    public var key: Data { Data(base64Encoded: String(text.dropFirst(Self.prefix.count))) ?? Data() }

    public static let prefix = "whsec_"

    /// A secret as written (`whsec_<base64>` of 24 to 64 bytes).
    ///
    /// - Throws: ``HeraldError/badRequest(_:)`` for anything else (without repeating it).
    public init(_ text: String) throws(HeraldError) {
        guard text.hasPrefix(Self.prefix), let bytes = Data(base64Encoded: String(text.dropFirst(Self.prefix.count))),
            (24...64).contains(bytes.count)
        else {
            throw .badRequest("a webhook secret is 'whsec_' and the base64 of 24 to 64 bytes")
        }
        self.text = text
    }

    /// A new secret of 32 bytes from the system's random generator.
    public static func random() -> WebhookSecret {
        var generator = SystemRandomNumberGenerator()
        let bytes = Data((0..<32).map { _ in UInt8.random(in: 0 ... .max, using: &generator) })
        // The text is well formed by construction.
        return try! WebhookSecret(prefix + bytes.base64EncodedString())
    }

    public var customMirror: Mirror {
        Mirror(self, children: ["text": Self.redacted], displayStyle: .struct)
    }
}
