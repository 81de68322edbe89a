import Foundation
public import HeraldCore
import HeraldStore

extension SQLiteStore {
    /// Creates or replaces an installation and the registrations it expands into
    /// (``Installation/registrations()``), in one transaction (see the protocol).
    ///
    /// The installation's tags and templates are stored as given (the hub API validates
    /// them). Its registrations are upserted with the versioning of
    /// ``upsertRegistration(_:ifVersion:)``; those it no longer produces (a removed template,
    /// or all of them while ``Installation/pushChannelExpired`` is set) are deleted. If a
    /// registration id it produces is held by a registration of something else, nothing is
    /// written and ``HeraldError/conflict(_:)`` is thrown.
    public func upsertInstallation(_ installation: Installation, ifVersion: Int?) async throws -> Installation {
        let now = now()
        return try await groupCommitted { try await $0.upsertInstallation(installation, ifVersion: ifVersion, now: now) }
    }

    /// Deletes registrations by id, 500 per statement; inside a transaction.
    static func deleteRegistrationRows(ids: some Collection<String>, on connection: SQLiteConnection) async throws {
        let ids = Array(ids)
        var start = ids.startIndex
        while start < ids.endIndex {
            let end = min(start + RegistrationRow.maxRowsPerStatement, ids.endIndex)
            let chunk = ids[start..<end]
            _ = try await connection.query(
                "DELETE FROM registrations WHERE id IN (\(TagConditionSQL.placeholders(chunk.count)))",
                chunk.map { .text($0) }
            )
            start = end
        }
    }

    public func installation(id: String) async throws -> Installation? {
        let rows = try await read { connection in
            try await connection.query(
                "SELECT \(InstallationRow.selectColumns) FROM installations AS i WHERE i.id = ?",
                [.text(id)]
            )
        }
        return try rows.first.map(Installation.init(stored:))
    }

    /// Deletes an installation and its registrations in one transaction; `false` if there was
    /// no installation (its registrations, if any were left, are deleted all the same).
    @discardableResult
    public func deleteInstallation(id: String) async throws -> Bool {
        try await write { connection in
            _ = try await connection.query("DELETE FROM registrations WHERE installation_id = ?", [.text(id)])
            return try await !connection.query("DELETE FROM installations WHERE id = ? RETURNING id", [.text(id)]).isEmpty
        }
    }

    /// One page of installations in id order (see the protocol). With a tag, the installations'
    /// tag index drives the read; with only a user, the index on the user id.
    public func listInstallations(userId: String?, tag: String?, after cursor: String?, limit: Int) async throws -> [Installation] {
        guard limit > 0 else { return [] }
        var sql: String
        var binds: [SQLiteData] = []
        let idColumn: String
        if let tag {
            // CROSS JOIN keeps the tag index as the outer loop: rows come in id order, no sort.
            sql = """
                SELECT \(InstallationRow.selectColumns) FROM installation_tags AS t \
                CROSS JOIN installations AS i ON i.id = t.installation_id WHERE t.tag = ?
                """
            binds.append(.text(tag))
            idColumn = "t.installation_id"
        } else {
            sql = "SELECT \(InstallationRow.selectColumns) FROM installations AS i WHERE 1"
            idColumn = "i.id"
        }
        if let userId {
            sql += " AND i.user_id = ?"
            binds.append(.text(userId))
        }
        if let cursor {
            sql += " AND \(idColumn) > ?"
            binds.append(.text(cursor))
        }
        sql += " ORDER BY \(idColumn) LIMIT ?"
        binds.append(.integer(limit))
        let rows = try await read { [sql, binds] connection in try await connection.query(sql, binds) }
        return try rows.map(Installation.init(stored:))
    }
}
