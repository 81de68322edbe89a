import Foundation
import HeraldCore
import HeraldStore
import Logging

/// The one connection that writes, and the order in which writes reach it.
///
/// Transactions run one at a time (`BEGIN IMMEDIATE … COMMIT`, `ROLLBACK` on error), in
/// the order they asked. Registration and installation upserts and notification enqueues are
/// group-committed: those that arrive while a transaction runs wait, and the first of them to
/// get the connection applies all of them in one transaction (upserts with one multi-row
/// statement per 500 rows). Every SQLite call is a hop to a thread pool, and every commit
/// writes its pages to the log; batching shares both among the writes of a batch.
actor SQLiteWriter {
    struct UpsertRequest: Sendable {
        var row: RegistrationRow
        var condition: RegistrationCondition
    }

    let connection: SQLiteConnection
    private let logger: Logger

    private var locked = false
    private var lockWaiters: [CheckedContinuation<Void, Never>] = []
    private var lockWaitersHead = 0

    private let upserts = GroupCommitQueue<UpsertRequest, Registration>()
    let installationUpserts = GroupCommitQueue<InstallationRequest, Installation>()
    let notificationEnqueues = GroupCommitQueue<EnqueueRequest, Enqueued>()

    init(connection: SQLiteConnection, logger: Logger) {
        self.connection = connection
        self.logger = logger
    }

    // MARK: The write lock (FIFO)

    func lock() async {
        guard locked else {
            locked = true
            return
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            lockWaiters.append(continuation)
        }
        // The lock was handed over by `unlock()`; `locked` is still true.
    }

    func unlock() {
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

    func runTransaction<T>(_ body: (SQLiteConnection) async throws -> T) async throws -> T {
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
            try await connection.query("ROLLBACK")
        } catch {
            // SQLite rolls back by itself after some errors (I/O, disk full); then there is
            // no transaction left to roll back.
            logger.debug("Rollback found no transaction", metadata: ["error": "\(String(reflecting: error))"])
        }
    }

    // MARK: Group-committed upserts

    /// Creates or replaces a registration (see ``RegistrationStore/upsertRegistration(_:when:)``).
    func upsert(_ row: RegistrationRow, when condition: RegistrationCondition) async throws -> Registration {
        try await groupCommitted(UpsertRequest(row: row, condition: condition), in: upserts) { writer, batch in
            await writer.applyUpserts(batch)
        }
    }

    /// Queues `request` in `queue` and returns its result: applied by the batch of another
    /// caller that took the lock first, or else in a batch this caller applies, with `apply`,
    /// together with every request queued behind it.
    func groupCommitted<Request, Value>(
        _ request: Request,
        in queue: GroupCommitQueue<Request, Value>,
        apply: @escaping @Sendable (isolated SQLiteWriter, [Request]) async -> [Result<Value, any Error>]
    ) async throws -> Value {
        let ticket = queue.enqueue(request)
        await lock()
        defer { unlock() }
        if let result = queue.takeResult(ticket) { return try result.get() }
        // Nobody has applied this request yet: apply it with everything queued behind it.
        let batch = queue.takeBatch()
        let requests = batch.map(\.request)
        // The batch carries other callers' writes: it runs to its end even if the caller
        // that leads it is cancelled (a request whose client went away, a shutdown), since
        // an SQLite query finishes whatever happens to the task that asked.
        let results = await apply(self, requests)
        return try queue.finish(batch, with: results, returning: ticket).get()
    }

    /// How many registration upserts wait for a batch. For tests.
    package var queuedUpsertsForTesting: Int { upserts.count }

    /// How many notification enqueues wait for a batch. For tests.
    package var queuedEnqueuesForTesting: Int { notificationEnqueues.count }

    /// Applies `batch` in one transaction; one result per request, in order. A condition that
    /// does not hold fails only its request (before it wrote anything); an SQLite error fails
    /// the whole batch.
    private func applyUpserts(_ batch: [UpsertRequest]) async -> [Result<Registration, any Error>] {
        do {
            return try await runTransaction { connection in
                var results: [Result<Registration, any Error>] = []
                results.reserveCapacity(batch.count)
                for chunk in Self.chunks(batch) {
                    switch chunk {
                    case .unconditional(let requests):
                        let stored = try await Self.upsertRows(requests, on: connection)
                        results += stored.map { .success($0) }
                    case .conditional(let requests):
                        results += try await Self.applyConditional(requests, on: connection)
                    case .single(let request):
                        do {
                            results.append(.success(try await Self.applyConditional(request, on: connection)))
                        } catch let error as HeraldError {
                            results.append(.failure(error))
                        }
                    }
                }
                return results
            }
        } catch {
            return Array(repeating: .failure(error), count: batch.count)
        }
    }

    /// Upserts `requests` (distinct ids, at most ``RegistrationRow/maxRowsPerStatement``) in one
    /// statement; what was stored, in order.
    private static func upsertRows(_ requests: [UpsertRequest], on connection: SQLiteConnection) async throws -> [Registration] {
        var binds: [SQLiteData] = []
        binds.reserveCapacity(requests.count * RegistrationRow.bindsPerRow)
        for request in requests { binds += request.row.insertBinds }
        let returned = try await connection.query(RegistrationRow.upsertSQL(rows: requests.count, returning: true), binds)
        var byID: [String: SQLiteRow] = [:]
        for row in returned {
            if case .text(let id)? = row.column("id") { byID[id] = row }
        }
        var stored: [Registration] = []
        stored.reserveCapacity(requests.count)
        for request in requests {
            guard let returnedRow = byID[request.row.registration.id] else {
                throw StoreError(code: .database, message: "an upserted registration was not returned")
            }
            stored.append(try Self.stored(request.row, from: returnedRow))
        }
        return stored
    }

    /// Writes whose conditions depend on what is stored, without `ifVersion`, of distinct ids
    /// and distinct handles: checks every condition with two reads, writes those that hold in
    /// one statement, and removes the other registrations of their handles in one more. A
    /// condition that does not hold fails its request only, which writes nothing.
    ///
    /// The result is the one of running them one after the other in some order: each check
    /// reads only its own id, and the removal spares the ids of the chunk, so no request's
    /// write changes what another's check saw.
    private static func applyConditional(
        _ requests: [UpsertRequest], on connection: SQLiteConnection
    ) async throws -> [Result<Registration, any Error>] {
        let ids = requests.map { SQLiteData.text($0.row.registration.id) }
        let placeholders = Array(repeating: "?", count: ids.count).joined(separator: ", ")
        var owners: [String: String?] = [:]
        for row in try await connection.query("SELECT id, owner FROM registrations WHERE id IN (\(placeholders))", ids) {
            if let id = row.column("id")?.string { owners[id] = row.column("owner")?.string }
        }
        var issuedUntil: [String: Int] = [:]
        if requests.contains(where: { $0.condition.mustBeIssued && owners[$0.row.registration.id] == nil }) {
            let sql = "SELECT id, expires_at FROM reservations WHERE id IN (\(placeholders))"
            for row in try await connection.query(sql, ids) {
                if let id = row.column("id")?.string, let until = row.column("expires_at")?.integer { issuedUntil[id] = until }
            }
        }
        var results: [Result<Registration, any Error>?] = Array(repeating: nil, count: requests.count)
        var writes: [Int] = []
        for (index, request) in requests.enumerated() {
            let id = request.row.registration.id
            let isIssued = (issuedUntil[id] ?? .min) > request.row.registration.updatedAt.storeMilliseconds
            if let violation = request.condition.violation(id: id, existingOwner: owners[id], isIssued: isIssued) {
                results[index] = .failure(violation)
            } else {
                writes.append(index)
            }
        }
        guard !writes.isEmpty else { return results.map { $0! } }
        let stored = try await upsertRows(writes.map { requests[$0] }, on: connection)
        for (index, registration) in zip(writes, stored) { results[index] = .success(registration) }

        let replacing = writes.map { requests[$0] }.filter(\.condition.replacesOtherRegistrationsOfHandle)
        if !replacing.isEmpty {
            var binds: [SQLiteData] = replacing.map { .text($0.row.registration.handle) }
            for request in replacing {
                binds += [.text(request.row.registration.handle), .text(request.row.registration.platform.rawValue)]
            }
            binds += ids
            let handles = Array(repeating: "?", count: replacing.count).joined(separator: ", ")
            let pairs = Array(repeating: "(?, ?)", count: replacing.count).joined(separator: ", ")
            _ = try await connection.query(
                """
                DELETE FROM registrations
                WHERE handle IN (\(handles)) AND (handle, platform) IN (VALUES \(pairs))
                  AND installation_id IS NULL AND id NOT IN (\(placeholders))
                """,
                binds
            )
        }
        return results.map { $0! }
    }

    /// One write whose condition depends on what is stored: checks it, writes, and removes the
    /// device's other registrations if asked. A condition that does not hold throws a
    /// ``HeraldError`` before anything is written.
    private static func applyConditional(_ request: UpsertRequest, on connection: SQLiteConnection) async throws -> Registration {
        let row = request.row
        let condition = request.condition
        let id = row.registration.id
        let existing = try await connection.query("SELECT owner FROM registrations WHERE id = ?", [.text(id)]).first
        var isIssued = false
        if existing == nil, condition.mustBeIssued {
            let issued = try await connection.query(
                "SELECT 1 FROM reservations WHERE id = ? AND expires_at > ?",
                [.text(id), .integer(row.registration.updatedAt.storeMilliseconds)]
            )
            isIssued = !issued.isEmpty
        }
        let existingOwner: String?? = existing.map { $0.column("owner")?.string }
        if let violation = condition.violation(id: id, existingOwner: existingOwner, isIssued: isIssued) {
            throw violation
        }
        let stored: Registration
        if let ifVersion = condition.ifVersion {
            guard let returned = try await connection.query(RegistrationRow.updateIfVersionSQL, row.updateBinds(ifVersion: ifVersion)).first else {
                throw StoreError.versionMismatch("the registration does not have version \(ifVersion)")
            }
            stored = try Self.stored(row, from: returned)
        } else {
            guard let returned = try await connection.query(RegistrationRow.upsertSQL(rows: 1, returning: true), row.insertBinds).first else {
                throw StoreError(code: .database, message: "an upserted registration was not returned")
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

    /// A run of requests that go to the store together.
    enum Chunk {
        /// Unconditional upserts of distinct ids: one statement.
        case unconditional([UpsertRequest])
        /// Conditional upserts without `ifVersion`, of distinct ids and handles: checked
        /// together, written in one statement.
        case conditional([UpsertRequest])
        /// An upsert on `ifVersion`: alone.
        case single(UpsertRequest)
    }

    /// Splits a batch into chunks (at most 500 requests each, so that each row's `RETURNING`
    /// is unambiguous), in order, so that a condition sees every write queued before it: a
    /// chunk ends where its kind changes or an id (or, for conditional ones, a handle) repeats.
    static func chunks(_ batch: [UpsertRequest]) -> [Chunk] {
        var chunks: [Chunk] = []
        var current: [UpsertRequest] = []
        var currentIsConditional = false
        var ids: Set<String> = []
        var handles: Set<String> = []
        func flush() {
            if !current.isEmpty { chunks.append(currentIsConditional ? .conditional(current) : .unconditional(current)) }
            current = []
            ids = []
            handles = []
        }
        for request in batch {
            if request.condition.ifVersion != nil {
                flush()
                chunks.append(.single(request))
                continue
            }
            let conditional = !request.condition.isUnconditional
            let handle = request.row.registration.platform.rawValue + " " + request.row.registration.handle
            if conditional != currentIsConditional || current.count == RegistrationRow.maxRowsPerStatement
                || ids.contains(request.row.registration.id) || (conditional && handles.contains(handle))
            {
                flush()
                currentIsConditional = conditional
            }
            current.append(request)
            ids.insert(request.row.registration.id)
            if conditional { handles.insert(handle) }
        }
        flush()
        return chunks
    }

    private static func stored(_ row: RegistrationRow, from returned: SQLiteRow) throws(StoreError) -> Registration {
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
