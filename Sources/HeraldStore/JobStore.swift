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
public protocol JobStore: Sendable {
    /// Saves a new job. Throws ``HeraldError/conflict(_:)`` if the id is taken.
    func createJob(_ job: HubJob) async throws

    func job(id: String) async throws -> HubJob?

    /// The most recent jobs, newest first, at most `limit`.
    func listJobs(limit: Int) async throws -> [HubJob]

    /// Claims the oldest job that is started, or running with no lease or an expired one: sets
    /// it running with a lease held by `owner` until `now + lease`. `nil` if there is none.
    func claimJob(now: Date, lease: Duration, owner: String) async throws -> HubJob?

    /// Records progress while `owner` holds the job's lease: `processed`, `total`, `succeeded`
    /// and `failed` from `job`, `updatedAt = now`, the lease to `leaseUntil`, and appends
    /// `output` and `failures` to the job's two files, in one transaction. Throws
    /// ``HeraldError/conflict(_:)`` when the lease was lost (nothing is written) and
    /// ``HeraldError/notFound(_:)`` for an unknown job.
    func saveJobProgress(_ job: HubJob, owner: String, output: Data, failures: Data, now: Date, leaseUntil: Date) async throws

    /// Records the end of a job as ``saveJobProgress(_:owner:output:failures:now:leaseUntil:)``
    /// does, with its final `state` and `failure`, and ends the lease.
    func finishJob(_ job: HubJob, owner: String, output: Data, failures: Data, now: Date) async throws

    /// Hands a running job back (graceful shutdown): its lease ends, so that any worker may
    /// claim it at once and resume it. Does nothing unless `owner` holds the lease.
    func releaseJob(id: String, owner: String) async throws

    /// The output (`failures == false`) or failures file of a job; `nil` for an unknown job.
    func jobOutput(id: String, failures: Bool) async throws -> Data?

    /// Saves (or replaces) an uploaded job file, such as the input of an import.
    func saveJobFile(name: String, bytes: Data, now: Date) async throws

    /// An uploaded job file; `nil` if there is none of that name.
    func jobFile(name: String) async throws -> Data?
}
