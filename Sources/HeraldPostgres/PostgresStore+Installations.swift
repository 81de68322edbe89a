import Foundation
public import HeraldCore
import HeraldStore
import PostgresNIO

extension PostgresStore {
    static let installationColumns = "i.id, i.user_id, i.tags, i.document::text AS document, i.version, i.created_at, i.updated_at"

    static func decodeInstallation(_ row: PostgresRow) throws(StoreError) -> Installation {
        try Installation(stored: row.byName)
    }

    /// Creates or replaces an installation and the registrations it expands into, all or nothing
    /// (see the protocol). A `PUT` (no version to match) of up to 500 registrations is applied
    /// with the `PUT`s that arrive beside it, in one statement (see ``GroupCommitter``); a write on
    /// a version is a transaction of two statements, the installation's row first, its version
    /// counted up by the write itself: the row's lock then makes a concurrent write of the same
    /// installation, on any node, wait until this one commits. If a registration id it produces
    /// is held by a registration of something else, nothing is written and
    /// ``HeraldError/conflict(_:)`` is thrown.
    public func upsertInstallation(_ installation: Installation, ifVersion: Int?) async throws -> Installation {
        let now = now()
        // The stored document holds neither the version nor the dates, which the write returns.
        let document = try StoredJSON.encode(StoredInstallationDocument(installation.stored(version: 1, createdAt: now, updatedAt: now)))
        let expanded = installation.registrations()
        if ifVersion == nil, expanded.count <= Self.maxRowsPerStatement {
            try checkOpen()
            let write = InstallationWrite(
                installation: installation, document: document, registrations: try Self.storedRows(expanded, of: installation, now: now), now: now
            )
            return try await installationWrites.submit(write) { writes in await self.applyInstallationWrites(writes) }
        }
        return try await transaction { [self] connection in
            var write = SQLStatement()
            let hub = write.bind(hub), id = write.bind(installation.id), userID = write.bind(installation.userId)
            let tags = write.bind(installation.tags), json = write.bind(document), updated = write.bind(now.storeMilliseconds)
            if let ifVersion {
                write.sql = """
                    UPDATE herald.installations AS i SET user_id = \(userID), tags = \(tags), document = \(json)::jsonb, \
                    version = i.version + 1, updated_at = \(updated) \
                    WHERE i.hub = \(hub) AND i.id = \(id) AND i.version = \(write.bind(ifVersion)) \
                    RETURNING i.version, i.created_at
                    """
            } else {
                write.sql = """
                    INSERT INTO herald.installations AS i (hub, id, user_id, tags, document, version, created_at, updated_at) \
                    VALUES (\(hub), \(id), \(userID), \(tags), \(json)::jsonb, 1, \(updated), \(updated)) \
                    ON CONFLICT (hub, id) DO UPDATE SET user_id = excluded.user_id, tags = excluded.tags, \
                    document = excluded.document, version = i.version + 1, updated_at = excluded.updated_at \
                    RETURNING i.version, i.created_at
                    """
            }
            guard let returned = try await query(write, on: connection).first?.byName else {
                throw StoreError.versionMismatch("the installation does not have version \(ifVersion ?? 0)")
            }
            let stored = installation.stored(version: try returned.int("version"), createdAt: try returned.date("created_at"), updatedAt: now)
            try await replaceDerivedRegistrations(of: stored, now: now, on: connection)
            return stored
        }
    }

    /// The rows of the registrations `installation` expands into, written at `now`.
    private static func storedRows(_ registrations: [Registration], of installation: Installation, now: Date) throws -> [StoredRegistration] {
        try registrations.map { registration in
            var registration = registration
            registration.installationID = installation.id
            return try StoredRegistration(registration, createdAt: now, updatedAt: now)
        }
    }

    /// Makes the registrations of `installation` those it expands into, with one statement
    /// (for up to 500 of them); inside a transaction.
    private func replaceDerivedRegistrations(of installation: Installation, now: Date, on connection: PostgresConnection) async throws {
        let registrations = installation.registrations()
        let rows = try Self.storedRows(registrations, of: installation, now: now)
        // Those it no longer expands into go in the first statement, which writes only the
        // others: the two parts touch different rows.
        var stale = SQLStatement()
        stale.sql = """
            WITH stale AS (DELETE FROM herald.registrations WHERE hub = \(stale.bind(hub)) \
            AND installation_id = \(stale.bind(installation.id)) AND NOT (id = ANY (\(stale.bind(registrations.map(\.id))))) RETURNING id) 
            """
        guard !rows.isEmpty else {
            stale.sql += "SELECT count(*) FROM stale"
            try await query(stale, on: connection)
            return
        }
        for (index, chunk) in Self.distinctChunks(rows, id: \.registration.id).enumerated() {
            let written = try await query(upsertStatement(chunk, sameInstallationOnly: true, after: index == 0 ? stale : SQLStatement()), on: connection)
            if written.count != chunk.count {
                var writtenIDs: Set<String> = []
                for row in written { writtenIDs.insert(try row.byName.string("id")) }
                let taken = chunk.map(\.registration.id).first { !writtenIDs.contains($0) } ?? "?"
                throw HeraldError.conflict(
                    "the registration id '\(taken)' of installation '\(installation.id)' is held by a registration that does not belong to it"
                )
            }
        }
    }

    public func installation(id: String) async throws -> Installation? {
        var statement = SQLStatement()
        statement.sql =
            "SELECT \(Self.installationColumns) FROM herald.installations AS i WHERE i.hub = \(statement.bind(hub)) AND i.id = \(statement.bind(id))"
        return try await query(statement).first.map(Self.decodeInstallation)
    }

    /// Deletes an installation and its registrations in one transaction; `false` if there was
    /// no installation (its registrations, if any were left, are deleted all the same). The
    /// installation's row goes first, as every writer of an installation takes its row before
    /// its registrations: a delete and a write of the same installation then never wait for
    /// each other both.
    @discardableResult
    public func deleteInstallation(id: String) async throws -> Bool {
        try await transaction { [self] connection in
            var delete = SQLStatement()
            delete.sql = "DELETE FROM herald.installations WHERE hub = \(delete.bind(hub)) AND id = \(delete.bind(id)) RETURNING id"
            let deleted = try await !query(delete, on: connection).isEmpty
            var registrations = SQLStatement()
            registrations.sql = "DELETE FROM herald.registrations WHERE hub = \(registrations.bind(hub)) AND installation_id = \(registrations.bind(id))"
            try await query(registrations, on: connection)
            return deleted
        }
    }

    /// One page of installations in id order (see the protocol). With a tag, the installations'
    /// tag index drives the read; with only a user, the index on the user id.
    public func listInstallations(userId: String?, tag: String?, after cursor: String?, limit: Int) async throws -> [Installation] {
        guard limit > 0 else { return [] }
        var statement = SQLStatement()
        let idColumn: String
        if let tag {
            statement.sql = """
                SELECT \(Self.installationColumns) FROM herald.installation_tags AS t \
                JOIN herald.installations AS i ON i.hub = t.hub AND i.id = t.installation_id \
                WHERE t.hub = \(statement.bind(hub)) AND t.tag = \(statement.bind(tag))
                """
            idColumn = "t.installation_id"
        } else {
            statement.sql = "SELECT \(Self.installationColumns) FROM herald.installations AS i WHERE i.hub = \(statement.bind(hub))"
            idColumn = "i.id"
        }
        if let userId { statement.sql += " AND i.user_id = \(statement.bind(userId))" }
        if let cursor { statement.sql += " AND \(idColumn) > \(statement.bind(cursor))" }
        statement.sql += " ORDER BY \(idColumn) LIMIT \(statement.bind(limit))"
        return try await query(statement).map(Self.decodeInstallation)
    }
}
