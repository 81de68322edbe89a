import Crypto
public import Foundation
public import HeraldCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The server's 256-bit key that seals secure-push payloads at rest with AES-GCM.
///
/// Each payload is sealed with a fresh nonce, and its id and recipient are authenticated
/// with it: a sealed payload copied to another row (another id or another user) does not
/// open. The key never appears in a description, a log or an error.
///
/// ```swift
/// configuration.secureKey = try SecurePayloadKey.loadOrCreate(path: dataDirectory + "/keys/secure-payload.key")
/// ```
public struct SecurePayloadKey: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    let key: SymmetricKey

    /// A key from its 32 bytes.
    public init(bytes: Data) throws(SecurePayloadKeyError) {
        guard bytes.count == 32 else {
            throw SecurePayloadKeyError(code: .invalidKey, message: "a secure payload key has 32 bytes; this one has \(bytes.count)")
        }
        key = SymmetricKey(data: bytes)
    }

    private init(key: SymmetricKey) {
        self.key = key
    }

    /// A new random key.
    public static func generate() -> SecurePayloadKey {
        SecurePayloadKey(key: SymmetricKey(size: .bits256))
    }

    /// Loads the key file at `path`, or creates it with a new random key if there is none.
    ///
    /// The file holds the key in base64 (a line of 44 characters); 32 raw bytes are accepted
    /// too. A new file is created readable by its owner only (mode 0600), in a directory
    /// created with mode 0700, and appears complete or not at all: two processes starting
    /// together end up with the same key.
    ///
    /// Losing the file makes stored secure payloads unreadable (they expire anyway); back it
    /// up with the database.
    public static func loadOrCreate(path: String) throws(SecurePayloadKeyError) -> SecurePayloadKey {
        if let existing = try load(path: path) { return existing }
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700]
            )
        } catch {
            throw SecurePayloadKeyError(code: .fileSystem, message: "cannot create the directory \(directory)")
        }
        let key = generate()
        let text = key.key.withUnsafeBytes { Data($0).base64EncodedString() } + "\n"
        if try createExclusively(path: path, contents: Array(text.utf8)) { return key }
        // Another process created it first: use that one.
        guard let existing = try load(path: path) else {
            throw SecurePayloadKeyError(code: .fileSystem, message: "cannot create the key file \(path)")
        }
        return existing
    }

    /// Reads the key file at `path`, which must be there: a key handed to the server from
    /// outside (a secret mounted into a container, the same for every node), which is never
    /// created nor written here. It holds the key as ``loadOrCreate(path:)`` keeps it: 44
    /// characters of base64 (a line), or 32 raw bytes.
    public static func read(path: String) throws(SecurePayloadKeyError) -> SecurePayloadKey {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw SecurePayloadKeyError(code: .fileSystem, message: "there is no key file at \(path)")
        }
        guard !isDirectory.boolValue else {
            throw SecurePayloadKeyError(code: .fileSystem, message: "\(path) is a directory, not a key file")
        }
        guard let key = try load(path: path) else {
            throw SecurePayloadKeyError(code: .fileSystem, message: "there is no key file at \(path)")
        }
        return key
    }

    /// The key in the file at `path`; `nil` if there is no file.
    private static func load(path: String) throws(SecurePayloadKeyError) -> SecurePayloadKey? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        guard let contents = FileManager.default.contents(atPath: path) else {
            throw SecurePayloadKeyError(code: .fileSystem, message: "cannot read the key file \(path)")
        }
        if contents.count == 32 { return try SecurePayloadKey(bytes: contents) }
        let text = String(decoding: contents, as: UTF8.self).trimmingWhitespace()
        guard let bytes = Data(base64Encoded: text), bytes.count == 32 else {
            throw SecurePayloadKeyError(
                code: .invalidKey,
                message: "the key file \(path) must hold a 256-bit key: 44 characters of base64, or 32 raw bytes"
            )
        }
        return try SecurePayloadKey(bytes: bytes)
    }

    /// Writes a temporary file (0600), syncs it, and links it to `path` only if nothing is
    /// there. `false` if `path` exists.
    private static func createExclusively(path: String, contents: [UInt8]) throws(SecurePayloadKeyError) -> Bool {
        let temporary = path + ".tmp-\(UInt64.random(in: 0 ... .max))"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode_t(0o600))
        guard fd >= 0 else {
            throw SecurePayloadKeyError(code: .fileSystem, message: "cannot create a file beside \(path) (errno \(errno))")
        }
        defer { unlink(temporary) }
        var ok = fchmod(fd, mode_t(0o600)) == 0
        var written = 0
        while ok && written < contents.count {
            let n = contents.withUnsafeBytes { raw in write(fd, raw.baseAddress! + written, raw.count - written) }
            if n < 0 {
                if errno == EINTR { continue }
                ok = false
            } else {
                written += n
            }
        }
        ok = fsync(fd) == 0 && ok
        close(fd)
        guard ok else { throw SecurePayloadKeyError(code: .fileSystem, message: "cannot write the key file \(path)") }
        if link(temporary, path) == 0 { return true }
        if errno == EEXIST { return false }
        throw SecurePayloadKeyError(code: .fileSystem, message: "cannot create the key file \(path) (errno \(errno))")
    }

    /// A short, non-secret name of the key (the first 8 bytes of its SHA-256, in hex), to tell
    /// in logs which key a server uses.
    public var fingerprint: String {
        key.withUnsafeBytes { SHA256.hash(data: Data($0)) }.prefix(8).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

    public var description: String { "SecurePayloadKey(\(fingerprint))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: []) }

    // MARK: Sealing

    /// The additional authenticated data of a payload: its id and recipient.
    private static func associatedData(id: String, recipient: String) -> Data {
        Data("herald.secure-payload.v1\u{0}\(id)\u{0}\(recipient)".utf8)
    }

    /// Seals `plaintext` for the message `id` addressed to `recipient`: nonce, ciphertext and tag.
    func seal(_ plaintext: Data, id: String, recipient: String) throws -> Data {
        let box = try AES.GCM.seal(plaintext, using: key, authenticating: Self.associatedData(id: id, recipient: recipient))
        guard let combined = box.combined else {
            throw HeraldError(code: .internalError, message: "could not seal the secure payload")
        }
        return combined
    }

    /// Opens what ``seal(_:id:recipient:)`` sealed for the same id and recipient; throws if the
    /// key, id or recipient differ or the bytes were changed.
    func unseal(_ sealed: Data, id: String, recipient: String) throws -> Data {
        try AES.GCM.open(AES.GCM.SealedBox(combined: sealed), using: key, authenticating: Self.associatedData(id: id, recipient: recipient))
    }
}

/// A secure payload key that cannot be used: a file that cannot be read or written, or that
/// does not hold a 256-bit key. Messages name the file, never the key.
public struct SecurePayloadKeyError: CodedError {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case invalidKey, fileSystem
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The bytes are not a 256-bit key.
        public static let invalidKey = Code(.invalidKey)
        /// The key file or its directory cannot be read or written.
        public static let fileSystem = Code(.fileSystem)

        /// A short name, safe as a metric label.
        public var description: String { base.rawValue }
    }

    public let code: Code
    public let message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

}
