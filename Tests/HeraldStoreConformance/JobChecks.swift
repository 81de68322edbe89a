import Foundation
import HeraldCore
import HeraldStore
import HeraldTestSupport
import Testing

/// Export and import jobs: their state, their lease, their files.
enum JobChecks {
    static let all: [StoreCheck] = [
        check("aJobIsSavedClaimedAndFinishedWithItsFiles") { store, clock in
            let job = HubJob(kind: .importUpsertRegistrations, inputFile: "in.txt", createdAt: clock.now, updatedAt: clock.now)
            try await store.createJob(job)
            await expectHeraldError(.conflict) { try await store.createJob(job) }
            let saved = try #require(try await store.job(id: job.id))
            #expect(saved.state == .started && saved.kind == .importUpsertRegistrations && saved.inputFile == "in.txt")
            #expect(saved.createdAt == clock.now.storeRoundedForTests)
            #expect(try await store.jobOutput(id: job.id, failures: false) == Data())

            var claimed = try #require(try await store.claimJob(now: clock.now, lease: .seconds(60), owner: "w1"))
            #expect(claimed.id == job.id && claimed.state == .running)
            #expect(try await store.claimJob(now: clock.now, lease: .seconds(60), owner: "w2") == nil, "one worker at a time")

            claimed.processed = 2
            claimed.total = 3
            claimed.succeeded = 1
            claimed.failed = 1
            claimed.cursor = "r2"
            try await store.saveJobProgress(
                claimed, owner: "w1", output: Data("line 1: created a\n".utf8), failures: Data("line 2: bad\n".utf8),
                now: clock.now, leaseUntil: clock.now.addingTimeInterval(60)
            )
            await expectCodedError(.leaseLost, of: StoreError.self) {
                try await store.saveJobProgress(claimed, owner: "w2", output: Data("x".utf8), failures: Data(), now: clock.now, leaseUntil: clock.now)
            }
            claimed.processed = 3
            claimed.succeeded = 2
            claimed.state = .completed
            try await store.finishJob(claimed, owner: "w1", output: Data("line 3: updated b\n".utf8), failures: Data(), now: clock.now)

            let finished = try #require(try await store.job(id: job.id))
            #expect(finished.state == .completed && finished.processed == 3 && finished.total == 3)
            #expect(finished.succeeded == 2 && finished.failed == 1 && finished.cursor == "r2")
            #expect(finished.progress == 100)
            #expect(try await store.jobOutput(id: job.id, failures: false) == Data("line 1: created a\nline 3: updated b\n".utf8))
            #expect(try await store.jobOutput(id: job.id, failures: true) == Data("line 2: bad\n".utf8))
            #expect(try await store.jobOutput(id: "nosuchjob", failures: false) == nil)
            #expect(try await store.claimJob(now: clock.now, lease: .seconds(60), owner: "w2") == nil, "a finished job is not claimed")
            await expectHeraldError(.notFound) {
                try await store.finishJob(HubJob(id: "nosuchjob", kind: .exportRegistrations), owner: "w1", output: Data(), failures: Data(), now: clock.now)
            }
        },

        check("aJobWhoseWorkerDiedIsResumedAfterItsLease") { store, clock in
            let job = HubJob(kind: .exportRegistrations, createdAt: clock.now, updatedAt: clock.now)
            try await store.createJob(job)
            var claimed = try #require(try await store.claimJob(now: clock.now, lease: .seconds(60), owner: "w1"))
            claimed.processed = 500
            claimed.cursor = "r500"
            try await store.saveJobProgress(
                claimed, owner: "w1", output: Data("a\n".utf8), failures: Data(), now: clock.now, leaseUntil: clock.now.addingTimeInterval(60))

            clock.advance(by: .seconds(30))
            #expect(try await store.claimJob(now: clock.now, lease: .seconds(60), owner: "w2") == nil, "the lease still runs")
            clock.advance(by: .seconds(31))
            let resumed = try #require(try await store.claimJob(now: clock.now, lease: .seconds(60), owner: "w2"))
            #expect(resumed.processed == 500 && resumed.cursor == "r500", "it goes on from the last page saved")
            await expectCodedError(.leaseLost, of: StoreError.self) {
                try await store.saveJobProgress(claimed, owner: "w1", output: Data("b\n".utf8), failures: Data(), now: clock.now, leaseUntil: clock.now)
            }
            #expect(try await store.jobOutput(id: job.id, failures: false) == Data("a\n".utf8), "the old worker wrote nothing more")

            // Handed back on graceful shutdown: claimable at once.
            try await store.releaseJob(id: job.id, owner: "w2")
            #expect(try await store.claimJob(now: clock.now, lease: .seconds(60), owner: "w3")?.id == job.id)
        },

        check("jobsAreListedNewestFirstAndFilesReplaced") { store, clock in
            var ids: [String] = []
            for _ in 0..<3 {
                let job = HubJob(kind: .exportRegistrations, createdAt: clock.now, updatedAt: clock.now)
                try await store.createJob(job)
                ids.append(job.id)
                clock.advance(by: .seconds(1))
            }
            #expect(try await store.listJobs(limit: 10).map(\.id) == ids.reversed())
            #expect(try await store.listJobs(limit: 2).map(\.id) == Array(ids.reversed().prefix(2)))

            #expect(try await store.jobFile(name: "in.txt") == nil)
            try await store.saveJobFile(name: "in.txt", bytes: Data([0, 1, 2, 255]), now: clock.now)
            #expect(try await store.jobFile(name: "in.txt") == Data([0, 1, 2, 255]))
            try await store.saveJobFile(name: "in.txt", bytes: Data("again".utf8), now: clock.now)
            #expect(try await store.jobFile(name: "in.txt") == Data("again".utf8))
        },

        check("outputsAreAppendedAsChunksInOrder") { store, clock in
            let job = HubJob(kind: .exportRegistrations, createdAt: clock.now, updatedAt: clock.now)
            try await store.createJob(job)
            #expect(try await store.jobOutputChunks(id: job.id, failures: false) == [])
            #expect(try await store.jobOutputChunks(id: "nosuchjob", failures: false) == nil)
            var claimed = try #require(try await store.claimJob(now: clock.now, lease: .seconds(60), owner: "w1"))
            for page in 0..<3 {
                claimed.processed += 1
                try await store.saveJobProgress(
                    claimed, owner: "w1", output: Data("page \(page)\n".utf8), failures: page == 1 ? Data("bad\n".utf8) : Data(),
                    now: clock.now, leaseUntil: clock.now.addingTimeInterval(60)
                )
            }
            claimed.state = .completed
            try await store.finishJob(claimed, owner: "w1", output: Data(), failures: Data(), now: clock.now)
            // One chunk a page that wrote something, numbered in order; an empty page adds none.
            #expect(try await store.jobOutputChunks(id: job.id, failures: false) == (0..<3).map { JobChunk(sequence: $0, size: 7) })
            #expect(try await store.jobOutputChunks(id: job.id, failures: true) == [JobChunk(sequence: 0, size: 4)])
            #expect(try await store.jobOutputChunk(id: job.id, failures: false, sequence: 1) == Data("page 1\n".utf8))
            #expect(try await store.jobOutputChunk(id: job.id, failures: false, sequence: 3) == nil)
            #expect(try await store.jobOutput(id: job.id, failures: false) == Data("page 0\npage 1\npage 2\n".utf8))
            #expect(try await store.jobUsage() == JobUsage(jobs: 1, activeJobs: 0, bytes: 25))
        },

        check("anUploadIsAFileOnlyOnceCommittedAndReplacesTheOldOneWhole") { store, clock in
            try await store.saveJobFile(name: "in.txt", bytes: Data("old".utf8), now: clock.now)
            let old = try #require(try await store.jobFileChunks(name: "in.txt"))
            #expect(old.size == 3 && old.chunks.count == 1)

            let upload = JobChunk.makeUploadID()
            try await store.appendJobFileChunk(upload: upload, sequence: 0, bytes: Data("new ".utf8), now: clock.now)
            try await store.appendJobFileChunk(upload: upload, sequence: 1, bytes: Data("file".utf8), now: clock.now)
            #expect(try await store.jobFile(name: "in.txt") == Data("old".utf8), "an upload in progress is not the file yet")
            #expect(try await store.jobUsage().bytes == 11, "uploads in progress count")
            try await store.commitJobFile(name: "in.txt", upload: upload, now: clock.now)
            #expect(try await store.jobFile(name: "in.txt") == Data("new file".utf8))
            #expect(
                try await store.jobFileChunks(name: "in.txt")
                    == JobFileChunks(upload: upload, chunks: [JobChunk(sequence: 0, size: 4), JobChunk(sequence: 1, size: 4)]))
            #expect(try await store.jobFileChunk(upload: old.upload, sequence: 0) == nil, "the replaced file's chunks are gone")
            #expect(try await store.jobUsage().bytes == 8)

            // A refused upload leaves nothing; discarding a committed one does nothing.
            let refused = JobChunk.makeUploadID()
            try await store.appendJobFileChunk(upload: refused, sequence: 0, bytes: Data("xyz".utf8), now: clock.now)
            try await store.discardJobFileUpload(refused)
            try await store.discardJobFileUpload(upload)
            #expect(try await store.jobFileChunk(upload: refused, sequence: 0) == nil)
            #expect(try await store.jobFile(name: "in.txt") == Data("new file".utf8))
            #expect(try await store.jobUsage().bytes == 8)

            // An empty file has no chunk.
            try await store.saveJobFile(name: "empty.txt", bytes: Data(), now: clock.now)
            #expect(try await store.jobFile(name: "empty.txt") == Data())
            #expect(try await store.jobFileChunks(name: "missing.txt") == nil)
        },

        check("aJobOverQuotaIsRefusedAndNothingIsSaved") { store, clock in
            let quota = JobQuota(maxJobs: 3, maxActiveJobs: 2, maxBytes: 10)
            let make = { HubJob(kind: .exportRegistrations, createdAt: clock.now, updatedAt: clock.now) }
            #expect(try await store.createJob(make(), within: quota) == nil)
            #expect(try await store.createJob(make(), within: quota) == nil)
            let third = make()
            #expect(try await store.createJob(third, within: quota) == JobQuota.Refusal(limit: .activeJobs, used: 2))
            #expect(try await store.job(id: third.id) == nil)

            // One finishes: a third may wait; then three are kept, the most.
            var claimed = try #require(try await store.claimJob(now: clock.now, lease: .seconds(60), owner: "w1"))
            claimed.state = .completed
            try await store.finishJob(claimed, owner: "w1", output: Data("12345".utf8), failures: Data(), now: clock.now)
            #expect(try await store.createJob(third, within: quota) == nil)
            var last = try #require(try await store.claimJob(now: clock.now, lease: .seconds(60), owner: "w1"))
            last.state = .completed
            try await store.finishJob(last, owner: "w1", output: Data(), failures: Data(), now: clock.now)
            #expect(try await store.createJob(make(), within: quota) == JobQuota.Refusal(limit: .jobs, used: 3))

            // Bytes: no room left for any output.
            let roomy = JobQuota(maxJobs: 10, maxActiveJobs: 10, maxBytes: 10)
            try await store.saveJobFile(name: "big.txt", bytes: Data("12345".utf8), now: clock.now)
            #expect(try await store.createJob(make(), within: roomy) == JobQuota.Refusal(limit: .bytes, used: 10))
            #expect(try await store.jobUsage() == JobUsage(jobs: 3, activeJobs: 1, bytes: 10))
        },

        check("theRetentionSweepDeletesOldFinishedJobsFilesAndAbandonedUploads") { store, clock in
            let start = clock.now
            // Old: a finished export, a file, an import that still waits on another old file
            // and on nothing else, and an abandoned upload.
            let oldExport = HubJob(kind: .exportRegistrations, createdAt: clock.now, updatedAt: clock.now)
            try await store.createJob(oldExport)
            var claimed = try #require(try await store.claimJob(now: clock.now, lease: .seconds(60), owner: "w1"))
            claimed.state = .completed
            try await store.finishJob(claimed, owner: "w1", output: Data("exported\n".utf8), failures: Data(), now: clock.now)
            let readsExport = HubJob(kind: .exportRegistrations, createdAt: clock.now, updatedAt: clock.now)
            try await store.createJob(readsExport)
            var second = try #require(try await store.claimJob(now: clock.now, lease: .seconds(60), owner: "w1"))
            second.state = .completed
            try await store.finishJob(second, owner: "w1", output: Data("kept\n".utf8), failures: Data(), now: clock.now)
            try await store.saveJobFile(name: "old.txt", bytes: Data("old".utf8), now: clock.now)
            try await store.saveJobFile(name: "wanted.txt", bytes: Data("wanted".utf8), now: clock.now)
            let waiting = HubJob(kind: .importUpsertRegistrations, inputFile: "wanted.txt", createdAt: clock.now, updatedAt: clock.now)
            try await store.createJob(waiting)
            let waitingOnOutput = HubJob(
                kind: .importDeleteRegistrations, inputFile: HubJob.outputFileName(jobID: readsExport.id), createdAt: clock.now, updatedAt: clock.now
            )
            try await store.createJob(waitingOnOutput)
            let abandoned = JobChunk.makeUploadID()
            try await store.appendJobFileChunk(upload: abandoned, sequence: 0, bytes: Data("half".utf8), now: clock.now)

            clock.advance(by: .seconds(3600))
            // Recent: a finished job, a file, an upload in progress.
            let recent = HubJob(kind: .exportRegistrations, createdAt: clock.now, updatedAt: clock.now)
            try await store.createJob(recent)
            try await store.saveJobFile(name: "new.txt", bytes: Data("new".utf8), now: clock.now)
            let inProgress = JobChunk.makeUploadID()
            try await store.appendJobFileChunk(upload: inProgress, sequence: 0, bytes: Data("going".utf8), now: clock.now)

            let cutoff = start.addingTimeInterval(60)
            // Two sweeps at once (two nodes): each row is deleted once.
            async let firstSweep = store.purgeJobs(finishedBefore: cutoff, filesBefore: cutoff, uploadsBefore: cutoff)
            async let secondSweep = store.purgeJobs(finishedBefore: cutoff, filesBefore: cutoff, uploadsBefore: cutoff)
            let (one, other) = try await (firstSweep, secondSweep)
            #expect(one.jobs + other.jobs == 1 && one.files + other.files == 1, "\(one) \(other)")
            #expect(try await store.job(id: oldExport.id) == nil)
            #expect(try await store.jobOutputChunk(id: oldExport.id, failures: false, sequence: 0) == nil, "its output went with it")
            #expect(try await store.job(id: readsExport.id) != nil, "an import that waits reads its output")
            #expect(try await store.job(id: waiting.id) != nil)
            #expect(try await store.job(id: recent.id) != nil)
            #expect(try await store.jobFile(name: "old.txt") == nil)
            #expect(try await store.jobFile(name: "wanted.txt") == Data("wanted".utf8), "an import that waits reads it")
            #expect(try await store.jobFile(name: "new.txt") == Data("new".utf8))
            #expect(try await store.jobFileChunk(upload: abandoned, sequence: 0) == nil)
            #expect(try await store.jobFileChunk(upload: inProgress, sequence: 0) == Data("going".utf8))
            // Again (another node at the same time, say): nothing more.
            #expect(try await store.purgeJobs(finishedBefore: cutoff, filesBefore: cutoff, uploadsBefore: cutoff) == JobPurge(jobs: 0, files: 0))
            #expect(try await store.jobUsage().bytes == Data("kept\nwantednewgoing".utf8).count)
        },
    ]

    private static func check(_ name: String, _ body: @escaping StoreCheck.Body) -> StoreCheck {
        StoreCheck(area: "export and import jobs", name: name, body: body)
    }
}
