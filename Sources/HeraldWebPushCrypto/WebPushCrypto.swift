public import Crypto
public import Foundation

/// Message encryption for Web Push: the `aes128gcm` encrypted content-coding (RFC 8188) and
/// its use with a push subscription's keys (RFC 8291).
///
/// Both sides are here, so that the Web Push client encrypts and the Web Push emulator decrypts
/// with one implementation, checked against the RFCs' published examples byte for byte.
///
/// An encrypted body is a header — `salt(16) | rs(4, big-endian) | idlen(1) | keyid(idlen)` —
/// followed by records of `rs` bytes (the last may be shorter). Each record is
/// `AES-128-GCM(content | delimiter | zero padding)` with a 16-byte tag; the delimiter is `0x02`
/// in the last record and `0x01` in the others.
public enum WebPushCrypto {
    /// The record size Web Push senders use: large enough for any push message in one record.
    public static let defaultRecordSize = 4096
    /// An uncompressed P-256 public key (`0x04 | x | y`), as `p256dh` and the RFC 8291 key id.
    public static let publicKeySize = 65
    /// The subscription's authentication secret (`auth`).
    public static let authSecretSize = 16
    public static let saltSize = 16
    public static let tagSize = 16
    /// The smallest record size RFC 8188 allows: a delimiter and a tag.
    public static let minimumRecordSize = 18
    /// What RFC 8291 encryption adds to a plaintext: an 86-byte header (65-byte key id), the
    /// delimiter and the tag. Push services accept bodies of 4096 bytes, so a plaintext of at
    /// most 4096 − 103 = 3993 bytes.
    public static let messageOverhead = 21 + publicKeySize + 1 + tagSize

    /// The content-coding header that starts an `aes128gcm` body.
    public struct Header: Sendable, Hashable {
        public var salt: [UInt8]
        /// The record size `rs`: every record but the last is exactly this long.
        public var recordSize: Int
        /// RFC 8291: the sender's public key. RFC 8188: any identifier of the keying material.
        public var keyID: [UInt8]

        public init(salt: [UInt8], recordSize: Int, keyID: [UInt8]) {
            self.salt = salt
            self.recordSize = recordSize
            self.keyID = keyID
        }

        /// Reads the header at the start of `body`.
        public init(parsing body: some Collection<UInt8>) throws(WebPushCryptoError) {
            let bytes = Array(body.prefix(21 + 255))
            guard bytes.count >= 21 else {
                throw .invalidHeader("the body is shorter than the 21-byte aes128gcm header")
            }
            let recordSize = bytes[16..<20].reduce(0) { $0 << 8 | Int($1) }
            let idLength = Int(bytes[20])
            guard bytes.count >= 21 + idLength else {
                throw .invalidHeader("the body is shorter than its header's key id")
            }
            guard recordSize >= WebPushCrypto.minimumRecordSize else {
                throw .invalidHeader("the record size \(recordSize) is below 18")
            }
            self.salt = Array(bytes[0..<16])
            self.recordSize = recordSize
            self.keyID = Array(bytes[21..<(21 + idLength)])
        }

        /// The header's length on the wire.
        public var encodedCount: Int { 21 + keyID.count }

        /// The header's bytes.
        public var bytes: [UInt8] {
            var bytes = salt
            bytes.reserveCapacity(encodedCount)
            let rs = UInt32(truncatingIfNeeded: recordSize)
            bytes += [UInt8(rs >> 24), UInt8(truncatingIfNeeded: rs >> 16), UInt8(truncatingIfNeeded: rs >> 8), UInt8(truncatingIfNeeded: rs)]
            bytes.append(UInt8(truncatingIfNeeded: keyID.count))
            bytes += keyID
            return bytes
        }
    }

    // MARK: - RFC 8291 (Web Push)

    /// Encrypts a push message for a subscription (RFC 8291): one record, the sender's public key
    /// as key id.
    ///
    /// - Parameters:
    ///   - plaintext: at most `recordSize − 17` bytes; a push service also limits the whole body
    ///     (4096 bytes: see ``messageOverhead``).
    ///   - userAgentPublicKey: the subscription's `p256dh`.
    ///   - authSecret: the subscription's 16-byte `auth`.
    ///   - applicationServerKey: the sender's ECDH key pair. RFC 8291 wants a new one per
    ///     message, which the default gives; pass one only to reproduce known output.
    ///   - salt: 16 bytes; random by default (a salt must never be reused with the same keys).
    public static func encrypt(
        _ plaintext: some DataProtocol,
        userAgentPublicKey: P256.KeyAgreement.PublicKey,
        authSecret: some DataProtocol,
        applicationServerKey: P256.KeyAgreement.PrivateKey = .init(),
        salt: [UInt8]? = nil,
        recordSize: Int = defaultRecordSize
    ) throws(WebPushCryptoError) -> [UInt8] {
        let senderPublic = [UInt8](applicationServerKey.publicKey.x963Representation)
        let ikm = try webPushKeyingMaterial(
            privateKey: applicationServerKey,
            peerPublicKey: userAgentPublicKey,
            userAgentPublicKey: [UInt8](userAgentPublicKey.x963Representation),
            applicationServerPublicKey: senderPublic,
            authSecret: authSecret
        )
        guard plaintext.count + 1 + tagSize <= recordSize else {
            throw .plaintextTooLarge(
                "a \(plaintext.count)-byte plaintext does not fit one \(recordSize)-byte record")
        }
        return try encrypt(plaintext, inputKeyingMaterial: ikm, salt: salt, recordSize: recordSize, keyID: senderPublic)
    }

    /// Decrypts a push message with the subscription's private key and `auth` secret (RFC 8291):
    /// the key id must be the sender's 65-byte public key and the message one record.
    public static func decrypt(
        _ body: some DataProtocol,
        userAgentPrivateKey: P256.KeyAgreement.PrivateKey,
        authSecret: some DataProtocol
    ) throws(WebPushCryptoError) -> [UInt8] {
        let bytes = [UInt8](body)
        let header = try Header(parsing: bytes)
        guard header.keyID.count == publicKeySize else {
            throw .invalidHeader("the key id is \(header.keyID.count) bytes, not a 65-byte public key")
        }
        guard bytes.count - header.encodedCount <= header.recordSize else {
            throw .invalidHeader("a push message must be a single record")
        }
        let senderPublic = try publicKey(header.keyID, name: "the sender's key id")
        let ikm = try webPushKeyingMaterial(
            privateKey: userAgentPrivateKey,
            peerPublicKey: senderPublic,
            userAgentPublicKey: [UInt8](userAgentPrivateKey.publicKey.x963Representation),
            applicationServerPublicKey: header.keyID,
            authSecret: authSecret
        )
        return try decryptRecords(bytes, header: header, inputKeyingMaterial: ikm)
    }

    /// An uncompressed P-256 public key from its 65 bytes (`p256dh`, a key id).
    public static func publicKey(
        _ bytes: some DataProtocol, name: String = "the public key"
    ) throws(WebPushCryptoError)
        -> P256.KeyAgreement.PublicKey
    {
        guard bytes.count == publicKeySize, bytes.first == 0x04 else {
            throw .invalidKey("\(name) is not a 65-byte uncompressed P-256 point")
        }
        do {
            return try P256.KeyAgreement.PublicKey(x963Representation: Array(bytes))
        } catch {
            throw .invalidKey("\(name) is not a point on P-256")
        }
    }

    /// `IKM = HKDF(salt: auth, ikm: ECDH secret, info: "WebPush: info" 0x00 | ua_public | as_public, L: 32)`.
    private static func webPushKeyingMaterial(
        privateKey: P256.KeyAgreement.PrivateKey,
        peerPublicKey: P256.KeyAgreement.PublicKey,
        userAgentPublicKey: [UInt8],
        applicationServerPublicKey: [UInt8],
        authSecret: some DataProtocol
    ) throws(WebPushCryptoError) -> [UInt8] {
        guard authSecret.count == authSecretSize else {
            throw .invalidKey("the authentication secret is \(authSecret.count) bytes, not 16")
        }
        let shared: SharedSecret
        do {
            shared = try privateKey.sharedSecretFromKeyAgreement(with: peerPublicKey)
        } catch {
            throw .invalidKey("the P-256 key agreement failed")
        }
        var info = Array("WebPush: info".utf8)
        info.append(0)
        info += userAgentPublicKey
        info += applicationServerPublicKey
        let ikm = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: shared),
            salt: Array(authSecret),
            info: info,
            outputByteCount: 32
        )
        return ikm.withUnsafeBytes { Array($0) }
    }

    // MARK: - RFC 8188 (aes128gcm)

    /// Encrypts `plaintext` with the `aes128gcm` content-coding: records of `recordSize` bytes,
    /// no padding beyond the delimiter, `keyID` in the header.
    public static func encrypt(
        _ plaintext: some DataProtocol,
        inputKeyingMaterial ikm: some DataProtocol,
        salt: [UInt8]? = nil,
        recordSize: Int = defaultRecordSize,
        keyID: [UInt8] = []
    ) throws(WebPushCryptoError) -> [UInt8] {
        guard recordSize >= minimumRecordSize, recordSize <= Int(UInt32.max) else {
            throw .invalidHeader("the record size must be between 18 and 2^32 − 1")
        }
        guard keyID.count <= 255 else { throw .invalidHeader("a key id is at most 255 bytes") }
        let salt = salt ?? randomBytes(saltSize)
        guard salt.count == saltSize else { throw .invalidHeader("the salt must be 16 bytes") }
        let header = Header(salt: salt, recordSize: recordSize, keyID: keyID)
        let keys = contentKeys(ikm: ikm, salt: salt)

        let content = [UInt8](plaintext)
        let chunk = recordSize - 1 - tagSize
        let recordCount = max(1, (content.count + chunk - 1) / chunk)
        var output = header.bytes
        output.reserveCapacity(header.encodedCount + content.count + recordCount * (1 + tagSize))
        var start = 0
        for sequence in 0..<recordCount {
            let end = min(start + chunk, content.count)
            let isLast = sequence == recordCount - 1
            var record = Array(content[start..<end])
            record.append(isLast ? 0x02 : 0x01)
            output += try seal(record, keys: keys, sequence: UInt64(sequence))
            start = end
        }
        return output
    }

    /// Decrypts an `aes128gcm` body of any number of records with the keying material `ikm`
    /// (read ``Header/keyID`` first to choose it).
    public static func decrypt(
        _ body: some DataProtocol,
        inputKeyingMaterial ikm: some DataProtocol
    ) throws(WebPushCryptoError) -> [UInt8] {
        let bytes = [UInt8](body)
        let header = try Header(parsing: bytes)
        return try decryptRecords(bytes, header: header, inputKeyingMaterial: ikm)
    }

    private struct ContentKeys {
        var key: SymmetricKey
        var nonce: [UInt8]
    }

    /// `PRK = HMAC-SHA-256(salt, IKM)`; the CEK (16 bytes) and base nonce (12 bytes) expand it
    /// with `"Content-Encoding: aes128gcm" 0x00` and `"Content-Encoding: nonce" 0x00`.
    private static func contentKeys(ikm: some DataProtocol, salt: [UInt8]) -> ContentKeys {
        let prk = HKDF<SHA256>.extract(inputKeyMaterial: SymmetricKey(data: Array(ikm)), salt: salt)
        var keyInfo = Array("Content-Encoding: aes128gcm".utf8)
        keyInfo.append(0)
        var nonceInfo = Array("Content-Encoding: nonce".utf8)
        nonceInfo.append(0)
        let key = HKDF<SHA256>.expand(pseudoRandomKey: prk, info: keyInfo, outputByteCount: 16)
        let nonce = HKDF<SHA256>.expand(pseudoRandomKey: prk, info: nonceInfo, outputByteCount: 12)
        return ContentKeys(key: key, nonce: nonce.withUnsafeBytes { Array($0) })
    }

    /// The record nonce: the base nonce XOR the record's sequence number (big-endian, 96 bits).
    private static func nonce(_ keys: ContentKeys, sequence: UInt64) -> AES.GCM.Nonce {
        var nonce = keys.nonce
        for index in 0..<8 {
            nonce[11 - index] ^= UInt8(truncatingIfNeeded: sequence >> (8 * UInt64(index)))
        }
        // 12 bytes are always a valid GCM nonce.
        return try! AES.GCM.Nonce(data: nonce)
    }

    private static func seal(_ record: [UInt8], keys: ContentKeys, sequence: UInt64) throws(WebPushCryptoError) -> [UInt8] {
        do {
            let box = try AES.GCM.seal(record, using: keys.key, nonce: nonce(keys, sequence: sequence))
            return Array(box.ciphertext) + Array(box.tag)
        } catch {
            throw .decryptionFailed("AES-128-GCM encryption failed")
        }
    }

    private static func decryptRecords(
        _ bytes: [UInt8],
        header: Header,
        inputKeyingMaterial ikm: some DataProtocol
    ) throws(WebPushCryptoError) -> [UInt8] {
        let keys = contentKeys(ikm: ikm, salt: header.salt)
        var start = header.encodedCount
        guard start < bytes.count else { throw .truncated("the body has no record") }
        var plaintext: [UInt8] = []
        plaintext.reserveCapacity(bytes.count - start)
        var sequence: UInt64 = 0
        while start < bytes.count {
            let end = min(start + header.recordSize, bytes.count)
            let isLast = end == bytes.count
            guard end - start >= 1 + tagSize else {
                throw .truncated("record \(sequence) is shorter than a delimiter and a tag")
            }
            let record: [UInt8]
            do {
                let box = try AES.GCM.SealedBox(
                    nonce: nonce(keys, sequence: sequence),
                    ciphertext: bytes[start..<(end - tagSize)],
                    tag: bytes[(end - tagSize)..<end]
                )
                record = Array(try AES.GCM.open(box, using: keys.key))
            } catch {
                throw .decryptionFailed("record \(sequence) does not authenticate")
            }
            guard let delimiterIndex = record.lastIndex(where: { $0 != 0 }) else {
                throw .invalidPadding("record \(sequence) has no padding delimiter")
            }
            switch record[delimiterIndex] {
            case 0x02 where isLast:
                break
            case 0x01 where !isLast:
                break
            case 0x01:
                throw .truncated("the last record has the delimiter of a record that is not last")
            default:
                throw .invalidPadding("record \(sequence) has the padding delimiter \(record[delimiterIndex])")
            }
            plaintext += record[..<delimiterIndex]
            start = end
            sequence += 1
        }
        return plaintext
    }

    private static func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in generator.next() }
    }
}
