import Foundation
import HeraldCore
import Logging
import SQLiteNIO

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
        var ifVersion: Int?
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

    /// Creates or replaces a registration (see ``RegistrationStore/upsertRegistration(_:ifVersion:)``).
    func upsert(_ row: RegistrationRow, ifVersion: Int?) async throws -> Registration {
        let id = nextRequestID
        nextRequestID &+= 1
        pendingUpserts.append(UpsertRequest(id: id, row: row, ifVersion: ifVersion))
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

    /// Applies `batch` in one transaction; one result per request, in order. A version
    /// mismatch fails only its request; an SQLite error fails the whole batch.
    private func applyUpserts(_ batch: [UpsertRequest]) async -> [Result<Registration, any Error>] {
        do {
            return try await runTransaction { connection in
                var results: [Result<Registration, any Error>] = []
                results.reserveCapacity(batch.count)
                for chunk in Self.chunks(batch) {
                    if chunk.count == 1, let ifVersion = chunk[0].ifVersion {
                        let row = chunk[0].row
                        let returned = try await connection.query(RegistrationRow.updateIfVersionSQL, row.updateBinds(ifVersion: ifVersion))
                        if let first = returned.first {
                            results.append(.success(try Self.stored(row, from: first)))
                        } else {
                            results.append(.failure(HeraldError.preconditionFailed("the registration does not have version \(ifVersion)")))
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

    /// Splits a batch into statements: runs of unconditional upserts of distinct ids (at most
    /// 500, so that each row's `RETURNING` is unambiguous) and single conditional ones.
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
            if request.ifVersion != nil {
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
