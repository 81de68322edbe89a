import Foundation
import HeraldCore
import SQLiteNIO
import HeraldStore

/// An installation as the `installations` table holds it: the id, user id, own tags and
/// dates in columns, everything else in one JSON document.
///
/// The document is Herald's storage form, not the hub API's wire form: it changes only with a
/// migration, whatever the API does.
struct InstallationRow: Sendable {
    /// What the `document` column holds. Its own types throughout, so that a change to the
    /// model's `Codable` forms cannot change what is stored.
    struct Document: Codable, Sendable {
        struct Template: Codable, Sendable {
            var body: String
            var headers: [String: String]
            var expiry: String?
            var tags: [String]
        }

        var platform: String
        var legacyGCM: Bool
        var pushChannel: String
        var p256dh: String?
        var auth: String?
        var templates: [String: Template]
        var pushVariables: [String: String]
        /// Milliseconds since 1970, as the store keeps dates.
        var expirationTime: Int?
        /// Set by ``SQLiteStore/deleteRegistrations(ids:)`` with `json_set`: keep the name.
        var pushChannelExpired: Bool
    }

    /// The installation as it reads back from the store.
    var installation: Installation
    var tagsJSON: String
    var documentJSON: String

    /// Normalizes `installation` for storage, with the given version and timestamps.
    init(_ installation: Installation, version: Int, createdAt: Date, updatedAt: Date) throws {
        var normalized = installation
        normalized.expirationTime = installation.expirationTime?.storeRounded
        normalized.version = version
        normalized.createdAt = createdAt.storeRounded
        normalized.updatedAt = updatedAt.storeRounded
        self.installation = normalized
        self.tagsJSON = try PlainJSONStrings.encode(normalized.tags) ?? RegistrationRow.json(normalized.tags)
        self.documentJSON = try RegistrationRow.json(
            Document(
                platform: normalized.platform.rawValue,
                legacyGCM: normalized.legacyGCM,
                pushChannel: normalized.pushChannel,
                p256dh: normalized.webPushKeys?.p256dh,
                auth: normalized.webPushKeys?.auth,
                templates: normalized.templates.mapValues {
                    Document.Template(body: $0.body, headers: $0.headers, expiry: $0.expiry, tags: $0.tags)
                },
                pushVariables: normalized.pushVariables,
                expirationTime: normalized.expirationTime?.storeMilliseconds,
                pushChannelExpired: normalized.pushChannelExpired
            )
        )
    }

    static let columns = "id, user_id, tags, document, version, created_at, updated_at"

    /// The select list that ``decode(_:)`` reads, for a table aliased `i`.
    static let selectColumns = """
        i.id AS id, i.user_id AS user_id, i.tags AS tags, i.document AS document, i.version AS version, \
        i.created_at AS created_at, i.updated_at AS updated_at
        """

    /// Inserts or replaces the row, keeping nothing of an old one: the caller has computed the
    /// version and kept `created_at`.
    static let upsertSQL = """
        INSERT INTO installations (\(columns)) VALUES (?, ?, ?, ?, ?, ?, ?) \
        ON CONFLICT (id) DO UPDATE SET user_id = excluded.user_id, tags = excluded.tags, \
        document = excluded.document, version = excluded.version, created_at = excluded.created_at, \
        updated_at = excluded.updated_at
        """

    var upsertBinds: [SQLiteData] {
        let i = installation
        return [
            .text(i.id), SQLiteData(i.userId), .text(tagsJSON), .text(documentJSON), .integer(i.version),
            .integer(i.createdAt.storeMilliseconds), .integer(i.updatedAt.storeMilliseconds),
        ]
    }

    static func decode(_ row: SQLiteRow) throws(SQLiteStoreError) -> Installation {
        let document = try row.json(Document.self, "document")
        guard let platform = Platform(rawValue: document.platform) else {
            throw SQLiteStoreError(code: .corruptData, message: "a stored installation has an unknown platform")
        }
        let keys: WebPushKeys? =
            switch (document.p256dh, document.auth) {
            case (let p256dh?, let auth?): WebPushKeys(p256dh: p256dh, auth: auth)
            default: nil
            }
        return Installation(
            id: try row.string("id"),
            platform: platform,
            legacyGCM: document.legacyGCM,
            pushChannel: document.pushChannel,
            webPushKeys: keys,
            userId: try row.optionalString("user_id"),
            tags: try row.jsonStrings("tags"),
            templates: document.templates.mapValues {
                InstallationTemplate(body: $0.body, headers: $0.headers, expiry: $0.expiry, tags: $0.tags)
            },
            pushVariables: document.pushVariables,
            expirationTime: document.expirationTime.map(Date.init(storeMilliseconds:)),
            pushChannelExpired: document.pushChannelExpired,
            version: try row.int("version"),
            createdAt: try row.date("created_at"),
            updatedAt: try row.date("updated_at")
        )
    }
}
