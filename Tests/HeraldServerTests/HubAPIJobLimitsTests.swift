import Foundation
import HeraldCore
import HeraldHub
import HeraldServer
import HeraldStore
import Testing

/// What keeps a hub's jobs from taking the server over, on the wire: outputs kept and served
/// in chunks, uploads streamed into the store under a size limit, quotas per hub, and the
/// retention sweep.
@Suite struct HubAPIJobLimitsTests {
    static let hub = HubTestServer.hubName
    static let version = HubTestServer.apiVersion

    /// An import file of `count` Apple registrations, one a line, each with a device token of its own.
    static func importFile(count: Int, tag: String = "bulk") -> Data {
        let lines = (0..<count).map { index in
            Atom.open("AppleRegistrationDescription")
                + "<Tags>\(tag)</Tags><DeviceToken>\(String(repeating: "0", count: 56))\(String(format: "%08x", index))</DeviceToken></AppleRegistrationDescription>"
        }
        return Data((lines.joined(separator: "\n") + "\n").utf8)
    }

    static func submit(_ server: HubTestServer, _ type: String, importFile: String? = nil) async throws -> WireResponse {
        try await server.wire(
            .POST, "/\(hub)/jobs?\(version)", headers: [("Content-Type", "application/atom+xml;type=entry;charset=utf-8")],
            body: HubAPIJobTests.jobEntry(type, importFile: importFile)
        )
    }

    @Test func aJobsOutputIsKeptAsOneChunkAPageAndServedWhole() async throws {
        try await HubTestServer.withServer { server in
            // 1,001 lines: three pages (500, 500, 1).
            let upload = try await server.wire(.PUT, "/\(Self.hub)/jobs/files/bulk.txt?\(Self.version)", body: Self.importFile(count: 1001))
            try #require(upload.status == 201, "\(upload.text)")
            let location: String = try #require(upload.header("Location"))
            let imported = try await HubAPIJobTests.runJob(server, "ImportCreateRegistrations", importFile: location)
            #expect(HubAPIJobTests.outputProperties(imported)["Succeeded"] == "1001")

            let export = try await HubAPIJobTests.runJob(server, "ExportRegistrations")
            #expect(export.value("Status") == "Completed")
            let id = try #require(export.value("JobId"))
            let store = try await server.engine().store
            let chunks = try #require(try await store.jobOutputChunks(id: id, failures: false))
            #expect(chunks.map(\.sequence) == [0, 1, 2], "one chunk a saved page, none for the empty last page")

            let download = try await server.wire(.GET, "/\(Self.hub)/jobs/\(id)/Output.txt?\(Self.version)")
            #expect(download.status == 200)
            #expect(download.header("Content-Length") == String(chunks.reduce(0) { $0 + $1.size }))
            let lines = download.text.split(separator: "\n")
            #expect(lines.count == 1001)
            #expect(Set(lines).count == 1001, "every registration once, in the order of the pages")
            #expect(try await store.jobOutput(id: id, failures: false) == download.body)
        }
    }

    @Test func anUploadIsStreamedIntoTheStoreAndRefusedWholePastItsLimit() async throws {
        try await HubTestServer.withServer(configureHubs: { $0.maxJobFileBytes = 3 * JobChunk.uploadSize }) { server in
            let path = "/\(Self.hub)/jobs/files/in.txt?\(Self.version)"
            // Streamed (no Content-Length), 2.5 MiB: three chunks in the store.
            let body = Data((0..<(5 * JobChunk.uploadSize / 2)).map { UInt8(truncatingIfNeeded: $0 % 251) })
            let accepted = try await server.wire(.PUT, path, body: body, streamed: true)
            #expect(accepted.status == 201, "\(accepted.text)")
            let store = try await server.engine().store
            let stored = try #require(try await store.jobFileChunks(name: "in.txt"))
            #expect(stored.chunks.map(\.size) == [JobChunk.uploadSize, JobChunk.uploadSize, JobChunk.uploadSize / 2])
            let download = try await server.wire(.GET, path)
            #expect(download.status == 200 && download.body == body)

            // Past the limit, streamed: 413 once the limit is crossed; the old file stays whole,
            // and nothing of the refused upload is left.
            let tooLarge = Data(repeating: 0x41, count: 3 * JobChunk.uploadSize + 1)
            #expect(expectHubError(try await server.wire(.PUT, path, body: tooLarge, streamed: true), 413).contains("at most 3145728 bytes"))
            // The same with a Content-Length: refused before the body is read.
            expectHubError(try await server.wire(.PUT, path, body: tooLarge), 413)
            #expect(try await server.wire(.GET, path).body == body)
            #expect(try await store.jobUsage().bytes == body.count)
        }
    }

    @Test func quotasRefuseJobsAndFilesAndChangeNothing() async throws {
        try await HubTestServer.withServer(configureHubs: {
            $0.jobQuota = JobQuota(maxJobs: 3, maxActiveJobs: 1, maxBytes: 64 * 1024)
        }) { server in
            let store = try await server.engine().store
            // A job held by another worker: the one place for a waiting or running job is taken.
            // (Should this node's worker take it first, it runs it at once: try again once it
            // is idle, which it is for 2 seconds after it found no more work.)
            var held: HubJob?
            for _ in 0..<3 where held == nil {
                try await store.createJob(HubJob(kind: .exportRegistrations))
                held = try await store.claimJob(now: Date(), lease: .seconds(3600), owner: "elsewhere")
                if held == nil { try await Task.sleep(for: .milliseconds(300)) }
            }
            var claimed = try #require(held)
            let before = try await store.listJobs(limit: 10)
            let busy = try await Self.submit(server, "ExportRegistrations")
            #expect(expectHubError(busy, 429).contains("quota of jobs waiting or running at once exceeded: the hub runs at most 1"))
            // No job was added (this node's worker may still be finishing one it took above, so
            // the jobs' states may move on: their ids are what must not change).
            #expect(try await store.listJobs(limit: 10).map(\.id) == before.map(\.id), "nothing was saved")

            claimed.state = .completed
            try await store.finishJob(claimed, owner: "elsewhere", output: Data(), failures: Data(), now: Date())
            while try await store.jobUsage().jobs < 3 {
                #expect(try await HubAPIJobTests.runJob(server, "ExportRegistrations").value("Status") == "Completed")
            }
            let full = expectHubError(try await Self.submit(server, "ExportRegistrations"), 403)
            #expect(
                full.contains("quota of jobs kept exceeded: the hub keeps at most 3 jobs, and has 3; finished jobs are deleted 7 days after they end"),
                "\(full)")
            #expect(try await store.jobUsage().jobs == 3)

            // Bytes: an upload that does not fit is refused and leaves nothing.
            let small = try await server.wire(.PUT, "/\(Self.hub)/jobs/files/small.txt?\(Self.version)", body: Data(repeating: 0x61, count: 60 * 1024))
            #expect(small.status == 201)
            let big = try await server.wire(.PUT, "/\(Self.hub)/jobs/files/big.txt?\(Self.version)", body: Data(repeating: 0x62, count: 8 * 1024))
            #expect(expectHubError(big, 403).contains("quota of job storage exceeded"))
            expectHubError(try await server.wire(.GET, "/\(Self.hub)/jobs/files/big.txt?\(Self.version)"), 404)
            #expect(try await store.jobUsage().bytes == 60 * 1024)
            // Replacing a file counts the new one instead of the old.
            let replaced = try await server.wire(.PUT, "/\(Self.hub)/jobs/files/small.txt?\(Self.version)", body: Data(repeating: 0x63, count: 62 * 1024))
            #expect(replaced.status == 201, "\(replaced.text)")
        }
    }

    @Test func theSweepDeletesFinishedJobsAndFilesAfterTheirRetention() async throws {
        try await HubTestServer.withServer(configureHubs: {
            $0.jobRetention = .seconds(2)
            $0.jobSweepInterval = .milliseconds(200)
        }) { server in
            let upload = try await server.wire(.PUT, "/\(Self.hub)/jobs/files/in.txt?\(Self.version)", body: Self.importFile(count: 3))
            #expect(upload.status == 201)
            let export = try await HubAPIJobTests.runJob(server, "ExportRegistrations")
            let id = try #require(export.value("JobId"))
            let paths = ["/\(Self.hub)/jobs/\(id)", "/\(Self.hub)/jobs/\(id)/Output.txt", "/\(Self.hub)/jobs/files/in.txt"]
            let store = try await server.engine().store
            var gone = false
            for _ in 0..<100 where !gone {
                try await Task.sleep(for: .milliseconds(100))
                let job = try await store.job(id: id)
                let file = try await store.jobFileChunks(name: "in.txt")
                gone = job == nil && file == nil
            }
            #expect(gone, "the sweep deleted the job and the file")
            for path in paths { expectHubError(try await server.wire(.GET, "\(path)?\(Self.version)"), 404) }
            #expect(try await store.jobUsage() == JobUsage(jobs: 0, activeJobs: 0, bytes: 0))
        }
    }
}
