import Foundation
import HeraldTestSupport
import Testing

/// A node stopped in the middle of a broadcast and started again on its data directory
/// (SQLite), measured by `scripts/crash-broadcast.py` with `herald emulate` in a process of
/// its own: no device is lost, a restarted node resumes its own work at once, and a SIGTERM
/// sends nothing twice.
@Suite("herald serve stopped mid-broadcast")
struct CrashCommandTests {
    private func expectCrashBroadcast(_ arguments: [String]) async throws {
        let output = try await PythonInterop.run(
            scriptAt: PythonInterop.repositoryScripts.appendingPathComponent("crash-broadcast.py"),
            arguments: ["--herald", HeraldCommand.binary.path, "--devices", "2000"] + arguments
        )
        print(output.stdout)
        #expect(output.status == 0, "\(output.transcript)")
        #expect(output.stdout.contains("every guarantee held"))
    }

    /// Before, the restarted node waited for the lease the killed one held (60 s).
    @Test(.timeLimit(.minutes(5)))
    func aKilledNodeRestartedResumesItsWorkAtOnce() async throws {
        try await expectCrashBroadcast(["--signal", "kill", "--lease", "60", "--max-resume", "15"])
    }

    /// The pages a killed node had in flight are sent again, but each repeat carries the
    /// notification's `apns-collapse-id`, so the emulator's devices show one copy. A tenth of
    /// the devices are uninstalled, and a webhook endpoint wants every event: none is lost
    /// (each is recorded before what it reports is written).
    @Test(.timeLimit(.minutes(5)))
    func aKilledNodesRepeatsReplaceTheirFirstCopyOnAPNsAndLoseNoWebhookEvent() async throws {
        try await expectCrashBroadcast([
            "--platform", "apns", "--signal", "kill", "--lease", "60", "--max-shown-twice", "0", "--webhooks", "--max-events-lost", "0",
        ])
    }

    @Test(.timeLimit(.minutes(5)))
    func aStoppedNodeHandsItsWorkBackAndSendsNothingTwice() async throws {
        try await expectCrashBroadcast(["--signal", "term", "--lease", "60", "--max-resume", "10", "--max-duplicates", "0"])
    }
}
