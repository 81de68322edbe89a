public import Foundation
public import HeraldCore

/// A hub's export and import jobs, and their files: the inputs uploaded for imports and the
/// output and failures each job writes, kept in the store so that they survive a restart and
/// every node sharing the store serves them.
///
/// A job runs on one worker at a time, under a lease as notifications do
/// (``NotificationStore/claimNotification(now:lease:owner:)``): a worker that dies leaves the
/// job to be claimed again once its lease has run out, and the next worker resumes after the
/// last lines saved (``HubJob/processed``).
///
/// Files are kept in chunks, never as one growing value: a job's output and failures are the
/// chunks its pages appended, in order (one row each, written with the page's progress), and
/// an uploaded file is the chunks of one upload, which becomes the file of its name only when
/// it is complete (``commitJobFile(name:upload:now:)``).
public protocol JobStore: Sendable {
    /// Saves a new job unless that would break `quota` (counted over the jobs and files kept
    /// now, in the same transaction as the insert, so that two submissions at once cannot both
    /// take the last place): `nil` when it was saved, the quota it would break otherwise (and
    /// nothing is saved). Throws ``HeraldError/conflict(_:)`` if the id is taken.
    func createJob(_ job: HubJob, within quota: JobQuota) async throws -> JobQuota.Refusal?

    func job(id: String) async throws -> HubJob?

    /// The most recent jobs, newest first, at most `limit`.
    func listJobs(limit: Int) async throws -> [HubJob]

    /// Claims the oldest job that is started, or running with no lease or an expired one: sets
    /// it running with a lease held by `owner` until `now + lease`. `nil` if there is none.
    func claimJob(now: Date, lease: Duration, owner: String) async throws -> HubJob?

    /// Records progress while `owner` holds the job's lease: `processed`, `total`, `succeeded`
    /// and `failed` from `job`, `updatedAt = now`, the lease to `leaseUntil`, and appends
    /// `output` and `failures` to the job's two files as a chunk each (none when empty), in one
    /// transaction. Throws ``StoreError/Code/leaseLost`` when the lease was lost (nothing is
    /// written) and ``HeraldError/notFound(_:)`` for an unknown job.
    func saveJobProgress(_ job: HubJob, owner: String, output: Data, failures: Data, now: Date, leaseUntil: Date) async throws

    /// Records the end of a job as ``saveJobProgress(_:owner:output:failures:now:leaseUntil:)``
    /// does, with its final `state` and `failure`, and ends the lease.
    func finishJob(_ job: HubJob, owner: String, output: Data, failures: Data, now: Date) async throws

    /// Hands a running job back (graceful shutdown): its lease ends, so that any worker may
    /// claim it at once and resume it. Does nothing unless `owner` holds the lease.
    func releaseJob(id: String, owner: String) async throws

    /// The chunks of a job's output (`failures == false`) or failures file, in order; `nil`
    /// for an unknown job.
    func jobOutputChunks(id: String, failures: Bool) async throws -> [JobChunk]?

    /// One chunk of a job's output or failures; `nil` if there is none (the job was deleted).
    func jobOutputChunk(id: String, failures: Bool, sequence: Int) async throws -> Data?

    /// Stores a chunk of an upload in progress: `upload` is a new random id for each upload,
    /// `sequence` counts its chunks from 0 (an empty file has none). Nothing is readable under a file's name until
    /// ``commitJobFile(name:upload:now:)``.
    func appendJobFileChunk(upload: String, sequence: Int, bytes: Data, now: Date) async throws

    /// Makes a complete upload the job file `name`, replacing the file of that name (whose
    /// chunks are deleted) in one transaction: a reader finds the old file or the new one.
    func commitJobFile(name: String, upload: String, now: Date) async throws

    /// Deletes the chunks of an upload that is not committed (refused, or broken off).
    func discardJobFileUpload(_ upload: String) async throws

    /// The upload that holds the job file `name`, and its chunks in order; `nil` if there is
    /// no file of that name.
    func jobFileChunks(name: String) async throws -> JobFileChunks?

    /// One chunk of an upload; `nil` if there is none (the file was replaced or deleted).
    func jobFileChunk(upload: String, sequence: Int) async throws -> Data?

    /// How many jobs the hub keeps, how many wait or run, and the bytes of their outputs and of
    /// the job files (uploads in progress included).
    func jobUsage() async throws -> JobUsage

    /// The retention sweep: deletes the jobs finished (completed or failed) before
    /// `finishedBefore`, with their outputs; the job files uploaded before `filesBefore`; and
    /// the chunks of uploads never committed that were stored before `uploadsBefore`. A job
    /// file an import that waits or runs reads (or the export whose output it reads) is kept.
    /// Safe to run on several nodes at once: each row is deleted once.
    func purgeJobs(finishedBefore: Date, filesBefore: Date, uploadsBefore: Date) async throws -> JobPurge
}

extension JobStore {
    /// Saves a new job with no quota. Throws ``HeraldError/conflict(_:)`` if the id is taken.
    public func createJob(_ job: HubJob) async throws {
        _ = try await createJob(job, within: .unlimited)
    }

    /// The output (`failures == false`) or failures file of a job, whole; `nil` for an
    /// unknown job.
    public func jobOutput(id: String, failures: Bool) async throws -> Data? {
        guard let chunks = try await jobOutputChunks(id: id, failures: failures) else { return nil }
        var data = Data(capacity: chunks.reduce(0) { $0 + $1.size })
        for chunk in chunks {
            guard let bytes = try await jobOutputChunk(id: id, failures: failures, sequence: chunk.sequence) else { return nil }
            data.append(bytes)
        }
        return data
    }

    /// Saves (or replaces) a job file at once: as an upload of chunks of at most
    /// ``JobChunk/uploadSize`` bytes, committed.
    public func saveJobFile(name: String, bytes: Data, now: Date) async throws {
        let upload = JobChunk.makeUploadID()
        var sequence = 0
        var start = bytes.startIndex
        while start < bytes.endIndex {
            let end = bytes.index(start, offsetBy: min(JobChunk.uploadSize, bytes.endIndex - start))
            try await appendJobFileChunk(upload: upload, sequence: sequence, bytes: bytes[start..<end], now: now)
            sequence += 1
            start = end
        }
        try await commitJobFile(name: name, upload: upload, now: now)
    }

    /// An uploaded job file, whole; `nil` if there is none of that name.
    public func jobFile(name: String) async throws -> Data? {
        guard let file = try await jobFileChunks(name: name) else { return nil }
        var data = Data(capacity: file.size)
        for chunk in file.chunks {
            guard let bytes = try await jobFileChunk(upload: file.upload, sequence: chunk.sequence) else { return nil }
            data.append(bytes)
        }
        return data
    }
}

/// One stored chunk of a job file: its place and its size.
public struct JobChunk: Sendable, Hashable {
    public var sequence: Int
    public var size: Int

    public init(sequence: Int, size: Int) {
        self.sequence = sequence
        self.size = size
    }

    /// The bytes of an upload kept together in one chunk (the last one may be smaller).
    public static let uploadSize = 1 << 20

    /// A new random upload id.
    public static func makeUploadID() -> String { HubJob.makeID() }
}

/// Where an uploaded job file is: the upload that holds it and its chunks, in order.
public struct JobFileChunks: Sendable, Hashable {
    public var upload: String
    public var chunks: [JobChunk]

    public init(upload: String, chunks: [JobChunk]) {
        self.upload = upload
        self.chunks = chunks
    }

    public var size: Int { chunks.reduce(0) { $0 + $1.size } }
}

/// What a hub's jobs take up in the store now.
public struct JobUsage: Sendable, Hashable {
    /// Jobs kept, whatever their state.
    public var jobs: Int
    /// Jobs started or running.
    public var activeJobs: Int
    /// The bytes of every job's output and failures and of every job file (uploads in progress too).
    public var bytes: Int

    public init(jobs: Int, activeJobs: Int, bytes: Int) {
        self.jobs = jobs
        self.activeJobs = activeJobs
        self.bytes = bytes
    }
}

/// What a retention sweep deleted.
public struct JobPurge: Sendable, Hashable {
    public var jobs: Int
    public var files: Int

    public init(jobs: Int, files: Int) {
        self.jobs = jobs
        self.files = files
    }
}

/// The most a hub's jobs may take: jobs kept, jobs waiting or running at once, and bytes of
/// job files and outputs.
public struct JobQuota: Sendable, Hashable {
    /// Jobs kept, finished ones included (they go with the retention sweep).
    public var maxJobs: Int
    /// Jobs started or running at once.
    public var maxActiveJobs: Int
    /// Bytes of every job's output and failures and of every job file.
    public var maxBytes: Int

    public init(maxJobs: Int = 100, maxActiveJobs: Int = 2, maxBytes: Int = 1 << 30) {
        self.maxJobs = maxJobs
        self.maxActiveJobs = maxActiveJobs
        self.maxBytes = maxBytes
    }

    /// No limit at all.
    public static let unlimited = JobQuota(maxJobs: .max, maxActiveJobs: .max, maxBytes: .max)

    /// Which quota a new job would break, and its use now.
    public struct Refusal: Sendable, Hashable {
        public var limit: Limit
        /// The use the limit was measured against: jobs, active jobs or bytes.
        public var used: Int

        public init(limit: Limit, used: Int) {
            self.limit = limit
            self.used = used
        }
    }

    /// One of the quotas (an open set).
    public struct Limit: Sendable, Hashable, CustomStringConvertible {
        public let description: String

        public static let jobs = Limit(description: "jobs")
        public static let activeJobs = Limit(description: "activeJobs")
        public static let bytes = Limit(description: "bytes")
    }

    /// The quota `usage` leaves no room under for one more job, if any: too many active jobs
    /// first (a wait fixes it), then too many jobs kept, then no byte left for its output.
    public func refusal(for usage: JobUsage) -> Refusal? {
        if usage.activeJobs >= maxActiveJobs { return Refusal(limit: .activeJobs, used: usage.activeJobs) }
        if usage.jobs >= maxJobs { return Refusal(limit: .jobs, used: usage.jobs) }
        if usage.bytes >= maxBytes { return Refusal(limit: .bytes, used: usage.bytes) }
        return nil
    }
}
