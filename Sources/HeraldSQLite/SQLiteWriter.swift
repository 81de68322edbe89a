import Foundation
import HeraldCore
import Logging
import SQLiteNIO
import HeraldStore

/// The one connection that writes, and the order in which writes reach it.
///
/// Transactions run one at a time (`BEGIN IMMEDIATE … COMMIT`, `ROLLBACK` on error), in
/// the order they asked. Registration upserts are group-committed: those that arrive while
/// a transaction runs wait, and the first of them to get the connection applies all of
/// them in one transaction, with one multi-row statement per 500 rows. Every SQLite call
/// is a hop to a thread pool; batching keeps that to about three hops per batch instead of
/// three per upsert.
actor SQLiteWriter {
    struct UpsertRequest: Sendable {
        var id: Int
        var row: RegistrationRow
        var condition: RegistrationCondition
    }

    let connection: SQLiteConnection
    private let logger: Logger

    private var locked = false
    private var lockWaiters: [CheckedContinuation<Void, Never>] = []
    private var lockWaitersHead = 0

    private var nextRequestID = 0
    private var pendingUpserts: [UpsertRequest] = []
    private var finishedUpserts: [Int: Result<Registration, any Error>] = [:]

    init(connection: SQLiteConnection, logger: Logger) {
        self.connection = connection
        self.logger = logger
    }

    // MARK: The write lock (FIFO)

    private func lock() async {
        guard locked else {
            locked = true
            return
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            lockWaiters.append(continuation)
        }
        // The lock was handed over by `unlock()`; `locked` is still true.
    }

    private func unlock() {
        guard lockWaitersHead < lockWaiters.count else {
            locked = false
            lockWaiters.removeAll(keepingCapacity: true)
            lockWaitersHead = 0
            return
        }
        let next = lockWaiters[lockWaitersHead]
        lockWaitersHead += 1
        if lockWaitersHead >= 64, lockWaitersHead * 2 >= lockWaiters.count {
            lockWaiters.removeFirst(lockWaitersHead)
            lockWaitersHead = 0
        }
        next.resume()
    }

    // MARK: Transactions

    /// Runs `body` in one write transaction.
    func transaction<T: Sendable>(_ body: @Sendable (SQLiteConnection) async throws -> T) async throws -> T {
        await lock()
        defer { unlock() }
        return try await runTransaction(body)
    }

    private func runTransaction<T>(_ body: (SQLiteConnection) async throws -> T) async throws -> T {
        _ = try await connection.query("BEGIN IMMEDIATE")
        do {
            let value = try await body(connection)
            _ = try await connection.query("COMMIT")
            return value
        } catch {
            await rollback()
            throw error
        }
    }

    private func rollback() async {
        do {
            _ = try await connection.query("ROLLBACK")
        } catch {
            // SQLite rolls back by itself after some errors (I/O, disk full); then there is
            // no transaction left to roll back.
            logger.debug("Rollback found no transaction", metadata: ["error": "\(String(reflecting: error))"])
        }
    }

    // MARK: Group-committed upserts

    /// Creates or replaces a registration (see ``RegistrationStore/upsertRegistration(_:when:)``).
    func upsert(_ row: RegistrationRow, when condition: RegistrationCondition) async throws -> Registration {
        let id = nextRequestID
        nextRequestID &+= 1
        pendingUpserts.append(UpsertRequest(id: id, row: row, condition: condition))
        await lock()
        defer { unlock() }
        if let result = finishedUpserts.removeValue(forKey: id) {
            return try result.get()
        }
        // Nobody has applied this request yet: apply it with everything queued behind it.
        let batch = pendingUpserts
        pendingUpserts.removeAll(keepingCapacity: true)
        let results = await applyUpserts(batch)
        var mine: Result<Registration, any Error>?
        for (request, result) in zip(batch, results) {
            if request.id == id {
                mine = result
            } else {
                finishedUpserts[request.id] = result
            }
        }
        guard let mine else { preconditionFailure("an upsert request was lost") }
        return try mine.get()
    }

    /// Applies `batch` in one transaction; one result per request, in order. A condition that
    /// does not hold fails only its request (before it wrote anything); an SQLite error fails
    /// the whole batch.
    private func applyUpserts(_ batch: [UpsertRequest]) async -> [Result<Registration, any Error>] {
        do {
            return try await runTransaction { connection in
                var results: [Result<Registration, any Error>] = []
                results.reserveCapacity(batch.count)
                for chunk in Self.chunks(batch) {
                    if chunk.count == 1, !chunk[0].condition.isUnconditional {
                        do {
                            results.append(.success(try await Self.applyConditional(chunk[0], on: connection)))
                        } catch let error as HeraldError {
                            results.append(.failure(error))
                        }
                    } else {
                        var binds: [SQLiteData] = []
                        binds.reserveCapacity(chunk.count * RegistrationRow.bindsPerRow)
                        for request in chunk { binds += request.row.insertBinds }
                        let returned = try await connection.query(RegistrationRow.upsertSQL(rows: chunk.count, returning: true), binds)
                        var byID: [String: SQLiteRow] = [:]
                        for row in returned {
                            if case .text(let id)? = row.column("id") { byID[id] = row }
                        }
                        for request in chunk {
                            guard let returnedRow = byID[request.row.registration.id] else {
                                throw SQLiteStoreError(code: .database, message: "an upserted registration was not returned")
                            }
                            results.append(.success(try Self.stored(request.row, from: returnedRow)))
                        }
                    }
                }
                return results
            }
        } catch {
            return Array(repeating: .failure(error), count: batch.count)
        }
    }

    /// One write whose condition depends on what is stored: checks it, writes, and removes the
    /// device's other registrations if asked. A condition that does not hold throws a
    /// ``HeraldError`` before anything is written.
    private static func applyConditional(_ request: UpsertRequest, on connection: SQLiteConnection) async throws -> Registration {
        let row = request.row
        let condition = request.condition
        let id = row.registration.id
        let existing = try await connection.query("SELECT owner, version FROM registrations WHERE id = ?", [.text(id)]).first
        if let existing {
            if let owner = condition.owner, existing.column("owner")?.string != owner {
                throw HeraldError.forbidden("this registration belongs to another user")
            }
        } else {
            if condition.mustExist {
                throw HeraldError.notFound("no registration with id \(id) to update")
            }
            if let ifVersion = condition.ifVersion {
                throw HeraldError.preconditionFailed("the registration does not have version \(ifVersion)")
            }
            if condition.mustBeIssued {
                let issued = try await connection.query(
                    "SELECT 1 FROM reservations WHERE id = ? AND expires_at > ?",
                    [.text(id), .integer(row.registration.updatedAt.storeMilliseconds)]
                )
                if issued.isEmpty {
                    throw HeraldError.gone("the registration id \(id) was not issued, or it expired or was deleted; ask for a new one")
                }
            }
        }
        let stored: Registration
        if let ifVersion = condition.ifVersion {
            guard let returned = try await connection.query(RegistrationRow.updateIfVersionSQL, row.updateBinds(ifVersion: ifVersion)).first else {
                throw HeraldError.preconditionFailed("the registration does not have version \(ifVersion)")
            }
            stored = try Self.stored(row, from: returned)
        } else {
            guard let returned = try await connection.query(RegistrationRow.upsertSQL(rows: 1, returning: true), row.insertBinds).first else {
                throw SQLiteStoreError(code: .database, message: "an upserted registration was not returned")
            }
            stored = try Self.stored(row, from: returned)
        }
        if condition.replacesOtherRegistrationsOfHandle {
            _ = try await connection.query(
                "DELETE FROM registrations WHERE handle = ? AND platform = ? AND id != ? AND installation_id IS NULL",
                [.text(stored.handle), .text(stored.platform.rawValue), .text(id)]
            )
        }
        return stored
    }

    /// Splits a batch into statements: runs of unconditional upserts of distinct ids (at most
    /// 500, so that each row's `RETURNING` is unambiguous) and single conditional ones, in
    /// order, so that a condition sees every write queued before it.
    private static func chunks(_ batch: [UpsertRequest]) -> [[UpsertRequest]] {
        var chunks: [[UpsertRequest]] = []
        var current: [UpsertRequest] = []
        var ids: Set<String> = []
        func flush() {
            if !current.isEmpty { chunks.append(current) }
            current = []
            ids = []
        }
        for request in batch {
            if !request.condition.isUnconditional {
                flush()
                chunks.append([request])
                continue
            }
            if current.count == RegistrationRow.maxRowsPerStatement || ids.contains(request.row.registration.id) {
                flush()
            }
            current.append(request)
            ids.insert(request.row.registration.id)
        }
        flush()
        return chunks
    }

    private static func stored(_ row: RegistrationRow, from returned: SQLiteRow) throws(SQLiteStoreError) -> Registration {
        var registration = row.registration
        registration.version = try returned.int("version")
        registration.createdAt = try returned.date("created_at")
        return registration
    }

    func close() async throws {
        await lock()
        defer { unlock() }
        try await connection.close()
    }
}
