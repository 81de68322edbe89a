import Foundation
import HeraldCore
import HeraldStore
import PostgresNIO

/// Registration writes applied together: those that arrive while others are written wait and
/// go to PostgreSQL as one call of `herald.save_registrations` (one statement, one commit) per
/// run of distinct ids, instead of a transaction of six to nine statements each.
extension PostgresStore {
    /// One caller's write: the stored form of its registration and its condition (never on a
    /// version: those are written alone, see ``upsertRegistration(_:when:)``).
    struct RegistrationWrite: Sendable {
        var row: StoredRegistration
        var condition: RegistrationCondition
    }

    /// Batches of registration (and of installation) writes at most, at once. One: the writes
    /// that arrive while a batch is written all go into the next, and PostgreSQL's cost of a
    /// call (about 0.7 ms for `save_installations`, whatever its rows) is shared by more of
    /// them. With two at once, its backends spent a fifth more CPU per installation `PUT` and
    /// per upsert, for the same rate (two shared cores: 250–290 µs per `PUT` with one, 310–380
    /// µs with two). A write then waits for at most the batch before its own.
    static let concurrentWriteBatches = 1
    /// Writes in one batch at most.
    static let maximumWritesPerBatch = 256

    /// Applies `writes` (in the order they came) and returns each one's outcome. Runs of distinct
    /// ids go in one call each; when a call fails for another reason than a lost connection (a
    /// value PostgreSQL refuses, a deadlock), each write of the run is tried again on its own, so
    /// that only the writes that fail by themselves fail.
    func applyRegistrationWrites(_ writes: [RegistrationWrite]) async -> [Result<Registration, any Error>] {
        var results: [Result<Registration, any Error>] = []
        results.reserveCapacity(writes.count)
        defer { database.noteRegistrationWrites(writes.count) }
        for run in Self.registrationRuns(writes) {
            do {
                results += try await saveRegistrations(run)
            } catch let error where run.count > 1 && !PostgresDatabase.failsEveryWrite(error) {
                for write in run {
                    do {
                        results += try await saveRegistrations([write])
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

    /// `writes` in order, cut where an id repeats (one statement writes a row once) or a device
    /// that a write replaces repeats (so that a write never removes one of the same call), and at
    /// ``maximumWritesPerBatch``.
    static func registrationRuns(_ writes: [RegistrationWrite]) -> [ArraySlice<RegistrationWrite>] {
        var runs: [ArraySlice<RegistrationWrite>] = []
        var start = writes.startIndex
        var ids: Set<String> = []
        var devices: Set<String> = []
        for index in writes.indices {
            let registration = writes[index].row.registration
            let device = writes[index].condition.replacesOtherRegistrationsOfHandle ? Self.deviceKey(registration) : nil
            if index - start == maximumWritesPerBatch || ids.contains(registration.id) || device.map(devices.contains) == true {
                runs.append(writes[start..<index])
                start = index
                ids = []
                devices = []
            }
            ids.insert(registration.id)
            if let device { devices.insert(device) }
        }
        if start < writes.endIndex { runs.append(writes[start...]) }
        return runs
    }

    /// The advisory lock key of a device (see ``lock(_:on:)``).
    static func deviceKey(_ registration: Registration) -> String {
        "device \(registration.platform.rawValue) \(registration.handle)"
    }

    /// Writes `run` (distinct ids) with one call; one outcome per write. Throws when the call
    /// fails, and then nothing of `run` was written.
    private func saveRegistrations(_ run: some Collection<RegistrationWrite>) async throws -> [Result<Registration, any Error>] {
        let statement = SaveRegistrations(hub: hub, writes: Array(run))
        let rows = try await execute(statement, mappingErrors: false)
        guard rows.count == statement.writes.count else {
            throw StoreError(code: .database, message: "a registration write was not answered")
        }
        var results: [Result<Registration, any Error>] = []
        results.reserveCapacity(rows.count)
        for (write, row) in zip(statement.writes, rows) {
            if row.written, let version = row.version, let createdAt = row.createdAt {
                var registration = write.row.registration
                registration.version = version
                registration.createdAt = Date(storeMilliseconds: createdAt)
                results.append(.success(registration))
                continue
            }
            let found: String?? = row.found ? .some(row.foundOwner) : nil
            if let violation = write.condition.violation(id: write.row.registration.id, existingOwner: found, isIssued: row.issued) {
                results.append(.failure(violation))
            } else {
                // The statement left a write that the rules allow unwritten: another writer
                // changed (or inserted) the row after the statement read it, so its tags as
                // read were not those it replaced. The single write's transaction answers it.
                do {
                    results.append(.success(try await upsertRegistrationAlone(write.row, when: write.condition)))
                } catch {
                    results.append(.failure(error))
                }
            }
        }
        return results
    }
}

/// The call of `herald.save_registrations` (see ``PostgresMigration``) for writes of distinct
/// ids, prepared once per connection: its text is the same for any number of rows.
struct SaveRegistrations: PostgresPreparedStatement {
    static let name = "herald_save_registrations_v2"
    static let sql = """
        SELECT ord, written, version, created_at, found, found_owner, issued FROM herald.save_registrations(\
        $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22)
        """

    struct Row {
        var written: Bool
        var version: Int?
        var createdAt: Int?
        var found: Bool
        var foundOwner: String?
        var issued: Bool
    }

    var hub: String
    var writes: [PostgresStore.RegistrationWrite]

    func makeBindings() throws -> PostgresBindings {
        var locks: Set<String> = []
        for write in writes where !write.condition.isUnconditional {
            locks.insert("registration \(write.row.registration.id)")
            if write.condition.replacesOtherRegistrationsOfHandle { locks.insert(PostgresStore.deviceKey(write.row.registration)) }
        }
        var tags: [String] = []
        var tagCounts: [Int32] = []
        for write in writes {
            tags += write.row.registration.tags
            tagCounts.append(Int32(write.row.registration.tags.count))
        }
        let registrations = writes.map(\.row.registration)
        var bindings = PostgresBindings(capacity: 22)
        bindings.append(hub)
        bindings.append(locks.sorted())
        bindings.append(registrations.map(\.id))
        bindings.append(registrations.map(\.platform.rawValue))
        bindings.append(registrations.map(\.handle))
        bindings.append(PostgresNullableArray(registrations.map { $0.webPushKeys?.p256dh }))
        bindings.append(PostgresNullableArray(registrations.map { $0.webPushKeys?.auth }))
        bindings.append(PostgresNullableArray(registrations.map(\.owner)))
        bindings.append(PostgresNullableArray(registrations.map { $0.expiresAt?.storeMilliseconds }))
        bindings.append(registrations.map(\.createdAt.storeMilliseconds))
        bindings.append(registrations.map(\.updatedAt.storeMilliseconds))
        bindings.append(tagCounts)
        bindings.append(tags)
        bindings.append(PostgresNullableArray(writes.map(\.row.templateJSON)))
        bindings.append(PostgresNullableArray(writes.map(\.row.pushVariablesJSON)))
        bindings.append(PostgresNullableArray(registrations.map(\.installationID)))
        bindings.append(registrations.map(\.legacyGCM))
        bindings.append(PostgresNullableArray(registrations.map(\.handleKind.storedValue)))
        bindings.append(writes.map(\.condition.mustExist))
        bindings.append(writes.map(\.condition.mustBeIssued))
        bindings.append(PostgresNullableArray(writes.map(\.condition.owner)))
        bindings.append(writes.map(\.condition.replacesOtherRegistrationsOfHandle))
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        let (_, written, version, createdAt, found, foundOwner, issued) = try row.decode((Int, Bool, Int?, Int?, Bool, String?, Bool).self)
        return Row(written: written, version: version, createdAt: createdAt, found: found, foundOwner: foundOwner, issued: issued)
    }
}
