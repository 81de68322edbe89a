import Crypto
import Foundation
public import HeraldCore

/// Standard Webhooks signatures: `v1,<base64 of HMAC-SHA256(secret, "id.timestamp.body")>`,
/// one per secret, space-separated in `webhook-signature`.
///
/// While an endpoint's previous secret is still valid after a rotation, each event carries two
/// signatures (the new secret's first); a receiver accepts an event when any of them verifies
/// with a secret it holds.
public enum WebhookSignature {
    /// The `webhook-signature` header of an event signed with each of `secrets`.
    public static func header(id: String, timestamp: Int, body: String, secrets: [WebhookSecret]) -> String {
        secrets.map { "v1," + signature(id: id, timestamp: timestamp, body: body, key: $0.key) }.joined(separator: " ")
    }

    /// Whether one of the signatures of `header` is that of `secret` over the event; compares
    /// in constant time.
    public static func verify(header: String, id: String, timestamp: Int, body: String, secret: WebhookSecret) -> Bool {
        let expected = Data(signature(id: id, timestamp: timestamp, body: body, key: secret.key).utf8)
        return header.split(separator: " ").contains { entry in
            guard entry.hasPrefix("v1,") else { return false }
            let given = Data(entry.dropFirst(3).utf8)
            guard given.count == expected.count else { return false }
            return zip(given, expected).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
        }
    }

    private static func signature(id: String, timestamp: Int, body: String, key: Data) -> String {
        let content = Data("\(id).\(timestamp).\(body)".utf8)
        let code = HMAC<SHA256>.authenticationCode(for: content, using: SymmetricKey(data: key))
        return Data(code).base64EncodedString()
    }
}
