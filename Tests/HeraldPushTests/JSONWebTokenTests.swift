import Crypto
import Foundation
import Testing
import _CryptoExtras

@testable import HeraldPush

@Suite struct JSONWebTokenTests {
    @Test func base64URLHasNoPaddingAndURLAlphabet() {
        #expect(JSONWebToken.base64URL(Data([0xFB, 0xFF])) == "-_8")
        #expect(JSONWebToken.base64URL(Data("a".utf8)) == "YQ")
        #expect(JSONWebToken.base64URLDecode("-_8") == Data([0xFB, 0xFF]))
    }

    @Test func apnsProviderTokenIsAVerifiableES256JWT() throws {
        let key = P256.Signing.PrivateKey()
        let issuedAt = Date(timeIntervalSince1970: 1_750_000_123.75)
        let token = try APNsProviderToken.sign(
            teamID: "TEAM123456", keyID: "KEY1234567", key: key, issuedAt: issuedAt, generation: 1)

        #expect(token.authorization.hasPrefix("bearer "))
        let jwt = try DecodedJWT(token.jwt)
        #expect(jwt.header.count == 2)
        #expect(jwt.header["alg"] as? String == "ES256")
        #expect(jwt.header["kid"] as? String == "KEY1234567")
        #expect(jwt.claims.count == 2)
        #expect(jwt.claims["iss"] as? String == "TEAM123456")
        #expect(jwt.claimsText.contains("\"iat\":1750000123"))
        #expect(!jwt.claimsText.contains("1750000123."))

        // Raw r || s, verifiable with the public key.
        #expect(jwt.signature.count == 64)
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: jwt.signature)
        #expect(key.publicKey.isValidSignature(signature, for: jwt.signingInput))
        #expect(!P256.Signing.PrivateKey().publicKey.isValidSignature(signature, for: jwt.signingInput))
    }

    @Test func rs256SignatureVerifiesWithThePublicKey() throws {
        struct Header: Encodable {
            var alg = "RS256"
            var typ = "JWT"
        }
        struct Claims: Encodable {
            var iss: String
            var iat: Int
        }
        let key = try TestKeys.rsa()
        let token = try JSONWebToken.rs256(header: Header(), claims: Claims(iss: "me@example.com", iat: 5), key: key)
        let jwt = try DecodedJWT(token)
        #expect(jwt.header["alg"] as? String == "RS256")
        #expect(jwt.claims["iss"] as? String == "me@example.com")
        let signature = _RSA.Signing.RSASignature(rawRepresentation: jwt.signature)
        #expect(signature.rawRepresentation.count == 256)
        #expect(key.publicKey.isValidSignature(signature, for: jwt.signingInput, padding: .insecurePKCS1v1_5))
        var tampered = jwt.signingInput
        tampered.append(0x20)
        #expect(!key.publicKey.isValidSignature(signature, for: tampered, padding: .insecurePKCS1v1_5))
    }
}

/// Keys that are slow to make, made once.
enum TestKeys {
    private static let rsaKey = Result { try _RSA.Signing.PrivateKey(keySize: .bits2048) }

    static func rsa() throws -> _RSA.Signing.PrivateKey { try rsaKey.get() }
}
