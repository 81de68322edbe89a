import Crypto
import Foundation
import HeraldWebPushCrypto
import Testing

/// The published examples of RFC 8188 §3.1 and §3.2 and RFC 8291 Appendix A, byte for byte.
/// All binary values are base64url without padding, as the RFCs print them.
enum WebPushVectors {
    enum RFC8188Section3_1 {
        static let plaintext = "I am the walrus"
        static let ikm = "yqdlZ-tYemfogSmv7Ws5PQ"
        static let salt = "I1BsxtFttlv3u_Oo94xnmw"
        static let recordSize = 4096
        static let encoded = "I1BsxtFttlv3u_Oo94xnmwAAEAAA-NAVub2qFgBEuQKRapoZu-IxkIva3MEB1PD-ly8Thjg"
    }

    /// Decrypt only: the example pads its records in a way an encoder is free to choose.
    enum RFC8188Section3_2 {
        static let plaintext = "I am the walrus"
        static let ikm = "BO3ZVPxUlnLORbVGMpbT1Q"
        static let keyID = "a1"
        static let recordSize = 25
        static let encoded =
            "uNCkWiNYzKTnBN9ji3-qWAAAABkCYTHOG8chz_gnvgOqdGYovxyjuqRyJFjEDyoF1Fvkj6hQPdPHI51OEUKEpgz3SsLWIqS_uA"
    }

    enum RFC8291AppendixA {
        static let plaintext = "When I grow up, I want to be a watermelon"
        static let userAgentPrivate = "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"
        static let userAgentPublic =
            "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
        static let applicationServerPrivate = "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"
        static let applicationServerPublic =
            "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8"
        static let authSecret = "BTBZMqHH6r4Tts7J_aSIgg"
        static let salt = "DGv6ra1nlYgDCS1FRnbzlw"
        static let recordSize = 4096
        static let encoded =
            "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"
    }
}

func b64(_ text: String) throws -> [UInt8] {
    var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
    return try [UInt8](#require(Data(base64Encoded: base64)))
}

/// Base64url without padding, as the RFCs print binary values.
func base64URL(_ bytes: some Sequence<UInt8>) -> String {
    Data(bytes).base64EncodedString()
        .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
}

@Suite struct WebPushCryptoTests {
    typealias V1 = WebPushVectors.RFC8188Section3_1
    typealias V2 = WebPushVectors.RFC8188Section3_2
    typealias A = WebPushVectors.RFC8291AppendixA

    // MARK: RFC 8188

    @Test func rfc8188Section3_1EncryptsByteForByte() throws {
        let encoded = try WebPushCrypto.encrypt(
            Array(V1.plaintext.utf8), inputKeyingMaterial: try b64(V1.ikm), salt: try b64(V1.salt), recordSize: V1.recordSize)
        #expect(base64URL(encoded) == V1.encoded)
    }

    @Test func rfc8188Section3_1Decrypts() throws {
        let body = try b64(V1.encoded)
        let header = try WebPushCrypto.Header(parsing: body)
        #expect(header.salt == (try b64(V1.salt)))
        #expect(header.recordSize == 4096)
        #expect(header.keyID.isEmpty)
        let plaintext = try WebPushCrypto.decrypt(body, inputKeyingMaterial: try b64(V1.ikm))
        #expect(String(decoding: plaintext, as: UTF8.self) == V1.plaintext)
    }

    @Test func rfc8188Section3_2DecryptsMultipleRecordsWithKeyIDAndPadding() throws {
        let body = try b64(V2.encoded)
        let header = try WebPushCrypto.Header(parsing: body)
        #expect(header.keyID == Array(V2.keyID.utf8))
        #expect(header.recordSize == V2.recordSize)
        // Two records: the body is longer than the header plus one record.
        #expect(body.count > header.encodedCount + V2.recordSize)
        let plaintext = try WebPushCrypto.decrypt(body, inputKeyingMaterial: try b64(V2.ikm))
        #expect(String(decoding: plaintext, as: UTF8.self) == V2.plaintext)
    }

    @Test func rfc8188Section3_2TruncatedAfterTheFirstRecordIsRefused() throws {
        let body = try b64(V2.encoded)
        let header = try WebPushCrypto.Header(parsing: body)
        let firstRecordOnly = Array(body.prefix(header.encodedCount + V2.recordSize))
        #expect(throws: WebPushCryptoError(code: .truncated, message: "")) {
            try WebPushCrypto.decrypt(firstRecordOnly, inputKeyingMaterial: try b64(V2.ikm))
        }
    }

    @Test(arguments: [0, 1, 7, 8, 9, 100]) func generalFormRoundTripsOverManyRecords(length: Int) throws {
        let plaintext = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let ikm = (0..<16).map { UInt8($0) }
        let body = try WebPushCrypto.encrypt(plaintext, inputKeyingMaterial: ikm, recordSize: 25, keyID: Array("a1".utf8))
        let header = try WebPushCrypto.Header(parsing: body)
        #expect(header.keyID == Array("a1".utf8))
        // Every record but the last is exactly rs; 8 content bytes fit a 25-byte record.
        #expect(body.count - header.encodedCount == length + max(1, (length + 7) / 8) * 17)
        #expect(try WebPushCrypto.decrypt(body, inputKeyingMaterial: ikm) == plaintext)
    }

    @Test func alteredCiphertextWrongKeyAndReorderedRecordsAreRefused() throws {
        let ikm = try b64(V1.ikm)
        var body = try b64(V1.encoded)
        body[body.count - 20] ^= 0x01
        #expect(throws: WebPushCryptoError(code: .decryptionFailed, message: "")) {
            try WebPushCrypto.decrypt(body, inputKeyingMaterial: ikm)
        }
        #expect(throws: WebPushCryptoError(code: .decryptionFailed, message: "")) {
            try WebPushCrypto.decrypt(try b64(V1.encoded), inputKeyingMaterial: try b64(V2.ikm))
        }
        // Records swapped: each is authenticated with its sequence number.
        let multi = try WebPushCrypto.encrypt(Array("0123456789abcdef".utf8), inputKeyingMaterial: ikm, recordSize: 25)
        let start = 21
        let swapped = Array(multi[..<start]) + Array(multi[(start + 25)...]) + Array(multi[start..<(start + 25)])
        #expect(throws: WebPushCryptoError.self) {
            try WebPushCrypto.decrypt(swapped, inputKeyingMaterial: ikm)
        }
    }

    @Test func malformedHeadersAreRefused() throws {
        #expect(throws: WebPushCryptoError(code: .invalidHeader, message: "")) {
            try WebPushCrypto.Header(parsing: [UInt8](repeating: 0, count: 20))
        }
        var smallRecords = try b64(V1.encoded)
        smallRecords[16...19] = [0, 0, 0, 17]
        #expect(throws: WebPushCryptoError(code: .invalidHeader, message: "")) {
            try WebPushCrypto.decrypt(smallRecords, inputKeyingMaterial: try b64(V1.ikm))
        }
        let headerOnly = Array(try b64(V1.encoded).prefix(21))
        #expect(throws: WebPushCryptoError(code: .truncated, message: "")) {
            try WebPushCrypto.decrypt(headerOnly, inputKeyingMaterial: try b64(V1.ikm))
        }
    }

    // MARK: RFC 8291

    @Test func rfc8291AppendixAEncryptsByteForByte() throws {
        let serverKey = try P256.KeyAgreement.PrivateKey(rawRepresentation: try b64(A.applicationServerPrivate))
        #expect(base64URL(serverKey.publicKey.x963Representation) == A.applicationServerPublic)
        let encoded = try WebPushCrypto.encrypt(
            Array(A.plaintext.utf8),
            userAgentPublicKey: try WebPushCrypto.publicKey(try b64(A.userAgentPublic)),
            authSecret: try b64(A.authSecret),
            applicationServerKey: serverKey,
            salt: try b64(A.salt),
            recordSize: A.recordSize
        )
        #expect(base64URL(encoded) == A.encoded)
    }

    @Test func rfc8291AppendixADecrypts() throws {
        let userAgentKey = try P256.KeyAgreement.PrivateKey(rawRepresentation: try b64(A.userAgentPrivate))
        #expect(base64URL(userAgentKey.publicKey.x963Representation) == A.userAgentPublic)
        let plaintext = try WebPushCrypto.decrypt(
            try b64(A.encoded), userAgentPrivateKey: userAgentKey, authSecret: try b64(A.authSecret))
        #expect(String(decoding: plaintext, as: UTF8.self) == A.plaintext)

        // The wrong auth secret does not authenticate.
        var otherAuth = try b64(A.authSecret)
        otherAuth[0] ^= 0xFF
        #expect(throws: WebPushCryptoError(code: .decryptionFailed, message: "")) {
            try WebPushCrypto.decrypt(try b64(A.encoded), userAgentPrivateKey: userAgentKey, authSecret: otherAuth)
        }
    }

    @Test func rfc8291RoundTripsTheLargestPushMessageInto4096Bytes() throws {
        let userAgent = P256.KeyAgreement.PrivateKey()
        let auth = (0..<16).map { _ in UInt8.random(in: 0...255) }
        let plaintext = (0..<3993).map { _ in UInt8.random(in: 0...255) }
        let body = try WebPushCrypto.encrypt(plaintext, userAgentPublicKey: userAgent.publicKey, authSecret: auth)
        #expect(body.count == 4096)
        #expect(WebPushCrypto.messageOverhead == 103)
        let header = try WebPushCrypto.Header(parsing: body)
        #expect(header.recordSize == 4096)
        #expect(header.keyID.count == 65)
        #expect(try WebPushCrypto.decrypt(body, userAgentPrivateKey: userAgent, authSecret: auth) == plaintext)

        // A fresh sender key and salt every time: the same message never encrypts the same way.
        let again = try WebPushCrypto.encrypt(plaintext, userAgentPublicKey: userAgent.publicKey, authSecret: auth)
        #expect(again != body)
        #expect(again[0..<16] != body[0..<16])
        #expect(again[21..<86] != body[21..<86])
    }

    @Test func rfc8291RefusesBadKeysOversizedPlaintextAndSeveralRecords() throws {
        let userAgent = P256.KeyAgreement.PrivateKey()
        let auth = [UInt8](repeating: 7, count: 16)
        #expect(throws: WebPushCryptoError(code: .invalidKey, message: "")) {
            try WebPushCrypto.encrypt([1], userAgentPublicKey: userAgent.publicKey, authSecret: [UInt8](repeating: 7, count: 15))
        }
        #expect(throws: WebPushCryptoError(code: .invalidKey, message: "")) {
            try WebPushCrypto.publicKey([UInt8](userAgent.publicKey.compressedRepresentation))
        }
        var offCurve = [UInt8](userAgent.publicKey.x963Representation)
        offCurve[64] ^= 0x01
        #expect(throws: WebPushCryptoError(code: .invalidKey, message: "")) {
            try WebPushCrypto.publicKey(offCurve)
        }
        #expect(throws: WebPushCryptoError(code: .plaintextTooLarge, message: "")) {
            try WebPushCrypto.encrypt(
                [UInt8](repeating: 0, count: 4080), userAgentPublicKey: userAgent.publicKey, authSecret: auth)
        }
        // Two records (60 bytes in 30-byte records): RFC 8291 allows one.
        let sender = P256.KeyAgreement.PrivateKey()
        let header = WebPushCrypto.Header(
            salt: [UInt8](repeating: 0, count: 16), recordSize: 30, keyID: [UInt8](sender.publicKey.x963Representation))
        #expect(throws: WebPushCryptoError(code: .invalidHeader, message: "")) {
            try WebPushCrypto.decrypt(
                header.bytes + [UInt8](repeating: 0, count: 60), userAgentPrivateKey: userAgent, authSecret: auth)
        }
        // A key id that is not a public key.
        var body = try WebPushCrypto.encrypt([1, 2, 3], inputKeyingMaterial: auth, keyID: Array("a1".utf8))
        body[20] = 2
        #expect(throws: WebPushCryptoError(code: .invalidHeader, message: "")) {
            try WebPushCrypto.decrypt(body, userAgentPrivateKey: userAgent, authSecret: auth)
        }
    }
}
