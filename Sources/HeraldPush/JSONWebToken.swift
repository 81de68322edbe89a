import Crypto
import Foundation
import _CryptoExtras

/// The few JSON Web Token operations the providers need (RFC 7515/7519, compact form),
/// done by hand: `base64url(header).base64url(claims).base64url(signature)`.
enum JSONWebToken {
    /// Signs `claims` with ES256: ECDSA P-256 over SHA-256, signature as raw `r || s`.
    static func es256<Header: Encodable, Claims: Encodable>(
        header: Header,
        claims: Claims,
        key: P256.Signing.PrivateKey
    ) throws -> String {
        let input = try signingInput(header: header, claims: claims)
        do {
            let signature = try key.signature(for: Data(input.utf8))
            return input + "." + base64URL(signature.rawRepresentation)
        } catch {
            throw PushProviderError.signingFailed("ES256 signing failed")
        }
    }

    /// Signs `claims` with RS256: RSASSA-PKCS1-v1_5 over SHA-256.
    static func rs256<Header: Encodable, Claims: Encodable>(
        header: Header,
        claims: Claims,
        key: _RSA.Signing.PrivateKey
    ) throws -> String {
        let input = try signingInput(header: header, claims: claims)
        do {
            let signature = try key.signature(for: SHA256.hash(data: Data(input.utf8)), padding: .insecurePKCS1v1_5)
            return input + "." + base64URL(signature.rawRepresentation)
        } catch {
            throw PushProviderError.signingFailed("RS256 signing failed")
        }
    }

    private static func signingInput<Header: Encodable, Claims: Encodable>(header: Header, claims: Claims) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return base64URL(try encoder.encode(header)) + "." + base64URL(try encoder.encode(claims))
    }

    /// Base64url without padding (RFC 7515 §2).
    static func base64URL<D: DataProtocol>(_ bytes: D) -> String {
        var text = Data(bytes).base64EncodedString()
        text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while text.last == "=" { text.removeLast() }
        return text
    }

    /// Decodes base64url with or without padding.
    static func base64URLDecode(_ text: some StringProtocol) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.utf8.count % 4 != 0 { base64.append("=") }
        return Data(base64Encoded: base64)
    }
}
