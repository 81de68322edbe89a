import Crypto
import Foundation
import HeraldCore
import Synchronization

/// VAPID authorization (RFC 8292) for one application-server key: an ES256 JWT per push
/// service origin, `{"aud": origin, "exp": …, "sub": subject}`, sent as
/// `Authorization: vapid t=<jwt>, k=<public key>`.
///
/// A token is reused for its origin until shortly before it expires, so a fan-out signs once
/// per push service, not once per message.
final class WebPushVAPID: Sendable {
    struct Token: Sendable {
        /// The whole `Authorization` header value.
        var authorization: String
        var refreshAt: Date
    }

    /// At most this many origins are cached; endpoints come from clients, so this is bounded.
    static let cacheLimit = 256

    let key: P256.Signing.PrivateKey
    let subject: String
    /// Seconds from signing to `exp`.
    let lifetime: TimeInterval
    /// A token is replaced this long before its `exp`.
    let refreshMargin: TimeInterval
    let now: @Sendable () -> Date
    /// `k`: the public key, uncompressed, base64url.
    let publicKey: String
    private let tokens = Mutex<[String: Token]>([:])
    private let signatures = Atomic<Int>(0)

    init(key: P256.Signing.PrivateKey, subject: String, lifetime: TimeInterval, now: @escaping @Sendable () -> Date) {
        self.key = key
        self.subject = subject
        self.lifetime = lifetime
        self.refreshMargin = min(lifetime / 4, 3600)
        self.now = now
        self.publicKey = JSONWebToken.base64URL(key.publicKey.x963Representation)
    }

    /// How many tokens have been signed.
    var signatureCount: Int { signatures.load(ordering: .relaxed) }

    /// The `Authorization` header value for a push service at `origin`
    /// (`https://host[:port]`), signing a new token if there is none or it is about to expire.
    func authorization(origin: String) throws -> String {
        let now = self.now()
        return try tokens.withLock { tokens in
            if let token = tokens[origin], now < token.refreshAt {
                return token.authorization
            }
            // Signing under the lock: concurrent sends to one push service wait for this token
            // rather than sign their own.
            let token = try sign(origin: origin, now: now)
            if tokens.count >= Self.cacheLimit {
                tokens = tokens.filter { now < $0.value.refreshAt }
                if tokens.count >= Self.cacheLimit { tokens.removeAll(keepingCapacity: true) }
            }
            tokens[origin] = token
            return token.authorization
        }
    }

    private func sign(origin: String, now: Date) throws -> Token {
        struct Header: Encodable {
            var typ = "JWT"
            var alg = "ES256"
        }
        struct Claims: Encodable {
            var aud: String
            var exp: Int
            var sub: String
        }
        let issuedAt = now.timeIntervalSince1970.rounded(.down)
        let exp = Int(issuedAt + lifetime)
        let jwt = try JSONWebToken.es256(header: Header(), claims: Claims(aud: origin, exp: exp, sub: subject), key: key)
        signatures.add(1, ordering: .relaxed)
        return Token(
            authorization: "vapid t=\(jwt), k=\(publicKey)",
            refreshAt: Date(timeIntervalSince1970: Double(exp) - refreshMargin)
        )
    }

    /// Reads a VAPID private key: PEM (PKCS#8 or SEC1), or base64url of the raw 32-byte scalar
    /// or of DER.
    static func privateKey(from text: String) throws(PushProviderError) -> P256.Signing.PrivateKey {
        let trimmed = text.trimmingWhitespace()
        let invalid = PushProviderError.invalidPrivateKey(
            "the VAPID key is neither a PEM P-256 private key nor a base64url raw or DER P-256 private key")
        if trimmed.hasPrefix("-----BEGIN") {
            guard let key = try? P256.Signing.PrivateKey(pemRepresentation: trimmed) else { throw invalid }
            return key
        }
        guard let bytes = JSONWebToken.base64URLDecode(trimmed) else { throw invalid }
        if bytes.count == 32, let key = try? P256.Signing.PrivateKey(rawRepresentation: bytes) {
            return key
        }
        if let key = try? P256.Signing.PrivateKey(derRepresentation: bytes) {
            return key
        }
        throw invalid
    }
}
