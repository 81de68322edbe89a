public import Foundation
public import HeraldCore
public import HeraldStore
import NIOCore

extension SQLiteStore {
    public func createJob(_ job: HubJob, within quota: JobQuota) async throws -> JobQuota.Refusal? {
        let binds: [SQLiteData] = [
            .text(job.id), .text(job.kind.rawValue), .text(job.state.rawValue), .integer(job.processed), SQLiteData(job.total),
            .integer(job.succeeded), .integer(job.failed), SQLiteData(job.cursor), SQLiteData(job.inputFile),
            SQLiteData(job.failure), SQLiteData(job.createdAt), SQLiteData(job.updatedAt),
        ]
        // One write transaction: the count and the insert cannot be split by another submission.
        let outcome: (inserted: Bool, refusal: JobQuota.Refusal?) = try await write { connection in
            if quota != .unlimited, let refusal = quota.refusal(for: try await Self.jobUsage(connection)) {
                return (false, refusal)
            }
            let inserted = try await !connection.query(
                """
                INSERT INTO jobs (\(HubJob.storedColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (id) DO NOTHING RETURNING id
                """,
                binds
            ).isEmpty
            return (inserted, nil)
        }
        if let refusal = outcome.refusal { return refusal }
        guard outcome.inserted else { throw HeraldError.conflict("a job with id '\(job.id)' exists") }
        return nil
    }

    private static let activeStates = "('\(HubJob.State.started.rawValue)', '\(HubJob.State.running.rawValue)')"
    private static let finishedStates = "('\(HubJob.State.completed.rawValue)', '\(HubJob.State.failed.rawValue)')"

    private static func jobUsage(_ connection: SQLiteConnection) async throws -> JobUsage {
        let row = try await connection.query(
            """
            SELECT (SELECT count(*) FROM jobs) AS jobs,
                (SELECT count(*) FROM jobs WHERE state IN \(activeStates)) AS active,
                (SELECT coalesce(sum(size), 0) FROM job_output_chunks) + (SELECT coalesce(sum(size), 0) FROM job_file_chunks) AS bytes
            """
        ).first
        guard let row else { return JobUsage(jobs: 0, activeJobs: 0, bytes: 0) }
        return JobUsage(jobs: try row.int("jobs"), activeJobs: try row.int("active"), bytes: try row.int("bytes"))
    }

    public func jobUsage() async throws -> JobUsage {
        try await read { connection in try await Self.jobUsage(connection) }
    }

    public func job(id: String) async throws -> HubJob? {
        let rows = try await read { connection in
            try await connection.query("SELECT \(HubJob.storedColumns) FROM jobs WHERE id = ?", [.text(id)])
        }
        return try rows.first.map(HubJob.init(stored:))
    }

    public func listJobs(limit: Int) async throws -> [HubJob] {
        let rows = try await read { connection in
            try await connection.query(
                "SELECT \(HubJob.storedColumns) FROM jobs ORDER BY created_at DESC, id DESC LIMIT ?", [.integer(max(0, limit))]
            )
        }
        return try rows.map(HubJob.init(stored:))
    }

    public func claimJob(now: Date, lease: Duration, owner: String) async throws -> HubJob? {
        let nowMs = now.storeMilliseconds
        let leaseUntil = nowMs.addingReportingOverflow(max(0, lease.storeMilliseconds)).partialValue
        let rows = try await write { connection in
            try await connection.query(
                """
                UPDATE jobs SET state = ?1, lease_owner = ?4, lease_until = ?5, updated_at = ?3
                WHERE id = (
                    SELECT id FROM jobs
                    WHERE state = ?2 OR (state = ?1 AND (lease_until IS NULL OR lease_until < ?3))
                    ORDER BY created_at, id LIMIT 1
                )
                RETURNING \(HubJob.storedColumns)
                """,
                [
                    .text(HubJob.State.running.rawValue), .text(HubJob.State.started.rawValue), .integer(nowMs), .text(owner),
                    .integer(leaseUntil),
                ]
            )
        }
        return try rows.first.map(HubJob.init(stored:))
    }

    public func saveJobProgress(_ job: HubJob, owner: String, output: Data, failures: Data, now: Date, leaseUntil: Date) async throws {
        try await updateLeasedJob(job, owner: owner, output: output, failures: failures, now: now, lease: [SQLiteData(leaseUntil), .text(owner)])
    }

    public func finishJob(_ job: HubJob, owner: String, output: Data, failures: Data, now: Date) async throws {
        try await updateLeasedJob(job, owner: owner, output: output, failures: failures, now: now, lease: [.null, .null])
    }

    /// Writes a job's progress (and state) if it runs under `owner`'s lease, and appends the
    /// page's output and failures as chunks, in one transaction; otherwise throws `notFound`
    /// (no such job) or `conflict` (someone else's, or finished), and writes nothing.
    private func updateLeasedJob(_ job: HubJob, owner: String, output: Data, failures: Data, now: Date, lease: [SQLiteData]) async throws {
        let binds: [SQLiteData] =
            [
                .text(job.state.rawValue), .integer(job.processed), SQLiteData(job.total), .integer(job.succeeded),
                .integer(job.failed), SQLiteData(job.cursor), SQLiteData(job.failure), SQLiteData(now),
            ] + lease + [.text(job.id), .text(HubJob.State.running.rawValue), .text(owner)]
        try await write { connection in
            let updated = try await connection.query(
                """
                UPDATE jobs SET state = ?, processed = ?, total = ?, succeeded = ?, failed = ?, cursor = ?, failure = ?, updated_at = ?,
                    lease_until = ?, lease_owner = ?
                WHERE id = ? AND state = ? AND lease_owner = ? RETURNING id
                """,
                binds
            )
            if updated.isEmpty {
                let state = try await connection.query("SELECT state FROM jobs WHERE id = ?", [.text(job.id)]).first?.column("state")?.string
                guard let state else { throw HeraldError.notFound("no job with id '\(job.id)'") }
                throw StoreError(code: .leaseLost, message: "the job '\(job.id)' is no longer leased by this worker (it is \(state))")
            }
            for (file, bytes) in [(0, output), (1, failures)] where !bytes.isEmpty {
                _ = try await connection.query(
                    """
                    INSERT INTO job_output_chunks (job_id, file, sequence, size, bytes)
                    SELECT ?1, ?2, coalesce(max(sequence) + 1, 0), ?3, ?4 FROM job_output_chunks WHERE job_id = ?1 AND file = ?2
                    """,
                    [.text(job.id), .integer(file), .integer(bytes.count), .blob(Array(bytes))]
                )
            }
        }
    }

    public func releaseJob(id: String, owner: String) async throws {
        try await write { connection in
            _ = try await connection.query(
                "UPDATE jobs SET lease_until = NULL, lease_owner = NULL WHERE id = ? AND state = ? AND lease_owner = ?",
                [.text(id), .text(HubJob.State.running.rawValue), .text(owner)]
            )
        }
    }

    public func jobOutputChunks(id: String, failures: Bool) async throws -> [JobChunk]? {
        let (exists, rows) = try await read { connection in
            let exists = try await !connection.query("SELECT 1 FROM jobs WHERE id = ?", [.text(id)]).isEmpty
            let rows = try await connection.query(
                "SELECT sequence, size FROM job_output_chunks WHERE job_id = ? AND file = ? ORDER BY sequence",
                [.text(id), .integer(failures ? 1 : 0)]
            )
            return (exists, rows)
        }
        guard exists else { return nil }
        return try rows.map { row throws(StoreError) in JobChunk(sequence: try row.int("sequence"), size: try row.int("size")) }
    }

    public func jobOutputChunk(id: String, failures: Bool, sequence: Int) async throws -> Data? {
        let rows = try await read { connection in
            try await connection.query(
                "SELECT bytes FROM job_output_chunks WHERE job_id = ? AND file = ? AND sequence = ?",
                [.text(id), .integer(failures ? 1 : 0), .integer(sequence)]
            )
        }
        return try rows.first.map { row throws(StoreError) in try row.bytes("bytes") }
    }

    public func appendJobFileChunk(upload: String, sequence: Int, bytes: Data, now: Date) async throws {
        try await write { connection in
            _ = try await connection.query(
                "INSERT INTO job_file_chunks (upload, sequence, size, bytes, created_at) VALUES (?, ?, ?, ?, ?)",
                [.text(upload), .integer(sequence), .integer(bytes.count), .blob(Array(bytes)), SQLiteData(now)]
            )
        }
    }

    public func commitJobFile(name: String, upload: String, now: Date) async throws {
        try await write { connection in
            let replaced = try await connection.query("SELECT upload FROM job_files WHERE name = ?", [.text(name)]).first?.column("upload")?.string
            _ = try await connection.query(
                """
                INSERT INTO job_files (name, upload, size, created_at)
                VALUES (?1, ?2, (SELECT coalesce(sum(size), 0) FROM job_file_chunks WHERE upload = ?2), ?3)
                ON CONFLICT (name) DO UPDATE SET upload = excluded.upload, size = excluded.size, created_at = excluded.created_at
                """,
                [.text(name), .text(upload), SQLiteData(now)]
            )
            if let replaced, replaced != upload {
                _ = try await connection.query("DELETE FROM job_file_chunks WHERE upload = ?", [.text(replaced)])
            }
        }
    }

    public func discardJobFileUpload(_ upload: String) async throws {
        try await write { connection in
            _ = try await connection.query(
                "DELETE FROM job_file_chunks WHERE upload = ?1 AND NOT EXISTS (SELECT 1 FROM job_files WHERE upload = ?1)", [.text(upload)]
            )
        }
    }

    public func jobFileChunks(name: String) async throws -> JobFileChunks? {
        let (upload, rows) = try await read { connection in
            guard let upload = try await connection.query("SELECT upload FROM job_files WHERE name = ?", [.text(name)]).first?.column("upload")?.string else {
                return (String?.none, [SQLiteRow]())
            }
            let rows = try await connection.query("SELECT sequence, size FROM job_file_chunks WHERE upload = ? ORDER BY sequence", [.text(upload)])
            return (upload, rows)
        }
        guard let upload else { return nil }
        let chunks = try rows.map { row throws(StoreError) in JobChunk(sequence: try row.int("sequence"), size: try row.int("size")) }
        return JobFileChunks(upload: upload, chunks: chunks)
    }

    public func jobFileChunk(upload: String, sequence: Int) async throws -> Data? {
        let rows = try await read { connection in
            try await connection.query("SELECT bytes FROM job_file_chunks WHERE upload = ? AND sequence = ?", [.text(upload), .integer(sequence)])
        }
        return try rows.first.map { row throws(StoreError) in try row.bytes("bytes") }
    }

    public func purgeJobs(finishedBefore: Date, filesBefore: Date, uploadsBefore: Date) async throws -> JobPurge {
        try await write { connection in
            // An export whose output an active import reads, and a file an active import reads, stay.
            let jobs = try await connection.query(
                """
                DELETE FROM jobs WHERE state IN \(Self.finishedStates) AND updated_at < ?1
                AND id NOT IN (
                    SELECT substr(input_file, 1, instr(input_file, '/') - 1) FROM jobs
                    WHERE state IN \(Self.activeStates) AND input_file LIKE '%/%'
                )
                RETURNING id
                """,
                [SQLiteData(finishedBefore)]
            ).count
            if jobs > 0 {
                _ = try await connection.query("DELETE FROM job_output_chunks WHERE job_id NOT IN (SELECT id FROM jobs)")
            }
            let expired = """
                FROM job_files WHERE created_at < ?1
                AND name NOT IN (SELECT input_file FROM jobs WHERE state IN \(Self.activeStates) AND input_file IS NOT NULL)
                """
            _ = try await connection.query(
                "DELETE FROM job_file_chunks WHERE upload IN (SELECT upload \(expired))", [SQLiteData(filesBefore)]
            )
            let files = try await connection.query("DELETE \(expired) RETURNING name", [SQLiteData(filesBefore)]).count
            _ = try await connection.query(
                "DELETE FROM job_file_chunks WHERE created_at < ? AND upload NOT IN (SELECT upload FROM job_files)",
                [SQLiteData(uploadsBefore)]
            )
            return JobPurge(jobs: jobs, files: files)
        }
    }
}
