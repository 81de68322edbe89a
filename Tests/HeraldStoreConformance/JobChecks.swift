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
            await expectHeraldError(.conflict) {
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
            try await store.saveJobProgress(claimed, owner: "w1", output: Data("a\n".utf8), failures: Data(), now: clock.now, leaseUntil: clock.now.addingTimeInterval(60))

            clock.advance(by: .seconds(30))
            #expect(try await store.claimJob(now: clock.now, lease: .seconds(60), owner: "w2") == nil, "the lease still runs")
            clock.advance(by: .seconds(31))
            let resumed = try #require(try await store.claimJob(now: clock.now, lease: .seconds(60), owner: "w2"))
            #expect(resumed.processed == 500 && resumed.cursor == "r500", "it goes on from the last page saved")
            await expectHeraldError(.conflict) {
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
    ]

    private static func check(_ name: String, _ body: @escaping StoreCheck.Body) -> StoreCheck {
        StoreCheck(area: "export and import jobs", name: name, body: body)
    }
}
