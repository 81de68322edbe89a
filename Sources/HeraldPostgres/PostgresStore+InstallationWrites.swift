import Foundation
import HeraldCore
import HeraldStore
import PostgresNIO

/// Installation `PUT`s applied together: those that arrive while others are written wait and
/// go to PostgreSQL as one statement (one commit) per run of distinct ids, which writes the
/// installations, deletes the registrations they no longer expand into and upserts the others.
extension PostgresStore {
    /// One caller's `PUT` of an installation: the installation, its stored document and the
    /// registrations it expands into, at `now`.
    struct InstallationWrite: Sendable {
        var installation: Installation
        var document: String
        var registrations: [StoredRegistration]
        var now: Date
    }

    /// Registrations that one statement of installation writes upserts at most.
    static let maximumRegistrationsPerInstallationStatement = 1_000

    /// Applies `writes` (in the order they came) and returns each one's outcome. When a run's
    /// statement fails for another reason than a lost connection (a registration id held by a
    /// registration of something else, a value PostgreSQL refuses), nothing of it was written and
    /// each installation of the run is written again on its own, so that only those that fail by
    /// themselves fail.
    func applyInstallationWrites(_ writes: [InstallationWrite]) async -> [Result<Installation, any Error>] {
        var results: [Result<Installation, any Error>] = []
        results.reserveCapacity(writes.count)
        defer { database.noteRegistrationWrites(writes.reduce(0) { $0 + $1.registrations.count }) }
        for run in Self.installationRuns(writes) {
            do {
                results += try await saveInstallations(run)
            } catch let error where run.count > 1 && !PostgresDatabase.failsEveryWrite(error) {
                for write in run {
                    do {
                        results += try await saveInstallations([write])
                    } catch {
                        results.append(.failure(database.mapError(error)))
                    }
                }
            } catch {
                results += Array(repeating: .failure(database.mapError(error)), count: run.count)
            }
        }
        return results
    }

    /// `writes` in order, cut where an installation id or a registration id repeats (one
    /// statement writes a row once) and before ``maximumRegistrationsPerInstallationStatement``
    /// registrations.
    static func installationRuns(_ writes: [InstallationWrite]) -> [ArraySlice<InstallationWrite>] {
        var runs: [ArraySlice<InstallationWrite>] = []
        var start = writes.startIndex
        var ids: Set<String> = []
        var registrationIDs: Set<String> = []
        for index in writes.indices {
            let write = writes[index]
            let repeats = ids.contains(write.installation.id) || write.registrations.contains { registrationIDs.contains($0.registration.id) }
            if index > start, repeats || registrationIDs.count + write.registrations.count > maximumRegistrationsPerInstallationStatement {
                runs.append(writes[start..<index])
                start = index
                ids = []
                registrationIDs = []
            }
            ids.insert(write.installation.id)
            for row in write.registrations { registrationIDs.insert(row.registration.id) }
        }
        if start < writes.endIndex { runs.append(writes[start...]) }
        return runs
    }

    /// Writes `run` (distinct ids) with one statement; one outcome per write. Throws when the
    /// statement fails, and then nothing of `run` was written. When a row it read was changed
    /// meanwhile by another writer, `run` is written again by a statement whose triggers keep the
    /// tag indexes, which also names a registration id held by something else.
    private func saveInstallations(_ run: some Collection<InstallationWrite>) async throws -> [Result<Installation, any Error>] {
        let writes = Array(run)
        let rows: [SaveInstallationsRow]
        do {
            rows = try await execute(SaveInstallations(hub: hub, writes: writes), mappingErrors: false)
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == PostgresMigration.changedMeanwhileState {
            rows = try await execute(SaveInstallationsThroughTriggers(hub: hub, writes: writes), mappingErrors: false)
        }
        var stored: [String: (version: Int, createdAt: Int)] = [:]
        for row in rows { stored[row.id] = (row.version, row.createdAt) }
        return writes.map { write in
            guard let (version, createdAt) = stored[write.installation.id] else {
                return .failure(StoreError(code: .database, message: "an upserted installation was not returned"))
            }
            return .success(write.installation.stored(version: version, createdAt: Date(storeMilliseconds: createdAt), updatedAt: write.now))
        }
    }
}

/// What a statement of installation writes returns for each installation it wrote.
struct SaveInstallationsRow {
    var id: String
    var version: Int
    var createdAt: Int
}

/// A statement that writes installations of distinct ids and the registrations they expand
/// into, prepared once per connection (its text is the same for any number of rows), with the
/// same 21 arrays bound.
protocol InstallationWriteStatement: PostgresPreparedStatement where Row == SaveInstallationsRow {
    var hub: String { get }
    var writes: [PostgresStore.InstallationWrite] { get }
}

/// Writes the group with `herald.save_installations`, which keeps the tag indexes and the
/// reservations in step itself. It fails with SQLSTATE HR412, and writes nothing, when a row it
/// read was changed by another writer before it locked it, or a registration id is held by
/// a registration of something else.
struct SaveInstallations: InstallationWriteStatement {
    static let name = "herald_save_installations_v3"
    static let sql = """
        SELECT id, version, created_at FROM herald.save_installations($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13,
            $14, $15, $16, $17, $18, $19, $20, $21)
        """

    var hub: String
    var writes: [PostgresStore.InstallationWrite]

    func decodeRow(_ row: PostgresRow) throws -> SaveInstallationsRow {
        let (id, version, createdAt) = try row.decode((String, Int, Int).self)
        return SaveInstallationsRow(id: id, version: version, createdAt: createdAt)
    }
}

/// Writes the group in one statement whose rows' triggers keep the tag indexes: for a group that
/// ``SaveInstallations`` found changed meanwhile. When one of the registration ids is held by a
/// registration that belongs to no installation of the statement, `herald.fail_unless` undoes
/// all of it (SQLSTATE HR409, naming the id). The registrations an installation no longer has are
/// found by installation, and deleted by primary key, as `herald.save_installations` does (schema
/// version 23): whatever the statistics say, a write reads its own rows. Its registrations are
/// written once every installation of the group is, as the installations come first in every
/// writer of them.
struct SaveInstallationsThroughTriggers: InstallationWriteStatement {
    static let name = "herald_save_installations_v2"
    static let sql = """
        WITH installation_input AS (
            SELECT x.*, (sum(x.tag_count) OVER (ORDER BY x.n) - x.tag_count)::integer AS tag_offset
            FROM unnest($2::text[], $3::text[], $4::integer[], $6::text[], $7::bigint[]) WITH ORDINALITY
                AS x(id, user_id, tag_count, document, updated_at, n)
        ), installation AS (
            INSERT INTO herald.installations AS i (hub, id, user_id, tags, document, version, created_at, updated_at)
            SELECT $1, x.id, x.user_id, ($5::text[])[x.tag_offset + 1 : x.tag_offset + x.tag_count], x.document::jsonb, 1,
                x.updated_at, x.updated_at
            FROM installation_input AS x ORDER BY x.id COLLATE "C"
            ON CONFLICT (hub, id) DO UPDATE SET user_id = excluded.user_id, tags = excluded.tags,
                document = excluded.document, version = i.version + 1, updated_at = excluded.updated_at
            RETURNING i.id, i.version, i.created_at
        ), registration_input AS (
            SELECT x.*, (sum(x.tag_count) OVER (ORDER BY x.n) - x.tag_count)::integer AS tag_offset
            FROM unnest($8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::bigint[], $14::bigint[],
                $15::integer[], $17::text[], $18::text[], $19::text[], $20::boolean[], $21::text[]) WITH ORDINALITY
                AS x(id, platform, handle, p256dh, auth, expires_at, updated_at, tag_count, template, push_variables,
                    installation_id, legacy_gcm, handle_kind, n)
        ), stale AS (
            DELETE FROM herald.registrations AS r
            WHERE r.hub = $1 AND r.id = ANY (ARRAY(
                SELECT e.id FROM unnest($2::text[]) AS x(id) CROSS JOIN LATERAL (
                    SELECT e.id FROM herald.registrations AS e WHERE e.hub = $1 AND e.installation_id = x.id OFFSET 0
                ) AS e
                WHERE NOT (e.id = ANY ($8::text[]))
            ))
                AND coalesce(r.installation_id, '') = ANY ($2::text[]) AND NOT (r.id = ANY ($8::text[]))
            RETURNING r.id
        ), saved AS (
            INSERT INTO herald.registrations AS r (hub, id, platform, handle, p256dh, auth, owner, expires_at, version,
                created_at, updated_at, tags, template, push_variables, installation_id, legacy_gcm, handle_kind)
            SELECT $1, x.id, x.platform, x.handle, x.p256dh, x.auth, NULL, x.expires_at, 1, x.updated_at, x.updated_at,
                ($16::text[])[x.tag_offset + 1 : x.tag_offset + x.tag_count], x.template, x.push_variables,
                x.installation_id, x.legacy_gcm, x.handle_kind
            -- Always true: it makes the registrations wait until every installation of the group is
            -- written, since every writer of an installation takes its row before its registrations.
            FROM registration_input AS x WHERE (SELECT count(*) FROM installation) >= 0 ORDER BY x.id COLLATE "C"
            ON CONFLICT (hub, id) DO UPDATE SET platform = excluded.platform, handle = excluded.handle,
                p256dh = excluded.p256dh, auth = excluded.auth, owner = excluded.owner,
                expires_at = excluded.expires_at, version = r.version + 1, updated_at = excluded.updated_at,
                tags = excluded.tags, template = excluded.template, push_variables = excluded.push_variables,
                installation_id = excluded.installation_id, legacy_gcm = excluded.legacy_gcm,
                handle_kind = excluded.handle_kind
            WHERE r.installation_id IS NOT DISTINCT FROM excluded.installation_id
            RETURNING r.id
        ), taken AS (
            SELECT x.id, x.installation_id FROM registration_input AS x
            WHERE x.id NOT IN (SELECT s.id FROM saved AS s) ORDER BY x.n LIMIT 1
        )
        SELECT i.id, i.version, i.created_at, herald.fail_unless(NOT EXISTS (SELECT 1 FROM taken),
            format('the registration id ''%s'' of installation ''%s'' is held by a registration that does not belong to it',
                (SELECT t.id FROM taken AS t), (SELECT t.installation_id FROM taken AS t))) AS ok
        FROM installation AS i
        """

    var hub: String
    var writes: [PostgresStore.InstallationWrite]

    func decodeRow(_ row: PostgresRow) throws -> SaveInstallationsRow {
        let (id, version, createdAt, _) = try row.decode((String, Int, Int, Bool).self)
        return SaveInstallationsRow(id: id, version: version, createdAt: createdAt)
    }
}

extension InstallationWriteStatement {
    func makeBindings() throws -> PostgresBindings {
        var installationTags: [String] = []
        var installationTagCounts: [Int32] = []
        var registrations: [StoredRegistration] = []
        var registrationTags: [String] = []
        var registrationTagCounts: [Int32] = []
        for write in writes {
            installationTags += write.installation.tags
            installationTagCounts.append(Int32(write.installation.tags.count))
            for row in write.registrations {
                registrations.append(row)
                registrationTags += row.registration.tags
                registrationTagCounts.append(Int32(row.registration.tags.count))
            }
        }
        let derived = registrations.map(\.registration)
        var bindings = PostgresBindings(capacity: 21)
        bindings.append(hub)
        bindings.append(writes.map(\.installation.id))
        bindings.append(PostgresNullableArray(writes.map(\.installation.userId)))
        bindings.append(installationTagCounts)
        bindings.append(installationTags)
        bindings.append(writes.map(\.document))
        bindings.append(writes.map(\.now.storeMilliseconds))
        bindings.append(derived.map(\.id))
        bindings.append(derived.map(\.platform.rawValue))
        bindings.append(derived.map(\.handle))
        bindings.append(PostgresNullableArray(derived.map { $0.webPushKeys?.p256dh }))
        bindings.append(PostgresNullableArray(derived.map { $0.webPushKeys?.auth }))
        bindings.append(PostgresNullableArray(derived.map { $0.expiresAt?.storeMilliseconds }))
        bindings.append(derived.map(\.updatedAt.storeMilliseconds))
        bindings.append(registrationTagCounts)
        bindings.append(registrationTags)
        bindings.append(PostgresNullableArray(registrations.map(\.templateJSON)))
        bindings.append(PostgresNullableArray(registrations.map(\.pushVariablesJSON)))
        bindings.append(PostgresNullableArray(derived.map(\.installationID)))
        bindings.append(derived.map(\.legacyGCM))
        bindings.append(PostgresNullableArray(derived.map(\.handleKind.storedValue)))
        return bindings
    }
}
