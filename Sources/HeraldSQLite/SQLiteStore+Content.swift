public import Foundation
import HeraldCore
public import HeraldStore
import NIOCore

extension SQLiteStore {
    // MARK: Secure messages

    private static let secureColumns = """
        id, recipient, sender, sealed, created_at, expires_at, read_count, first_read_at
        """

    public func saveSecureMessage(_ message: SecureMessage) async throws {
        let binds: [SQLiteData] = [
            .text(message.id), .text(message.recipient), .text(message.sender), .blob(Array(message.sealed)),
            SQLiteData(message.createdAt), SQLiteData(message.expiresAt), .integer(message.readCount),
            SQLiteData(message.firstReadAt),
        ]
        let inserted = try await write { connection in
            try await !connection.query(
                """
                INSERT INTO secure_messages (\(Self.secureColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (id) DO NOTHING RETURNING id
                """,
                binds
            ).isEmpty
        }
        guard inserted else { throw HeraldError.conflict("a secure message with this id exists") }
    }

    public func readSecureMessage(id: String, recipient: String, now: Date) async throws -> SecureMessage? {
        let rows = try await write { connection in
            try await connection.query(
                """
                UPDATE secure_messages SET read_count = read_count + 1, first_read_at = coalesce(first_read_at, ?1)
                WHERE id = ?2 AND recipient = ?3 AND expires_at > ?1
                RETURNING \(Self.secureColumns)
                """,
                [.integer(now.storeMilliseconds), .text(id), .text(recipient)]
            )
        }
        return try rows.first.map(SecureMessage.init(storedAfterRead:))
    }

    @discardableResult
    public func purgeExpiredSecureMessages(now: Date) async throws -> Int {
        let rows = try await write { connection in
            try await connection.query(
                "DELETE FROM secure_messages WHERE expires_at <= ? RETURNING id",
                [.integer(now.storeMilliseconds)]
            )
        }
        return rows.count
    }

    // MARK: Rich content

    private static let richColumns = "id, owner, media_type, size, created_at, expires_at"

    public func saveRichContent(_ content: RichContent, bytes: Data) async throws {
        let binds: [SQLiteData] = [
            .text(content.id), .text(content.owner), .text(content.mediaType), .integer(content.size),
            SQLiteData(content.createdAt), SQLiteData(content.expiresAt),
        ]
        let inserted = try await write { connection in
            let inserted = try await !connection.query(
                """
                INSERT INTO rich_content (\(Self.richColumns)) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (id) DO NOTHING RETURNING id
                """,
                binds
            ).isEmpty
            if inserted {
                _ = try await connection.query(
                    "INSERT INTO rich_content_bytes (content_id, bytes) VALUES (?, ?)",
                    [.text(content.id), .blob(Array(bytes))]
                )
            }
            return inserted
        }
        guard inserted else { throw HeraldError.conflict("rich content with this id exists") }
    }

    public func richContentBytes(id: String) async throws -> Data? {
        let rows = try await read { connection in
            try await connection.query("SELECT bytes FROM rich_content_bytes WHERE content_id = ?", [.text(id)])
        }
        return try rows.first.map { row throws(StoreError) in try row.bytes("bytes") }
    }

    /// Moves the files of rich content kept by releases before the bytes were in the store
    /// (one per upload in `directory`, named after its id) into the store, for the content it
    /// knows; deletes every file it moved or that belongs to no content, and the directory once
    /// empty. Returns how many it moved. Safe to repeat: a file whose bytes are stored already
    /// is deleted.
    @discardableResult
    public func importRichContentFiles(directory: String) async throws -> Int {
        let fileManager = FileManager.default
        guard let names = try? fileManager.contentsOfDirectory(atPath: directory) else { return 0 }
        var moved = 0
        for name in names {
            let path = directory + "/" + name
            if !name.hasPrefix("."), let bytes = fileManager.contents(atPath: path) {
                let stored = try await write { connection in
                    try await !connection.query(
                        """
                        INSERT INTO rich_content_bytes (content_id, bytes) SELECT id, ? FROM rich_content WHERE id = ?
                        ON CONFLICT (content_id) DO NOTHING RETURNING content_id
                        """,
                        [.blob(Array(bytes)), .text(name)]
                    ).isEmpty
                }
                if stored { moved += 1 }
            }
            try? fileManager.removeItem(atPath: path)
        }
        try? fileManager.removeItem(atPath: directory)
        return moved
    }

    public func richContent(id: String, now: Date) async throws -> RichContent? {
        let rows = try await read { connection in
            try await connection.query(
                "SELECT \(Self.richColumns) FROM rich_content WHERE id = ? AND expires_at > ?",
                [.text(id), .integer(now.storeMilliseconds)]
            )
        }
        return try rows.first.map(RichContent.init(stored:))
    }

    public func addRichRecipient(id: String, username: String) async throws {
        let added = try await write { connection in
            guard try await !connection.query("SELECT 1 AS found FROM rich_content WHERE id = ?", [.text(id)]).isEmpty else {
                return false
            }
            _ = try await connection.query(
                "INSERT INTO rich_recipients (content_id, username) VALUES (?, ?) ON CONFLICT DO NOTHING",
                [.text(id), .text(username)]
            )
            return true
        }
        guard added else { throw HeraldError.notFound("no such rich content") }
    }

    public func readableRichContent(id: String, username: String, now: Date) async throws -> RichContent? {
        let rows = try await read { connection in
            try await connection.query(
                """
                SELECT \(Self.richColumns) FROM rich_content AS c
                WHERE c.id = ?1 AND c.expires_at > ?3 AND (
                    c.owner = ?2
                    OR EXISTS (SELECT 1 FROM rich_recipients AS r WHERE r.content_id = c.id AND r.username = ?2)
                )
                """,
                [.text(id), .text(username), .integer(now.storeMilliseconds)]
            )
        }
        return try rows.first.map(RichContent.init(stored:))
    }

    public func purgeExpiredRichContent(now: Date) async throws -> [String] {
        // Recipients and bytes go with their content (ON DELETE CASCADE).
        let rows = try await write { connection in
            try await connection.query(
                "DELETE FROM rich_content WHERE expires_at <= ? RETURNING id",
                [.integer(now.storeMilliseconds)]
            )
        }
        return try rows.map { row throws(StoreError) in try row.string("id") }
    }
}
