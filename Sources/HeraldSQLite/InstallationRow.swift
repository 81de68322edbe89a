import Foundation
import HeraldCore
import HeraldStore

/// An installation as the `installations` table holds it: the id, user id, own tags and
/// dates in columns, everything else in one JSON document (``StoredInstallationDocument``).
struct InstallationRow: Sendable {
    /// The installation as it reads back from the store.
    var installation: Installation
    var tagsJSON: String
    var documentJSON: String

    /// Normalizes `installation` for storage, with the given version and timestamps.
    init(_ installation: Installation, version: Int, createdAt: Date, updatedAt: Date) throws {
        let normalized = installation.stored(version: version, createdAt: createdAt, updatedAt: updatedAt)
        self.installation = normalized
        self.tagsJSON = try PlainJSONStrings.encode(normalized.tags) ?? StoredJSON.encode(normalized.tags)
        self.documentJSON = try StoredJSON.encode(StoredInstallationDocument(normalized))
    }

    static let columns = "id, user_id, tags, document, version, created_at, updated_at"

    /// The select list that ``decode(_:)`` reads, for a table aliased `i`.
    static let selectColumns = """
        i.id AS id, i.user_id AS user_id, i.tags AS tags, i.document AS document, i.version AS version, \
        i.created_at AS created_at, i.updated_at AS updated_at
        """

    /// Inserts or replaces `count` rows, keeping nothing of the old ones: the caller has
    /// computed the versions and kept `created_at`.
    static func upsertSQL(rows count: Int) -> String {
        var sql = "INSERT INTO installations (\(columns)) VALUES "
        for i in 0..<count { sql += i == 0 ? "(?, ?, ?, ?, ?, ?, ?)" : ", (?, ?, ?, ?, ?, ?, ?)" }
        sql += """
             ON CONFLICT (id) DO UPDATE SET user_id = excluded.user_id, tags = excluded.tags, \
            document = excluded.document, version = excluded.version, created_at = excluded.created_at, \
            updated_at = excluded.updated_at
            """
        return sql
    }

    var upsertBinds: [SQLiteData] {
        let i = installation
        return [
            .text(i.id), SQLiteData(i.userId), .text(tagsJSON), .text(documentJSON), .integer(i.version),
            .integer(i.createdAt.storeMilliseconds), .integer(i.updatedAt.storeMilliseconds),
        ]
    }
}
