import Foundation
import HeraldCore
import HeraldStore

/// A registration as the `registrations` table holds it: dates in milliseconds, tags
/// unique, sorted and encoded as a JSON array, the template and push variables as JSON
/// (`NULL` for none).
struct RegistrationRow: Sendable {
    /// The registration as it reads back from the store.
    var registration: Registration
    var tagsJSON: String
    var templateJSON: String?
    var pushVariablesJSON: String?

    /// Normalizes `registration` for storage, with the given timestamps.
    init(_ registration: Registration, createdAt: Date, updatedAt: Date) throws {
        let stored = try StoredRegistration(registration, createdAt: createdAt, updatedAt: updatedAt)
        self.registration = stored.registration
        self.tagsJSON = try PlainJSONStrings.encode(stored.registration.tags) ?? StoredJSON.encode(stored.registration.tags)
        self.templateJSON = stored.templateJSON
        self.pushVariablesJSON = stored.pushVariablesJSON
    }

    /// Binds per row of ``upsertSQL(rows:returning:sameInstallationOnly:)``.
    static let bindsPerRow = 15

    /// The columns of ``RegistrationRow/insertColumns``, in order.
    var insertBinds: [SQLiteData] {
        let r = registration
        return [
            .text(r.id), .text(r.platform.rawValue), .text(r.handle),
            SQLiteData(r.webPushKeys?.p256dh), SQLiteData(r.webPushKeys?.auth), SQLiteData(r.owner),
            SQLiteData(r.expiresAt), .integer(r.createdAt.storeMilliseconds), .integer(r.updatedAt.storeMilliseconds),
            .text(tagsJSON), SQLiteData(templateJSON), SQLiteData(pushVariablesJSON), SQLiteData(r.installationID),
            .integer(r.legacyGCM ? 1 : 0), SQLiteData(r.handleKind.storedValue),
        ]
    }

    /// `UPDATE` binds of ``RegistrationRow/updateIfVersionSQL``.
    func updateBinds(ifVersion: Int) -> [SQLiteData] {
        let r = registration
        return [
            .text(r.platform.rawValue), .text(r.handle),
            SQLiteData(r.webPushKeys?.p256dh), SQLiteData(r.webPushKeys?.auth), SQLiteData(r.owner),
            SQLiteData(r.expiresAt), .integer(r.updatedAt.storeMilliseconds), .text(tagsJSON),
            SQLiteData(templateJSON), SQLiteData(pushVariablesJSON), SQLiteData(r.installationID),
            .integer(r.legacyGCM ? 1 : 0), SQLiteData(r.handleKind.storedValue), .text(r.id), .integer(ifVersion),
        ]
    }

    static let maxRowsPerStatement = 500

    /// A multi-row upsert of `count` rows: a new registration gets version 1, an existing one
    /// keeps `created_at` and gets version + 1. With `returning`, yields `id, version,
    /// created_at` per row. With `sameInstallationOnly`, an existing row is replaced only if it
    /// belongs to the same installation (`installation_id`), and yields nothing otherwise.
    static func upsertSQL(rows count: Int, returning: Bool, sameInstallationOnly: Bool = false) -> String {
        var sql = """
            INSERT INTO registrations \
            (id, platform, handle, p256dh, auth, owner, expires_at, version, created_at, updated_at, tags, \
            template, push_variables, installation_id, legacy_gcm, handle_kind) VALUES 
            """
        sql.reserveCapacity(sql.utf8.count + count * 36 + 620)
        for i in 0..<count {
            sql += i == 0 ? "(?,?,?,?,?,?,?,1,?,?,?,?,?,?,?,?)" : ",(?,?,?,?,?,?,?,1,?,?,?,?,?,?,?,?)"
        }
        sql += """
             ON CONFLICT (id) DO UPDATE SET platform = excluded.platform, handle = excluded.handle, \
            p256dh = excluded.p256dh, auth = excluded.auth, owner = excluded.owner, \
            expires_at = excluded.expires_at, version = registrations.version + 1, \
            updated_at = excluded.updated_at, tags = excluded.tags, template = excluded.template, \
            push_variables = excluded.push_variables, installation_id = excluded.installation_id, \
            legacy_gcm = excluded.legacy_gcm, handle_kind = excluded.handle_kind
            """
        if sameInstallationOnly { sql += " WHERE registrations.installation_id IS excluded.installation_id" }
        if returning { sql += " RETURNING id, version, created_at" }
        return sql
    }

    static let updateIfVersionSQL = """
        UPDATE registrations SET platform = ?, handle = ?, p256dh = ?, auth = ?, owner = ?, expires_at = ?, \
        updated_at = ?, tags = ?, template = ?, push_variables = ?, installation_id = ?, legacy_gcm = ?, \
        handle_kind = ?, version = version + 1 WHERE id = ? AND version = ? \
        RETURNING id, version, created_at
        """

    /// The select list that ``RegistrationRow/decode(_:)`` reads, for a table aliased `r`.
    static let selectColumns = """
        r.id AS id, r.platform AS platform, r.handle AS handle, r.p256dh AS p256dh, r.auth AS auth, \
        r.owner AS owner, r.expires_at AS expires_at, r.version AS version, r.created_at AS created_at, \
        r.updated_at AS updated_at, r.tags AS tags, r.template AS template, r.push_variables AS push_variables, \
        r.installation_id AS installation_id, r.legacy_gcm AS legacy_gcm, r.handle_kind AS handle_kind
        """
}
