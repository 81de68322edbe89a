public import Foundation

/// A secure-push payload as the store keeps it: sealed by the server before it reaches the
/// store, so the store (its file, its backups) never holds the plaintext.
public struct SecureMessage: Sendable, Hashable {
    /// A random id, unique among secure messages; the only thing that travels through the push
    /// service. The server makes decimal numbers below 2³¹ (odd ones for secure messages, so
    /// that no rich content has the same id); the store treats it as text.
    public var id: String
    /// The only user who may read it (lowercased user name).
    public var recipient: String
    /// Who sent it.
    public var sender: String
    /// The sealed payload (nonce, ciphertext and tag); opaque to the store.
    public var sealed: Data
    public var createdAt: Date
    /// After this it is gone: reads return nothing, and a purge deletes it.
    public var expiresAt: Date
    /// How many times the recipient has read it.
    public var readCount: Int
    /// When the recipient first read it.
    public var firstReadAt: Date?

    public init(
        id: String,
        recipient: String,
        sender: String,
        sealed: Data,
        createdAt: Date,
        expiresAt: Date,
        readCount: Int = 0,
        firstReadAt: Date? = nil
    ) {
        self.id = id
        self.recipient = recipient
        self.sender = sender
        self.sealed = sealed
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.readCount = readCount
        self.firstReadAt = firstReadAt
    }
}

/// What the store knows of uploaded rich content: who may read it and until when. The bytes
/// are kept beside it (``ContentStore/richContentBytes(id:)``), so that every node sharing
/// the store serves them.
public struct RichContent: Sendable, Hashable {
    /// A random id, unique among rich content. The server makes even decimal numbers below 2³¹
    /// (see ``SecureMessage/id``); the store treats it as text.
    public var id: String
    /// The user who uploaded it: the only one who may send it, and always allowed to read it.
    public var owner: String
    /// Its media type, such as `image/png`.
    public var mediaType: String
    /// Its size in bytes.
    public var size: Int
    public var createdAt: Date
    public var expiresAt: Date

    public init(id: String, owner: String, mediaType: String, size: Int, createdAt: Date, expiresAt: Date) {
        self.id = id
        self.owner = owner
        self.mediaType = mediaType
        self.size = size
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }
}

/// Content that devices fetch by id: secure-push payloads and rich-push content metadata.
///
/// Every method is one statement or one transaction in plain SQL (an expiring row per item,
/// a table of who may read rich content, a table of its bytes), the same in every store;
/// nothing here needs leases. Expired items are invisible at once and deleted by the
/// purge methods, which a periodic sweep calls.
public protocol ContentStore: Sendable {
    /// Moves the files of rich content that releases before the bytes were in the store kept
    /// (one per upload in `directory`, named after its id) into the store, and deletes them;
    /// returns how many it moved. A store that never had such files (PostgreSQL) moves none and
    /// leaves `directory` alone.
    @discardableResult
    func importRichContentFiles(directory: String) async throws -> Int

    /// Saves a new secure message. Throws ``HeraldError/conflict(_:)`` if the id is taken.
    func saveSecureMessage(_ message: SecureMessage) async throws

    /// Reads the message `id` if it is addressed to `recipient` and has not expired at `now`,
    /// and marks it read, in one step. Returns it as it was **before** this read (so
    /// ``SecureMessage/readCount`` is 0 on the first read); `nil` if there is no such message
    /// for this recipient — an unknown, expired or someone else's id look the same.
    func readSecureMessage(id: String, recipient: String, now: Date) async throws -> SecureMessage?

    /// Deletes the messages that expired at or before `now`; returns how many.
    @discardableResult
    func purgeExpiredSecureMessages(now: Date) async throws -> Int

    /// Saves newly uploaded rich content, its metadata and its bytes, in one transaction.
    /// Throws ``HeraldError/conflict(_:)`` if the id is taken.
    func saveRichContent(_ content: RichContent, bytes: Data) async throws

    /// The bytes of rich content, `nil` if there is no such content. Not checked against
    /// readers or expiry: read ``readableRichContent(id:username:now:)`` first.
    func richContentBytes(id: String) async throws -> Data?

    /// The metadata of rich content, if it exists and has not expired at `now`.
    func richContent(id: String, now: Date) async throws -> RichContent?

    /// Allows `username` to read the rich content `id` (sending it to them does this).
    /// Adding a user twice is not an error. Throws ``HeraldError/notFound(_:)`` if there is
    /// no such content.
    func addRichRecipient(id: String, username: String) async throws

    /// The metadata of rich content, if `username` may read it — its owner or a user it was
    /// sent to — and it has not expired at `now`; `nil` otherwise.
    func readableRichContent(id: String, username: String, now: Date) async throws -> RichContent?

    /// Deletes rich content (metadata, bytes and recipients) that expired at or before `now`,
    /// and returns the ids deleted.
    func purgeExpiredRichContent(now: Date) async throws -> [String]
}

extension ContentStore {
    /// Whether `username` may read the rich content `id` now.
    public func isRichContentReadable(id: String, by username: String, now: Date) async throws -> Bool {
        try await readableRichContent(id: id, username: username, now: now) != nil
    }
}
