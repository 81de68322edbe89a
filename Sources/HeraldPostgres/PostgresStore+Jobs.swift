public import Foundation
public import HeraldCore
public import HeraldStore
import NIOCore
import PostgresNIO

extension PostgresStore {
    private static func decodeJob(_ row: PostgresRow) throws(StoreError) -> HubJob {
        try HubJob(stored: row.byName)
    }

    public func createJob(_ job: HubJob, within quota: JobQuota) async throws -> JobQuota.Refusal? {
        var statement = SQLStatement()
        statement.sql = """
            INSERT INTO herald.jobs (hub, \(HubJob.storedColumns)) VALUES (\(statement.bind(hub)), \(statement.bind(job.id)), \
            \(statement.bind(job.kind.rawValue)), \(statement.bind(job.state.rawValue)), \(statement.bind(job.processed)), \
            \(statement.bind(job.total)), \(statement.bind(job.succeeded)), \(statement.bind(job.failed)), \
            \(statement.bind(job.cursor)), \(statement.bind(job.inputFile)), \(statement.bind(job.failure)), \(statement.bind(job.createdAt)), \
            \(statement.bind(job.updatedAt))) ON CONFLICT (hub, id) DO NOTHING RETURNING id
            """
        guard quota != .unlimited else {
            guard try await !query(statement).isEmpty else { throw HeraldError.conflict("a job with id '\(job.id)' exists") }
            return nil
        }
        // The hub's submissions take turns on an advisory lock, so that two nodes cannot both
        // take the last place.
        let outcome: (inserted: Bool, refusal: JobQuota.Refusal?) = try await transaction { [self, statement] connection in
            try await lock(["#jobs"], on: connection)
            let usage = try await jobUsage(on: connection)
            if let refusal = quota.refusal(for: usage) { return (false, refusal) }
            return (try await !query(statement, on: connection).isEmpty, nil)
        }
        if let refusal = outcome.refusal { return refusal }
        guard outcome.inserted else { throw HeraldError.conflict("a job with id '\(job.id)' exists") }
        return nil
    }

    private static let activeStates = "('\(HubJob.State.started.rawValue)', '\(HubJob.State.running.rawValue)')"
    private static let finishedStates = "('\(HubJob.State.completed.rawValue)', '\(HubJob.State.failed.rawValue)')"

    private func usageStatement() -> SQLStatement {
        var statement = SQLStatement()
        let hub = statement.bind(hub)
        statement.sql = """
            SELECT (SELECT count(*) FROM herald.jobs WHERE hub = \(hub))::bigint AS jobs, \
            (SELECT count(*) FROM herald.jobs WHERE hub = \(hub) AND state IN \(Self.activeStates))::bigint AS active, \
            ((SELECT coalesce(sum(size), 0) FROM herald.job_output_chunks WHERE hub = \(hub)) \
            + (SELECT coalesce(sum(size), 0) FROM herald.job_file_chunks WHERE hub = \(hub)))::bigint AS bytes
            """
        return statement
    }

    private static func decodeUsage(_ rows: [PostgresRow]) throws(StoreError) -> JobUsage {
        guard let row = rows.first?.byName else { return JobUsage(jobs: 0, activeJobs: 0, bytes: 0) }
        return JobUsage(jobs: try row.int("jobs"), activeJobs: try row.int("active"), bytes: try row.int("bytes"))
    }

    private func jobUsage(on connection: PostgresConnection) async throws -> JobUsage {
        try Self.decodeUsage(try await query(usageStatement(), on: connection))
    }

    public func jobUsage() async throws -> JobUsage {
        try Self.decodeUsage(try await query(usageStatement()))
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

    /// Writes a job's progress (and state) if it runs under `owner`'s lease, and appends the
    /// page's output and failures as chunks, in one statement that also reads the state it
    /// found; otherwise throws `notFound` (no such job) or `conflict` (someone else's, or
    /// finished), and writes nothing.
    private func updateLeasedJob(_ job: HubJob, owner: String, output: Data, failures: Data, now: Date, lease: SQLStatement) async throws {
        var statement = lease
        let hub = statement.bind(hub), id = statement.bind(job.id)
        // The chunks are inserted only if the update happened (they select from `updated`),
        // each after the last of its file: only the lease holder appends, so there is no race.
        var chunks = ""
        for (file, bytes) in [(0, output), (1, failures)] where !bytes.isEmpty {
            let fileNumber = statement.bind(file)
            chunks += """
                , chunk\(file) AS (INSERT INTO herald.job_output_chunks (hub, job_id, file, sequence, size, bytes) \
                SELECT \(hub), \(id), \(fileNumber), \
                (SELECT coalesce(max(sequence) + 1, 0) FROM herald.job_output_chunks WHERE hub = \(hub) AND job_id = \(id) AND file = \(fileNumber)), \
                \(statement.bind(bytes.count)), \(statement.bind(bytes)) FROM updated) 
                """
        }
        statement.sql = """
            WITH updated AS (UPDATE herald.jobs SET \(lease.sql), state = \(statement.bind(job.state.rawValue)), \
            processed = \(statement.bind(job.processed)), total = \(statement.bind(job.total)), \
            succeeded = \(statement.bind(job.succeeded)), failed = \(statement.bind(job.failed)), \
            cursor = \(statement.bind(job.cursor)), \
            failure = \(statement.bind(job.failure)), updated_at = \(statement.bind(now)) \
            WHERE hub = \(hub) AND id = \(id) AND state = \(statement.bind(HubJob.State.running.rawValue)) \
            AND lease_owner = \(statement.bind(owner)) RETURNING id)\(chunks) \
            SELECT (SELECT count(*) FROM updated) AS updated, \
            (SELECT state FROM herald.jobs WHERE hub = \(hub) AND id = \(id)) AS state
            """
        guard let row = try await query(statement).first?.byName else { return }
        if try row.int("updated") > 0 { return }
        guard let state = try row.optionalString("state") else { throw HeraldError.notFound("no job with id '\(job.id)'") }
        throw StoreError(code: .leaseLost, message: "the job '\(job.id)' is no longer leased by this worker (it is \(state))")
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

    public func jobOutputChunks(id: String, failures: Bool) async throws -> [JobChunk]? {
        var statement = SQLStatement()
        let hub = statement.bind(hub), id = statement.bind(id)
        // One row with no chunk (sequence NULL) for a job with an empty file; none for no job.
        statement.sql = """
            SELECT c.sequence::bigint AS sequence, c.size AS size FROM herald.jobs j \
            LEFT JOIN herald.job_output_chunks c ON c.hub = j.hub AND c.job_id = j.id AND c.file = \(statement.bind(failures ? 1 : 0)) \
            WHERE j.hub = \(hub) AND j.id = \(id) ORDER BY c.sequence
            """
        let rows = try await query(statement)
        guard !rows.isEmpty else { return nil }
        var chunks: [JobChunk] = []
        for row in rows {
            let columns = row.byName
            guard let sequence = try columns.optionalInt("sequence") else { continue }
            chunks.append(JobChunk(sequence: sequence, size: try columns.int("size")))
        }
        return chunks
    }

    public func jobOutputChunk(id: String, failures: Bool, sequence: Int) async throws -> Data? {
        var statement = SQLStatement()
        statement.sql = """
            SELECT bytes FROM herald.job_output_chunks WHERE hub = \(statement.bind(hub)) AND job_id = \(statement.bind(id)) \
            AND file = \(statement.bind(failures ? 1 : 0)) AND sequence = \(statement.bind(sequence))
            """
        return try await query(statement).first.map { row throws(StoreError) in try row.byName.bytes("bytes") }
    }

    public func appendJobFileChunk(upload: String, sequence: Int, bytes: Data, now: Date) async throws {
        var statement = SQLStatement()
        statement.sql = """
            INSERT INTO herald.job_file_chunks (hub, upload, sequence, size, bytes, created_at) VALUES (\(statement.bind(hub)), \
            \(statement.bind(upload)), \(statement.bind(sequence)), \(statement.bind(bytes.count)), \(statement.bind(bytes)), \
            \(statement.bind(now)))
            """
        try await query(statement)
    }

    public func commitJobFile(name: String, upload: String, now: Date) async throws {
        try await transaction { [self] connection in
            var replaced = SQLStatement()
            // The row lock makes two commits of one name take turns: each deletes what it replaced.
            replaced.sql = """
                SELECT upload FROM herald.job_files WHERE hub = \(replaced.bind(hub)) AND name = \(replaced.bind(name)) FOR UPDATE
                """
            let old = try await query(replaced, on: connection).first.map { row throws(StoreError) in
                try row.byName.string("upload")
            }
            var statement = SQLStatement()
            let hubParameter = statement.bind(hub), uploadParameter = statement.bind(upload)
            statement.sql = """
                INSERT INTO herald.job_files (hub, name, upload, size, created_at) VALUES (\(hubParameter), \(statement.bind(name)), \
                \(uploadParameter), \
                (SELECT coalesce(sum(size), 0) FROM herald.job_file_chunks WHERE hub = \(hubParameter) AND upload = \(uploadParameter)), \
                \(statement.bind(now))) \
                ON CONFLICT (hub, name) DO UPDATE SET upload = excluded.upload, size = excluded.size, created_at = excluded.created_at
                """
            try await query(statement, on: connection)
            if let old, old != upload {
                var delete = SQLStatement()
                delete.sql = "DELETE FROM herald.job_file_chunks WHERE hub = \(delete.bind(hub)) AND upload = \(delete.bind(old))"
                try await query(delete, on: connection)
            }
        }
    }

    public func discardJobFileUpload(_ upload: String) async throws {
        var statement = SQLStatement()
        let hub = statement.bind(hub), upload = statement.bind(upload)
        statement.sql = """
            DELETE FROM herald.job_file_chunks WHERE hub = \(hub) AND upload = \(upload) \
            AND NOT EXISTS (SELECT 1 FROM herald.job_files WHERE hub = \(hub) AND upload = \(upload))
            """
        try await query(statement)
    }

    public func jobFileChunks(name: String) async throws -> JobFileChunks? {
        var statement = SQLStatement()
        let hub = statement.bind(hub)
        statement.sql = """
            SELECT f.upload AS upload, c.sequence::bigint AS sequence, c.size AS size FROM herald.job_files f \
            LEFT JOIN herald.job_file_chunks c ON c.hub = f.hub AND c.upload = f.upload \
            WHERE f.hub = \(hub) AND f.name = \(statement.bind(name)) ORDER BY c.sequence
            """
        let rows = try await query(statement)
        guard let first = rows.first else { return nil }
        var file = JobFileChunks(upload: try first.byName.string("upload"), chunks: [])
        for row in rows {
            let columns = row.byName
            guard let sequence = try columns.optionalInt("sequence") else { continue }
            file.chunks.append(JobChunk(sequence: sequence, size: try columns.int("size")))
        }
        return file
    }

    public func jobFileChunk(upload: String, sequence: Int) async throws -> Data? {
        var statement = SQLStatement()
        statement.sql = """
            SELECT bytes FROM herald.job_file_chunks WHERE hub = \(statement.bind(hub)) AND upload = \(statement.bind(upload)) \
            AND sequence = \(statement.bind(sequence))
            """
        return try await query(statement).first.map { row throws(StoreError) in try row.byName.bytes("bytes") }
    }

    public func purgeJobs(finishedBefore: Date, filesBefore: Date, uploadsBefore: Date) async throws -> JobPurge {
        // Several nodes may sweep at once: each DELETE takes the rows it deletes, and a row
        // another node deleted first is simply not there.
        try await transaction { [self] connection in
            var jobs = SQLStatement()
            let jobsHub = jobs.bind(hub)
            jobs.sql = """
                WITH deleted AS (DELETE FROM herald.jobs WHERE hub = \(jobsHub) AND state IN \(Self.finishedStates) \
                AND updated_at < \(jobs.bind(finishedBefore)) \
                AND id NOT IN (SELECT split_part(input_file, '/', 1) FROM herald.jobs WHERE hub = \(jobsHub) \
                AND state IN \(Self.activeStates) AND input_file LIKE '%/%') RETURNING id), \
                chunks AS (DELETE FROM herald.job_output_chunks WHERE hub = \(jobsHub) AND job_id IN (SELECT id FROM deleted)) \
                SELECT count(*)::bigint AS count FROM deleted
                """
            let deletedJobs =
                try await query(jobs, on: connection).first.map { row throws(StoreError) in
                    try row.byName.int("count")
                } ?? 0
            var files = SQLStatement()
            let filesHub = files.bind(hub)
            files.sql = """
                WITH deleted AS (DELETE FROM herald.job_files WHERE hub = \(filesHub) AND created_at < \(files.bind(filesBefore)) \
                AND name NOT IN (SELECT input_file FROM herald.jobs WHERE hub = \(filesHub) AND state IN \(Self.activeStates) \
                AND input_file IS NOT NULL) RETURNING upload), \
                chunks AS (DELETE FROM herald.job_file_chunks WHERE hub = \(filesHub) AND upload IN (SELECT upload FROM deleted)) \
                SELECT count(*)::bigint AS count FROM deleted
                """
            let deletedFiles =
                try await query(files, on: connection).first.map { row throws(StoreError) in
                    try row.byName.int("count")
                } ?? 0
            var uploads = SQLStatement()
            let uploadsHub = uploads.bind(hub)
            uploads.sql = """
                DELETE FROM herald.job_file_chunks c WHERE hub = \(uploadsHub) AND created_at < \(uploads.bind(uploadsBefore)) \
                AND NOT EXISTS (SELECT 1 FROM herald.job_files f WHERE f.hub = c.hub AND f.upload = c.upload)
                """
            try await query(uploads, on: connection)
            return JobPurge(jobs: deletedJobs, files: deletedFiles)
        }
    }
}
