public import Foundation
public import HeraldCore
import NIOCore
import SQLiteNIO
import HeraldStore

extension SQLiteStore {
    public func createJob(_ job: HubJob) async throws {
        let binds: [SQLiteData] = [
            .text(job.id), .text(job.kind.rawValue), .text(job.state.rawValue), .integer(job.processed), SQLiteData(job.total),
            .integer(job.succeeded), .integer(job.failed), SQLiteData(job.cursor), SQLiteData(job.inputFile),
            SQLiteData(job.failure), SQLiteData(job.createdAt), SQLiteData(job.updatedAt),
        ]
        let inserted = try await write { connection in
            try await !connection.query(
                """
                INSERT INTO jobs (\(HubJob.storedColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (id) DO NOTHING RETURNING id
                """,
                binds
            ).isEmpty
        }
        guard inserted else { throw HeraldError.conflict("a job with id '\(job.id)' exists") }
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

    /// Writes a job's progress (and state) if it runs under `owner`'s lease; otherwise throws
    /// `notFound` (no such job) or `conflict` (someone else's, or finished).
    private func updateLeasedJob(_ job: HubJob, owner: String, output: Data, failures: Data, now: Date, lease: [SQLiteData]) async throws {
        let binds: [SQLiteData] =
            [
                .text(job.state.rawValue), .integer(job.processed), SQLiteData(job.total), .integer(job.succeeded),
                .integer(job.failed), SQLiteData(job.cursor), SQLiteData(job.failure), SQLiteData(now),
                .text(String(decoding: output, as: UTF8.self)), .text(String(decoding: failures, as: UTF8.self)),
            ] + lease + [.text(job.id), .text(HubJob.State.running.rawValue), .text(owner)]
        try await write { connection in
            let updated = try await connection.query(
                """
                UPDATE jobs SET state = ?, processed = ?, total = ?, succeeded = ?, failed = ?, cursor = ?, failure = ?, updated_at = ?,
                    output = output || ?, failures = failures || ?, lease_until = ?, lease_owner = ?
                WHERE id = ? AND state = ? AND lease_owner = ? RETURNING id
                """,
                binds
            )
            if updated.isEmpty {
                let state = try await connection.query("SELECT state FROM jobs WHERE id = ?", [.text(job.id)]).first?.column("state")?.string
                guard let state else { throw HeraldError.notFound("no job with id '\(job.id)'") }
                throw HeraldError.conflict("the job '\(job.id)' is no longer leased by this worker (it is \(state))")
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

    public func jobOutput(id: String, failures: Bool) async throws -> Data? {
        let rows = try await read { connection in
            try await connection.query("SELECT \(failures ? "failures" : "output") AS file FROM jobs WHERE id = ?", [.text(id)])
        }
        return rows.first.map { Data(($0.column("file")?.string ?? "").utf8) }
    }

    public func saveJobFile(name: String, bytes: Data, now: Date) async throws {
        try await write { connection in
            _ = try await connection.query(
                """
                INSERT INTO job_files (name, bytes, created_at) VALUES (?, ?, ?)
                ON CONFLICT (name) DO UPDATE SET bytes = excluded.bytes, created_at = excluded.created_at
                """,
                [.text(name), .blob(ByteBuffer(bytes: bytes)), SQLiteData(now)]
            )
        }
    }

    public func jobFile(name: String) async throws -> Data? {
        let rows = try await read { connection in
            try await connection.query("SELECT bytes FROM job_files WHERE name = ?", [.text(name)])
        }
        return try rows.first.map { row throws(SQLiteStoreError) in try row.bytes("bytes") }
    }
}
