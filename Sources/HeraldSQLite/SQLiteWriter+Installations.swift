import Foundation
import HeraldCore
import HeraldStore

/// Group-committed installation writes: those that arrive while a transaction runs are applied
/// together, a few statements for each run of up to 500 registrations, instead of six hops to
/// SQLite's thread pool for each installation.
extension SQLiteWriter {
    struct InstallationRequest: Sendable {
        var installation: Installation
        var ifVersion: Int?
        var now: Date
    }

    /// Creates or replaces `installation` and makes its registrations those it expands into
    /// (see ``InstallationStore/upsertInstallation(_:ifVersion:)``).
    func upsertInstallation(_ installation: Installation, ifVersion: Int?, now: Date) async throws -> Installation {
        try await groupCommitted(InstallationRequest(installation: installation, ifVersion: ifVersion, now: now), in: installationUpserts) {
            writer, batch in await writer.applyInstallations(batch)
        }
    }

    /// Applies `batch` in one transaction; one result per request, in order. A version that does
    /// not match, or a registration id held by a registration of another installation, fails only
    /// its request, which writes nothing; an SQLite error fails the whole batch.
    private func applyInstallations(_ batch: [InstallationRequest]) async -> [Result<Installation, any Error>] {
        do {
            return try await runTransaction { connection in
                var results: [Result<Installation, any Error>] = []
                results.reserveCapacity(batch.count)
                for chunk in Self.installationChunks(batch) {
                    results += try await Self.applyInstallationChunk(chunk, on: connection)
                }
                return results
            }
        } catch {
            return Array(repeating: .failure(error), count: batch.count)
        }
    }

    /// Splits a batch into runs of distinct installation ids with at most
    /// ``RegistrationRow/maxRowsPerStatement`` registrations in all, in order, so that a request
    /// sees every write queued before it.
    static func installationChunks(_ batch: [InstallationRequest]) -> [[InstallationRequest]] {
        var chunks: [[InstallationRequest]] = []
        var current: [InstallationRequest] = []
        var ids: Set<String> = []
        var registrations = 0
        for request in batch {
            let expanded = request.installation.registrations().count
            if ids.contains(request.installation.id) || (!current.isEmpty && registrations + expanded > RegistrationRow.maxRowsPerStatement) {
                chunks.append(current)
                current = []
                ids = []
                registrations = 0
            }
            current.append(request)
            ids.insert(request.installation.id)
            registrations += expanded
        }
        if !current.isEmpty { chunks.append(current) }
        return chunks
    }

    /// Applies a run of installations of distinct ids with a few statements, under a savepoint:
    /// when a registration id of one of them is held by a registration that does not belong to
    /// it, the run is undone and applied one installation at a time, so that only that one fails.
    private static func applyInstallationChunk(
        _ chunk: [InstallationRequest], on connection: SQLiteConnection
    ) async throws -> [Result<Installation, any Error>] {
        _ = try await connection.query("SAVEPOINT installations")
        do {
            let results = try await applyTogether(chunk, on: connection)
            _ = try await connection.query("RELEASE installations")
            return results
        } catch is RegistrationIDHeld where chunk.count > 1 {
            _ = try await connection.query("ROLLBACK TO installations")
            var results: [Result<Installation, any Error>] = []
            for request in chunk {
                _ = try await connection.query("SAVEPOINT installation")
                do {
                    results += try await applyTogether([request], on: connection)
                    _ = try await connection.query("RELEASE installation")
                } catch {
                    guard let failure = RegistrationIDHeld.requestFailure(error) else { throw error }
                    _ = try await connection.query("ROLLBACK TO installation")
                    _ = try await connection.query("RELEASE installation")
                    results.append(.failure(failure))
                }
            }
            _ = try await connection.query("RELEASE installations")
            return results
        } catch {
            guard chunk.count == 1, let failure = RegistrationIDHeld.requestFailure(error) else { throw error }
            _ = try await connection.query("ROLLBACK TO installations")
            _ = try await connection.query("RELEASE installations")
            return [.failure(failure)]
        }
    }

    /// A registration id an installation expands into is held by a registration that does not
    /// belong to it: the chunk's statements are undone, and the installation fails alone.
    private struct RegistrationIDHeld: Error {
        var registrationID: String
        var installationID: String

        /// What the caller of a write that failed with `error` sees, when it fails only that
        /// write: the id is taken, or the installation cannot be stored as it is; `nil` for an
        /// error that fails the whole batch.
        static func requestFailure(_ error: any Error) -> HeraldError? {
            switch error {
            case let held as RegistrationIDHeld:
                .conflict(
                    "the registration id '\(held.registrationID)' of installation '\(held.installationID)' is held by a registration that does not belong to it"
                )
            case let refused as HeraldError: refused
            default: nil
            }
        }
    }

    /// Writes the installations whose `ifVersion` holds, and their registrations, with one
    /// statement per step; the others fail with `StoreError` `versionMismatch`. Throws ``RegistrationIDHeld`` (having
    /// written part) when a registration id is held by a registration of another installation.
    private static func applyTogether(
        _ chunk: [InstallationRequest], on connection: SQLiteConnection
    ) async throws -> [Result<Installation, any Error>] {
        let ids = chunk.map { SQLiteData.text($0.installation.id) }
        var existing: [String: (version: Int, createdAt: Date)] = [:]
        for row in try await connection.query(
            "SELECT id, version, created_at FROM installations WHERE id IN (\(TagConditionSQL.placeholders(ids.count)))", ids
        ) {
            existing[try row.string("id")] = (try row.int("version"), try row.date("created_at"))
        }
        var results: [Result<Installation, any Error>?] = Array(repeating: nil, count: chunk.count)
        var rows: [(index: Int, row: InstallationRow)] = []
        for (index, request) in chunk.enumerated() {
            let old = existing[request.installation.id]
            if let ifVersion = request.ifVersion, old?.version != ifVersion {
                results[index] = .failure(StoreError.versionMismatch("the installation does not have version \(ifVersion)"))
                continue
            }
            do {
                let row = try InstallationRow(
                    request.installation, version: (old?.version ?? 0) + 1, createdAt: old?.createdAt ?? request.now, updatedAt: request.now
                )
                rows.append((index, row))
            } catch {
                results[index] = .failure(error)
            }
        }
        guard !rows.isEmpty else { return results.map { $0! } }

        var binds: [SQLiteData] = []
        for (_, row) in rows { binds += row.upsertBinds }
        _ = try await connection.query(InstallationRow.upsertSQL(rows: rows.count), binds)

        // The registrations they expand into replace those they expanded into before.
        var wanted: [(registration: Registration, now: Date)] = []
        for (index, row) in rows {
            for var registration in row.installation.registrations() {
                registration.installationID = row.installation.id
                wanted.append((registration, chunk[index].now))
            }
        }
        let wantedIDs = Set(wanted.map(\.registration.id))
        let written = rows.map { SQLiteData.text($0.row.installation.id) }
        let stale = try await connection.query(
            "SELECT id FROM registrations WHERE installation_id IN (\(TagConditionSQL.placeholders(written.count)))", written
        ).compactMap { $0.column("id")?.string }.filter { !wantedIDs.contains($0) }
        try await SQLiteStore.deleteRegistrationRows(ids: stale, on: connection)
        if !wanted.isEmpty {
            var binds: [SQLiteData] = []
            binds.reserveCapacity(wanted.count * RegistrationRow.bindsPerRow)
            for (registration, now) in wanted { binds += try RegistrationRow(registration, createdAt: now, updatedAt: now).insertBinds }
            let sql = RegistrationRow.upsertSQL(rows: wanted.count, returning: true, sameInstallationOnly: true)
            let returned = Set(try await connection.query(sql, binds).compactMap { $0.column("id")?.string })
            if let taken = wanted.first(where: { !returned.contains($0.registration.id) }) {
                throw RegistrationIDHeld(registrationID: taken.registration.id, installationID: taken.registration.installationID ?? "?")
            }
        }
        for (index, row) in rows { results[index] = .success(row.installation) }
        return results.map { $0! }
    }
}
