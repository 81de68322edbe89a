public import Foundation
public import HeraldCore
import NIOCore
import PostgresNIO
import HeraldStore

extension PostgresStore {
    private static func decodeJob(_ row: PostgresRow) throws(PostgresStoreError) -> HubJob {
        try HubJob(stored: row.makeRandomAccess())
    }

    public func createJob(_ job: HubJob) async throws {
        var statement = SQLStatement()
        statement.sql = """
            INSERT INTO herald.jobs (hub, \(HubJob.storedColumns)) VALUES (\(statement.bind(hub)), \(statement.bind(job.id)), \
            \(statement.bind(job.kind.rawValue)), \(statement.bind(job.state.rawValue)), \(statement.bind(job.processed)), \
            \(statement.bind(job.total)), \(statement.bind(job.succeeded)), \(statement.bind(job.failed)), \
            \(statement.bind(job.cursor)), \(statement.bind(job.inputFile)), \(statement.bind(job.failure)), \(statement.bind(job.createdAt)), \
            \(statement.bind(job.updatedAt))) ON CONFLICT (hub, id) DO NOTHING RETURNING id
            """
        guard try await !query(statement).isEmpty else { throw HeraldError.conflict("a job with id '\(job.id)' exists") }
    }

    public func job(id: String) async throws -> HubJob? {
        var statement = SQLStatement()
        statement.sql = """
            SELECT \(HubJob.storedColumns) FROM herald.jobs WHERE hub = \(statement.bind(hub)) AND id = \(statement.bind(id))
            """
        return try await query(statement).first.map(Self.decodeJob)
    }

    public func listJobs(limit: Int) async throws -> [HubJob] {
        var statement = SQLStatement()
        statement.sql = """
            SELECT \(HubJob.storedColumns) FROM herald.jobs WHERE hub = \(statement.bind(hub)) \
            ORDER BY created_at DESC, id DESC LIMIT \(statement.bind(max(0, limit)))
            """
        return try await query(statement).map(Self.decodeJob)
    }

    public func claimJob(now: Date, lease: Duration, owner: String) async throws -> HubJob? {
        let nowMs = now.storeMilliseconds
        let leaseUntil = nowMs.addingReportingOverflow(max(0, lease.storeMilliseconds)).partialValue
        var statement = SQLStatement()
        let hub = statement.bind(hub), now = statement.bind(nowMs)
        let running = statement.bind(HubJob.State.running.rawValue), started = statement.bind(HubJob.State.started.rawValue)
        statement.sql = """
            UPDATE herald.jobs SET state = \(running), lease_owner = \(statement.bind(owner)), \
            lease_until = \(statement.bind(leaseUntil)), updated_at = \(now) \
            WHERE hub = \(hub) AND id = (\
            SELECT id FROM herald.jobs WHERE hub = \(hub) \
            AND (state = \(started) OR (state = \(running) AND (lease_until IS NULL OR lease_until < \(now)))) \
            ORDER BY created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED) \
            RETURNING \(HubJob.storedColumns)
            """
        return try await query(statement).first.map(Self.decodeJob)
    }

    public func saveJobProgress(_ job: HubJob, owner: String, output: Data, failures: Data, now: Date, leaseUntil: Date) async throws {
        var statement = SQLStatement()
        statement.sql = "lease_until = \(statement.bind(leaseUntil)), lease_owner = \(statement.bind(owner))"
        try await updateLeasedJob(job, owner: owner, output: output, failures: failures, now: now, lease: statement)
    }

    public func finishJob(_ job: HubJob, owner: String, output: Data, failures: Data, now: Date) async throws {
        try await updateLeasedJob(
            job, owner: owner, output: output, failures: failures, now: now, lease: SQLStatement("lease_until = NULL, lease_owner = NULL")
        )
    }

    /// Writes a job's progress (and state) if it runs under `owner`'s lease, in one statement
    /// that also reads the state it found; otherwise throws `notFound` (no such job) or
    /// `conflict` (someone else's, or finished).
    private func updateLeasedJob(_ job: HubJob, owner: String, output: Data, failures: Data, now: Date, lease: SQLStatement) async throws {
        var statement = lease
        let hub = statement.bind(hub), id = statement.bind(job.id)
        statement.sql = """
            WITH updated AS (UPDATE herald.jobs SET \(lease.sql), state = \(statement.bind(job.state.rawValue)), \
            processed = \(statement.bind(job.processed)), total = \(statement.bind(job.total)), \
            succeeded = \(statement.bind(job.succeeded)), failed = \(statement.bind(job.failed)), \
            cursor = \(statement.bind(job.cursor)), \
            failure = \(statement.bind(job.failure)), updated_at = \(statement.bind(now)), \
            output = output || \(statement.bind(String(decoding: output, as: UTF8.self))), \
            failures = failures || \(statement.bind(String(decoding: failures, as: UTF8.self))) \
            WHERE hub = \(hub) AND id = \(id) AND state = \(statement.bind(HubJob.State.running.rawValue)) \
            AND lease_owner = \(statement.bind(owner)) RETURNING id) \
            SELECT (SELECT count(*) FROM updated) AS updated, \
            (SELECT state FROM herald.jobs WHERE hub = \(hub) AND id = \(id)) AS state
            """
        guard let row = try await query(statement).first?.makeRandomAccess() else { return }
        if try row.int("updated") > 0 { return }
        guard let state = try row.optionalString("state") else { throw HeraldError.notFound("no job with id '\(job.id)'") }
        throw HeraldError.conflict("the job '\(job.id)' is no longer leased by this worker (it is \(state))")
    }

    public func releaseJob(id: String, owner: String) async throws {
        var statement = SQLStatement()
        statement.sql = """
            UPDATE herald.jobs SET lease_until = NULL, lease_owner = NULL WHERE hub = \(statement.bind(hub)) \
            AND id = \(statement.bind(id)) AND state = \(statement.bind(HubJob.State.running.rawValue)) \
            AND lease_owner = \(statement.bind(owner))
            """
        try await query(statement)
    }

    public func jobOutput(id: String, failures: Bool) async throws -> Data? {
        var statement = SQLStatement()
        statement.sql = """
            SELECT \(failures ? "failures" : "output") AS file FROM herald.jobs \
            WHERE hub = \(statement.bind(hub)) AND id = \(statement.bind(id))
            """
        return try await query(statement).first.map { row throws(PostgresStoreError) in
            Data(try row.makeRandomAccess().string("file").utf8)
        }
    }

    public func saveJobFile(name: String, bytes: Data, now: Date) async throws {
        var statement = SQLStatement()
        statement.sql = """
            INSERT INTO herald.job_files (hub, name, bytes, created_at) VALUES (\(statement.bind(hub)), \(statement.bind(name)), \
            \(statement.bind(bytes)), \(statement.bind(now))) \
            ON CONFLICT (hub, name) DO UPDATE SET bytes = excluded.bytes, created_at = excluded.created_at
            """
        try await query(statement)
    }

    public func jobFile(name: String) async throws -> Data? {
        var statement = SQLStatement()
        statement.sql = """
            SELECT bytes FROM herald.job_files WHERE hub = \(statement.bind(hub)) AND name = \(statement.bind(name))
            """
        return try await query(statement).first.map { row throws(PostgresStoreError) in try row.makeRandomAccess().bytes("bytes") }
    }
}
