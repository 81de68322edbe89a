public import Foundation
public import HeraldCore
import HeraldHubWire
public import HeraldStore
import Logging

/// Export and import jobs (the hub API's `POST /{hub}/jobs`): kept in the store, run in the
/// background by the hub's ``DeliveryWorker`` under a lease, a page of lines at a time, through
/// the same line-by-line code as the command line (``importRegistration(line:number:mode:)``).
extension HubEngine {
    /// Lines an import applies, or registrations an export writes, between two saves of progress.
    static let jobPageSize = 500
    static let jobKey = "\u{0}jobs"
    static let sweepKey = "\u{0}sweep"

    /// Saves a new job and wakes this node's job worker, within the hub's quota
    /// (``Configuration/jobQuota``): over it, nothing is saved and the error names the quota:
    /// ``HeraldError/Code/tooManyRequests`` while too many jobs wait or run (a wait fixes it),
    /// ``HeraldError/Code/forbidden`` when the hub keeps too many jobs or bytes.
    ///
    /// - Parameter inputFile: for an import, the job file it reads (``jobFile(named:)``).
    public func submitJob(kind: HubJob.Kind, inputFile: String?, now: Date = Date()) async throws -> HubJob {
        let job = HubJob(kind: kind, inputFile: inputFile, createdAt: now, updatedAt: now)
        if let refusal = try await store.createJob(job, within: configuration.jobQuota) {
            throw jobQuotaError(refusal)
        }
        signal.ring(Self.jobKey, remember: true)
        return try await store.job(id: job.id) ?? job
    }

    private func jobQuotaError(_ refusal: JobQuota.Refusal) -> HeraldError {
        let quota = configuration.jobQuota
        let retention = Self.describe(configuration.jobRetention)
        switch refusal.limit {
        case .activeJobs:
            return .tooManyRequests(
                "quota of jobs waiting or running at once exceeded: the hub runs at most \(quota.maxActiveJobs), and \(refusal.used) are; submit again once one has finished"
            )
        case .jobs:
            return .forbidden(
                "quota of jobs kept exceeded: the hub keeps at most \(quota.maxJobs) jobs, and has \(refusal.used); finished jobs are deleted \(retention) after they end"
            )
        default:
            return .forbidden(
                "quota of job storage exceeded: the hub's job files and outputs take \(refusal.used) bytes of at most \(quota.maxBytes); they are deleted \(retention) after they are written"
            )
        }
    }

    /// A retention for people: `7 days`, `12 hours`, `90 seconds`.
    static func describe(_ duration: Duration) -> String {
        let seconds = Int(duration.seconds.rounded())
        for (unit, length) in [("day", 86_400), ("hour", 3600), ("minute", 60)] where seconds >= length && seconds % length == 0 {
            return "\(seconds / length) \(unit)\(seconds / length == 1 ? "" : "s")"
        }
        return "\(seconds) second\(seconds == 1 ? "" : "s")"
    }

    public func job(id: String) async throws -> HubJob? {
        try await store.job(id: id)
    }

    /// The newest jobs, newest first.
    public func jobs(limit: Int) async throws -> [HubJob] {
        try await store.listJobs(limit: limit)
    }

    /// Saves (or replaces) an uploaded job file at once, such as an import's input, within the
    /// size and quota an upload has (``beginJobFileUpload(name:)``).
    public func saveJobFile(name: String, bytes: Data, now: Date = Date()) async throws {
        var upload = try await beginJobFileUpload(name: name)
        do {
            try await upload.append(bytes)
            try await upload.commit(now: now)
        } catch {
            await upload.discard()
            throw error
        }
    }

    /// Starts an upload of the job file `name`, which the client streams in with
    /// ``JobFileUpload/append(_:)`` and ends with ``JobFileUpload/commit(now:)`` (it then
    /// replaces the file of that name, if any, at once) or ``JobFileUpload/discard()``.
    public func beginJobFileUpload(name: String) async throws -> JobFileUpload {
        guard HubJob.isValidFileName(name) else {
            throw HeraldError.badRequest("a job file's name is 1–128 letters, digits, '-', '_' and '.', not starting with '.'; '\(name.prefix(40))' is not")
        }
        let replaced = try await store.jobFileChunks(name: name)?.size ?? 0
        return JobFileUpload(engine: self, name: name, replacedBytes: replaced)
    }

    /// Checks that `bytes` more fit the hub's job storage quota, counting what is stored now
    /// less `releasing` (a file about to be replaced); throws ``HeraldError/Code/forbidden``
    /// naming the quota otherwise.
    func checkJobStorage(adding bytes: Int, releasing: Int = 0) async throws {
        let quota = configuration.jobQuota
        guard quota.maxBytes != .max else { return }
        let used = try await store.jobUsage().bytes - releasing
        if used + bytes > quota.maxBytes {
            throw jobQuotaError(JobQuota.Refusal(limit: .bytes, used: used))
        }
    }

    /// A job file: an uploaded one, or a job's output (`<job id>/Output.txt`) or failures
    /// (`<job id>/Failed.txt`); `nil` if there is none of that name.
    public func jobFile(named name: String) async throws -> Data? {
        guard let contents = try await jobFileContents(named: name) else { return nil }
        var data = Data(capacity: contents.size)
        try await contents.forEachChunk { data.append($0) }
        return data
    }

    /// A job file as its stored chunks, to be read one at a time (a download streams them);
    /// `nil` if there is none of that name.
    public func jobFileContents(named name: String) async throws -> JobFileContents? {
        let store = self.store
        let parts = name.split(separator: "/", omittingEmptySubsequences: false)
        if parts.count == 2 {
            let id = String(parts[0])
            let failures: Bool
            switch parts[1] {
            case HubJob.outputFile[...]: failures = false
            case HubJob.failuresFile[...]: failures = true
            default: return nil
            }
            guard let chunks = try await store.jobOutputChunks(id: id, failures: failures) else { return nil }
            return JobFileContents(chunks: chunks) { try await store.jobOutputChunk(id: id, failures: failures, sequence: $0) }
        }
        guard HubJob.isValidFileName(name), let file = try await store.jobFileChunks(name: name) else { return nil }
        return JobFileContents(chunks: file.chunks) { try await store.jobFileChunk(upload: file.upload, sequence: $0) }
    }

    /// Deletes the finished jobs, with their outputs, and the job files that have outlived
    /// ``Configuration/jobRetention``, and the chunks of uploads broken off a day ago or more
    /// (``JobSweeper`` runs it on every node).
    @discardableResult
    public func sweepJobs(now: Date = Date()) async throws -> JobPurge {
        let cutoff = now.addingTimeInterval(-configuration.jobRetention.seconds)
        // An upload in progress lasts at most the body timeout, a day at the most: a chunk a
        // day old belongs to an upload that was broken off.
        let abandoned = now.addingTimeInterval(-86_400)
        let purged = try await store.purgeJobs(finishedBefore: cutoff, filesBefore: cutoff, uploadsBefore: abandoned)
        if purged.jobs > 0 || purged.files > 0 {
            logger.debug(
                "Deleted jobs and job files past their retention", metadata: ["herald.jobs.count": "\(purged.jobs)", "herald.files.count": "\(purged.files)"])
        }
        return purged
    }

    /// Waits until the hub stops or `timeout` has passed.
    func waitForSweep(timeout: Duration) async {
        await signal.wait(Self.sweepKey, timeout: timeout)
    }

    /// Claims the next job that waits (or whose worker died) and runs it to its end; whether
    /// there was one. On graceful shutdown (``interruptDelivery()``) the job is handed back
    /// after the page it is on, to be resumed from there.
    public func runNextJob(now: Date = Date()) async throws -> Bool {
        guard let claimed = try await store.claimJob(now: now, lease: configuration.lease, owner: leaseOwner) else { return false }
        let logger = self.logger.with("herald.job.id", claimed.id)
        logger.debug("Running a job", metadata: ["herald.job.type": "\(claimed.kind.rawValue)"])
        var job = claimed
        do {
            if let mode = job.kind.importMode {
                try await runImport(&job, mode: mode)
            } else {
                try await runExport(&job)
            }
        } catch let error as HeraldError where [.notFound, .badRequest, .forbidden].contains(error.code) {
            job.state = .failed
            job.failure = error.message
            try await store.finishJob(job, owner: leaseOwner, output: Data(), failures: Data(), now: Date())
        }
        logger.debug("Job ran", metadata: ["herald.job.state": "\(job.state.rawValue)"])
        return true
    }

    /// Waits until a job is submitted on this node or `timeout` has passed.
    func waitForJobs(timeout: Duration) async {
        await signal.wait(Self.jobKey, timeout: timeout)
    }

    /// Wakes the job worker (graceful shutdown, a stopped hub).
    func wakeJobWorker() {
        signal.ring(Self.jobKey, remember: true)
    }

    private func runImport(_ job: inout HubJob, mode: RegistrationImportMode) async throws {
        guard let name = job.inputFile, let data = try await jobFile(named: name) else {
            throw HeraldError.notFound(
                "the import file \(job.inputFile ?? "") is not among the hub's job files; upload it with PUT /{hub}/jobs/files/{name} first"
            )
        }
        let lines = Self.importLines(data)
        job.total = lines.count
        while job.processed < lines.count {
            let end = min(lines.count, job.processed + Self.jobPageSize)
            var output = "", failures = ""
            for index in job.processed..<end {
                guard let outcome = try await importRegistration(line: lines[index], number: index + 1, mode: mode) else { continue }
                if outcome.succeeded {
                    job.succeeded += 1
                    output += outcome.report + "\n"
                } else {
                    job.failed += 1
                    failures += outcome.report + "\n"
                }
            }
            job.processed = end
            if end == lines.count { await importFinished(changed: job.succeeded) }
            guard try await savePage(&job, output: output, failures: failures, done: end == lines.count) else { return }
        }
        if lines.isEmpty { _ = try await savePage(&job, output: "", failures: "", done: true) }
    }

    private func runExport(_ job: inout HubJob) async throws {
        if job.total == nil { job.total = try await registrationCount() }
        while true {
            let page = try await exportPage(after: job.cursor, limit: Self.jobPageSize)
            var output = ""
            for registration in page { output += RegistrationDescription.line(registration) + "\n" }
            job.processed += page.count
            job.succeeded += page.count
            if let last = page.last { job.cursor = last.id }
            let done = page.count < Self.jobPageSize
            guard try await savePage(&job, output: output, failures: "", done: done) else { return }
            if done { return }
        }
    }

    /// Saves a page's progress and output, or the end of the job; `false` when the job was
    /// handed back (graceful shutdown) and the worker stops here.
    private func savePage(_ job: inout HubJob, output: String, failures: String, done: Bool) async throws -> Bool {
        // A page that would overflow the hub's job storage ends the job (failed, the quota named).
        try await checkJobStorage(adding: output.utf8.count + failures.utf8.count)
        let now = Date()
        if done {
            job.state = .completed
            try await store.finishJob(job, owner: leaseOwner, output: Data(output.utf8), failures: Data(failures.utf8), now: now)
            return false
        }
        try await store.saveJobProgress(
            job, owner: leaseOwner, output: Data(output.utf8), failures: Data(failures.utf8), now: now,
            leaseUntil: now.addingTimeInterval(configuration.lease.seconds)
        )
        if isInterrupted || isStopped {
            try await store.releaseJob(id: job.id, owner: leaseOwner)
            return false
        }
        return true
    }
}

extension Logger {
    /// A copy with one more metadata value.
    fileprivate func with(_ key: String, _ value: String) -> Logger {
        var logger = self
        logger[metadataKey: key] = "\(value)"
        return logger
    }
}
