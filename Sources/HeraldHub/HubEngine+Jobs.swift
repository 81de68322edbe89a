public import Foundation
public import HeraldCore
import HeraldHubWire
import HeraldStore
import Logging

/// Export and import jobs (the hub API's `POST /{hub}/jobs`): kept in the store, run in the
/// background by the hub's ``DeliveryWorker`` under a lease, a page of lines at a time, through
/// the same line-by-line code as the command line (``importRegistration(line:number:mode:)``).
extension HubEngine {
    /// Lines an import applies, or registrations an export writes, between two saves of progress.
    static let jobPageSize = 500
    static let jobKey = "\u{0}jobs"
    /// The largest file a job reads or a client uploads.
    public static let maxJobFileBytes = 64 * 1024 * 1024

    /// Saves a new job and wakes this node's job worker.
    ///
    /// - Parameter inputFile: for an import, the job file it reads (``jobFile(named:)``).
    public func submitJob(kind: HubJob.Kind, inputFile: String?, now: Date = Date()) async throws -> HubJob {
        let job = HubJob(kind: kind, inputFile: inputFile, createdAt: now, updatedAt: now)
        try await store.createJob(job)
        signal.ring(Self.jobKey, remember: true)
        return try await store.job(id: job.id) ?? job
    }

    public func job(id: String) async throws -> HubJob? {
        try await store.job(id: id)
    }

    /// The newest jobs, newest first.
    public func jobs(limit: Int) async throws -> [HubJob] {
        try await store.listJobs(limit: limit)
    }

    /// Saves (or replaces) an uploaded job file, such as an import's input.
    public func saveJobFile(name: String, bytes: Data, now: Date = Date()) async throws {
        guard HubJob.isValidFileName(name) else {
            throw HeraldError.badRequest("a job file's name is 1–128 letters, digits, '-', '_' and '.', not starting with '.'; '\(name.prefix(40))' is not")
        }
        try await store.saveJobFile(name: name, bytes: bytes, now: now)
    }

    /// A job file: an uploaded one, or a job's output (`<job id>/Output.txt`) or failures
    /// (`<job id>/Failed.txt`); `nil` if there is none of that name.
    public func jobFile(named name: String) async throws -> Data? {
        let parts = name.split(separator: "/", omittingEmptySubsequences: false)
        if parts.count == 2 {
            switch parts[1] {
            case HubJob.outputFile[...]: return try await store.jobOutput(id: String(parts[0]), failures: false)
            case HubJob.failuresFile[...]: return try await store.jobOutput(id: String(parts[0]), failures: true)
            default: return nil
            }
        }
        guard HubJob.isValidFileName(name) else { return nil }
        return try await store.jobFile(name: name)
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
        } catch let error as HeraldError where error.code == .notFound || error.code == .badRequest {
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
