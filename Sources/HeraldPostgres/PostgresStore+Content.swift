public import Foundation
import HeraldCore
public import HeraldStore
import NIOCore
import PostgresNIO

extension PostgresStore {
    /// Rich content was never kept in files beside a database: nothing to move.
    @discardableResult
    public func importRichContentFiles(directory: String) async throws -> Int { 0 }

    // MARK: Secure messages

    private static let secureColumns = "id, recipient, sender, sealed, created_at, expires_at, read_count, first_read_at"

    public func saveSecureMessage(_ message: SecureMessage) async throws {
        var statement = SQLStatement()
        let m = message
        statement.sql = """
            INSERT INTO herald.secure_messages (hub, \(Self.secureColumns)) VALUES (\(statement.bind(hub)), \
            \(statement.bind(m.id)), \(statement.bind(m.recipient)), \(statement.bind(m.sender)), \(statement.bind(m.sealed)), \
            \(statement.bind(m.createdAt)), \(statement.bind(m.expiresAt)), \(statement.bind(m.readCount)), \
            \(statement.bind(m.firstReadAt))) ON CONFLICT (hub, id) DO NOTHING RETURNING id
            """
        guard try await !query(statement).isEmpty else { throw HeraldError.conflict("a secure message with this id exists") }
    }

    public func readSecureMessage(id: String, recipient: String, now: Date) async throws -> SecureMessage? {
        var statement = SQLStatement()
        let now = statement.bind(now.storeMilliseconds)
        statement.sql = """
            UPDATE herald.secure_messages SET read_count = read_count + 1, first_read_at = coalesce(first_read_at, \(now)) \
            WHERE hub = \(statement.bind(hub)) AND id = \(statement.bind(id)) AND recipient = \(statement.bind(recipient)) \
            AND expires_at > \(now) RETURNING \(Self.secureColumns)
            """
        return try await query(statement).first.map { row throws(StoreError) in
            try SecureMessage(storedAfterRead: row.byName)
        }
    }

    @discardableResult
    public func purgeExpiredSecureMessages(now: Date) async throws -> Int {
        var statement = SQLStatement()
        statement.sql = """
            DELETE FROM herald.secure_messages WHERE hub = \(statement.bind(hub)) \
            AND expires_at <= \(statement.bind(now.storeMilliseconds)) RETURNING id
            """
        return try await query(statement).count
    }

    // MARK: Rich content

    private static let richColumns = "c.id, c.owner, c.media_type, c.size, c.created_at, c.expires_at"

    private static func decodeRichContent(_ row: PostgresRow) throws(StoreError) -> RichContent {
        try RichContent(stored: row.byName)
    }

    public func saveRichContent(_ content: RichContent, bytes: Data) async throws {
        var statement = SQLStatement()
        let c = content
        let hub = statement.bind(hub), id = statement.bind(c.id)
        // Metadata and bytes in one statement: the bytes only when the metadata was inserted.
        statement.sql = """
            WITH inserted AS (INSERT INTO herald.rich_content (hub, id, owner, media_type, size, created_at, expires_at) VALUES (\
            \(hub), \(id), \(statement.bind(c.owner)), \(statement.bind(c.mediaType)), \
            \(statement.bind(c.size)), \(statement.bind(c.createdAt)), \(statement.bind(c.expiresAt))) \
            ON CONFLICT (hub, id) DO NOTHING RETURNING hub, id) \
            INSERT INTO herald.rich_content_bytes (hub, content_id, bytes) \
            SELECT hub, id, \(statement.bind(bytes)) FROM inserted RETURNING content_id
            """
        guard try await !query(statement).isEmpty else { throw HeraldError.conflict("rich content with this id exists") }
    }

    public func richContentBytes(id: String) async throws -> Data? {
        var statement = SQLStatement()
        statement.sql = """
            SELECT bytes FROM herald.rich_content_bytes WHERE hub = \(statement.bind(hub)) AND content_id = \(statement.bind(id))
            """
        return try await query(statement).first.map { row throws(StoreError) in try row.byName.bytes("bytes") }
    }

    public func richContent(id: String, now: Date) async throws -> RichContent? {
        var statement = SQLStatement()
        statement.sql = """
            SELECT \(Self.richColumns) FROM herald.rich_content AS c WHERE c.hub = \(statement.bind(hub)) \
            AND c.id = \(statement.bind(id)) AND c.expires_at > \(statement.bind(now.storeMilliseconds))
            """
        return try await query(statement).first.map(Self.decodeRichContent)
    }

    public func addRichRecipient(id: String, username: String) async throws {
        var statement = SQLStatement()
        let hub = statement.bind(hub), id = statement.bind(id)
        // Inserts nothing (and returns no row) when there is no such content.
        statement.sql = """
            WITH content AS (SELECT c.id FROM herald.rich_content AS c WHERE c.hub = \(hub) AND c.id = \(id)), \
            added AS (INSERT INTO herald.rich_recipients (hub, content_id, username) \
            SELECT \(hub), content.id, \(statement.bind(username)) FROM content ON CONFLICT DO NOTHING) \
            SELECT id FROM content
            """
        guard try await !query(statement).isEmpty else { throw HeraldError.notFound("no such rich content") }
    }

    public func readableRichContent(id: String, username: String, now: Date) async throws -> RichContent? {
        var statement = SQLStatement()
        let hub = statement.bind(hub), username = statement.bind(username)
        statement.sql = """
            SELECT \(Self.richColumns) FROM herald.rich_content AS c WHERE c.hub = \(hub) AND c.id = \(statement.bind(id)) \
            AND c.expires_at > \(statement.bind(now.storeMilliseconds)) AND (c.owner = \(username) OR EXISTS (\
            SELECT 1 FROM herald.rich_recipients AS r WHERE r.hub = c.hub AND r.content_id = c.id AND r.username = \(username)))
            """
        return try await query(statement).first.map(Self.decodeRichContent)
    }

    public func purgeExpiredRichContent(now: Date) async throws -> [String] {
        // Recipients and bytes go with their content (ON DELETE CASCADE).
        var statement = SQLStatement()
        statement.sql = """
            DELETE FROM herald.rich_content WHERE hub = \(statement.bind(hub)) \
            AND expires_at <= \(statement.bind(now.storeMilliseconds)) RETURNING id
            """
        var ids: [String] = []
        for row in try await query(statement) { ids.append(try row.byName.string("id")) }
        return ids
    }
}
