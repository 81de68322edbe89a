import Foundation
import HeraldTestSupport
import Testing

/// Three `herald serve` nodes and `herald emulate` as separate processes on one database
/// (scripts/cluster-test.py): each device reached exactly once; a node killed mid-broadcast
/// loses no device; a key rotated through one process is refused by every node at once.
@Suite("Several nodes", .enabled(if: PostgresTestDatabase.isConfigured, PostgresTestDatabase.skipReason))
struct ClusterTests {
    /// The `herald` binary built beside this test bundle.
    static let herald = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("herald")

    @Test(.timeLimit(.minutes(10)))
    func threeNodesShareTheWorkAndSurviveAKill() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.herald.path), "no herald binary at \(Self.herald.path)")
        let output = try await PythonInterop.run(
            scriptAt: PythonInterop.repositoryScripts.appendingPathComponent("cluster-test.py"),
            arguments: [
                "--herald", Self.herald.path, "--database-url", try #require(PostgresTestDatabase.urlString),
                "--devices", "2500", "--crash-devices", "4000", "--lease", "10", "--partition-size", "250",
            ]
        )
        print(output.stdout)
        #expect(output.status == 0, "\(output.transcript)")
        #expect(output.stdout.contains("every guarantee held"))
    }

    /// One node on PostgreSQL killed mid-broadcast and started again (scripts/crash-broadcast.py):
    /// no device lost.
    @Test(.timeLimit(.minutes(10)))
    func aNodeKilledMidBroadcastResumesAfterItsLease() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.herald.path), "no herald binary at \(Self.herald.path)")
        let output = try await PythonInterop.run(
            scriptAt: PythonInterop.repositoryScripts.appendingPathComponent("crash-broadcast.py"),
            arguments: [
                "--herald", Self.herald.path, "--database-url", try #require(PostgresTestDatabase.urlString),
                "--devices", "3000", "--signal", "kill", "--lease", "5",
            ]
        )
        print(output.stdout)
        #expect(output.status == 0, "\(output.transcript)")
        #expect(output.stdout.contains("devices lost:                  0"))
    }

    /// The benchmark of a broadcast shared by 1 and 2 nodes (scripts/cluster-bench.py) runs to
    /// the end, so that it keeps working; its figures are read by people, not checked here.
    @Test(.timeLimit(.minutes(10)))
    func theClusterBenchmarkRuns() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.herald.path), "no herald binary at \(Self.herald.path)")
        let output = try await PythonInterop.run(
            scriptAt: PythonInterop.repositoryScripts.appendingPathComponent("cluster-bench.py"),
            arguments: [
                "--herald", Self.herald.path, "--database-url", try #require(PostgresTestDatabase.urlString),
                "--devices", "3000", "--nodes", "1,2",
            ]
        )
        print(output.stdout)
        #expect(output.status == 0, "\(output.transcript)")
        #expect(output.stdout.contains("2 nodes: 3,000 devices Completed"))
    }

    /// The database stopped for a few seconds mid-broadcast (scripts/outage-test.py, on a
    /// PostgreSQL server of its own): requests get 503 at once, delivery resumes when it is
    /// back, no device is lost, no node exits.
    @Test(.timeLimit(.minutes(10)))
    func aDatabaseOutagePausesDeliveryAndLosesNothing() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.herald.path), "no herald binary at \(Self.herald.path)")
        let output = try await PythonInterop.run(
            scriptAt: PythonInterop.repositoryScripts.appendingPathComponent("outage-test.py"),
            arguments: ["--herald", Self.herald.path, "--devices", "4000", "--outage", "5"]
        )
        print(output.stdout)
        #expect(output.status == 0, "\(output.transcript)")
        #expect(output.stdout.contains("every guarantee held"))
    }
}
