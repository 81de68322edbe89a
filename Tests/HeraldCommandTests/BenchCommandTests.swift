import Foundation
import HeraldTestSupport
import Testing

@Suite("herald bench as a user runs it")
struct BenchCommandTests {
    /// Every scenario runs and the summary names each figure, on SQLite and, with a test server,
    /// on PostgreSQL with node processes. Small counts: this checks that the benchmark works,
    /// not what it measures.
    @Test func everyScenarioRunsAndIsSummed() async throws {
        let database = ProcessInfo.processInfo.environment["HERALD_TEST_DATABASE_URL"].flatMap { $0.isEmpty ? nil : $0 }
        var arguments = [
            "bench", "--devices", "300", "--upserts", "200", "--installations", "200", "--sends", "200", "--connections", "4",
            "--broadcast", "500", "--template-devices", "100", "--receipt-devices", "100", "--console-devices", "2000", "--ceiling-requests", "0",
            "--cluster-devices", "400", "--nodes", "1,2",
        ]
        if let database { arguments += ["--database-url", database] }
        let result = try await HeraldCommand.run(arguments)
        #expect(result.status == 0, "\(result.error)")
        let summary = try #require(result.output.components(separatedBy: "\nResults\n").last)
        for figure in [
            "fan-out to 300 APNs devices", "registration upserts", "installation PUTs", "Console pages over 2,000 registrations on SQLite",
            "sends accepted, POST /{hub}/messages", "… each under an Idempotency-Key", "… under a key / without (median of 8 pairs)",
            "devices, one user", "node CPU/notification", "FCM / APNs node CPU per device, broadcast",
            "template / native node CPU per device", "receipts, APNs: node CPU",
        ] {
            #expect(summary.contains(figure), "\(figure) is missing from:\n\(summary)")
        }
        // The runs of a node process, each finished.
        let lines = summary.split(separator: "\n")
        for run in [
            "apns fan-out", "apns broadcast", "fcm fan-out", "fcm broadcast", "apns native send", "apns template send", "apns send, no receipts",
            "apns send, every device confirms",
        ] {
            #expect(lines.contains { $0.contains(run) && $0.contains("Completed") }, "\(run) did not complete in:\n\(summary)")
        }
        if database != nil {
            #expect(summary.contains("PostgreSQL / SQLite"))
            #expect(summary.contains("1 node : 400 devices Completed"), "\(summary)")
            #expect(summary.contains("2 nodes: 400 devices Completed"), "\(summary)")
            #expect(summary.contains("400 reached"), "\(summary)")
            // Each shared broadcast says when the emulator accepted its first and its last send.
            let accepted = result.output.split(separator: "\n").filter { $0.contains("the emulator accepted the first send after") }
            #expect(accepted.count == 2, "\(result.output)")
        } else {
            print("HERALD_TEST_DATABASE_URL is not set: herald bench ran on SQLite only")
        }
    }

    /// A scenario that fails does not stop the bench: the others run, the table has what they
    /// measured, and it says what failed and why (here, every step on a database that does not
    /// answer), without the database's password; the exit status says it too.
    @Test(.timeLimit(.minutes(5)))
    func aFailedScenarioIsReportedAndTheRestIsPrinted() async throws {
        let closed = try ListeningSocket()
        let port = closed.port
        closed.close()
        let result = try await HeraldCommand.run([
            "bench", "--database-url", "postgres://herald:not-the-password@127.0.0.1:\(port)/herald?sslmode=disable&connect_timeout=2",
            "--devices", "200", "--upserts", "100", "--installations", "100", "--sends", "100", "--connections", "4", "--broadcast", "0",
            "--template-devices", "0", "--receipt-devices", "0", "--console-devices", "0", "--ceiling-requests", "0", "--platforms", "apns",
            "--cluster-devices", "300", "--nodes", "1",
        ])
        #expect(result.status != 0)
        let summary = try #require(result.output.components(separatedBy: "\nResults\n").last, "\(result.output)\n\(result.error)")
        // What could be measured was.
        let lines = summary.split(separator: "\n")
        for row in ["fan-out to 200 APNs devices", "registration upserts", "installation PUTs", "sends accepted"] {
            #expect(lines.contains { $0.contains(row) && $0.contains("/s") }, "\(row) is missing from:\n\(summary)")
        }
        #expect(lines.contains { $0.contains("apns fan-out") && $0.contains("Completed") }, "\(summary)")
        // What failed is said, each step once.
        let failed = try #require(summary.components(separatedBy: "Not measured, because they failed").last, "\(summary)")
        for step in [
            "fan-out on PostgreSQL:", "registration upserts on PostgreSQL:", "installation PUTs on PostgreSQL:",
            "send acceptance on PostgreSQL:", "broadcast shared by 1 node process:",
        ] {
            #expect(failed.contains(step), "\(step) is missing from:\n\(summary)")
        }
        #expect(!(result.output + result.error).contains("not-the-password"))
    }

    /// `--node-cpu` puts each node of the shared broadcast in a cgroup of its own with that CPU
    /// quota, and the summary gives the speed-up, the CPU per notification of the nodes and of
    /// PostgreSQL, and how idle the machine was. Needs a PostgreSQL test server and a writable
    /// cgroup cpu controller (root).
    @Test(.timeLimit(.minutes(10)))
    func nodesWithACPUQuotaShareABroadcast() async throws {
        guard let database = ProcessInfo.processInfo.environment["HERALD_TEST_DATABASE_URL"].flatMap({ $0.isEmpty ? nil : $0 }) else {
            print("HERALD_TEST_DATABASE_URL is not set: --node-cpu is not tried")
            return
        }
        let v1 = "/sys/fs/cgroup/cpu/cgroup.procs", v2 = "/sys/fs/cgroup/cgroup.subtree_control"
        guard FileManager.default.isWritableFile(atPath: v1) || FileManager.default.isWritableFile(atPath: v2) else {
            print("No writable cgroup cpu controller here (not root?): --node-cpu is not tried")
            return
        }
        let result = try await HeraldCommand.run([
            "bench", "--database-url", database, "--devices", "0", "--upserts", "0", "--installations", "0", "--sends", "0", "--broadcast", "0",
            "--template-devices", "0", "--receipt-devices", "0", "--console-devices", "0", "--ceiling-requests", "0", "--cluster-devices", "300",
            "--nodes", "1,2", "--node-cpu", "0.5",
        ])
        #expect(result.status == 0, "\(result.error)")
        let summary = try #require(result.output.components(separatedBy: "\nResults\n").last)
        #expect(summary.contains("each node limited to 0.50 of a core"), "\(summary)")
        #expect(summary.contains("2 nodes: 300 devices Completed"), "\(summary)")
        #expect(summary.contains("speed-up"), "\(summary)")
        #expect(summary.contains("CPU per notification: nodes"), "\(summary)")
        #expect(summary.contains("machine idle"), "\(summary)")
        // The groups are removed with their nodes.
        let groups = (try? FileManager.default.contentsOfDirectory(atPath: "/sys/fs/cgroup/cpu")) ?? []
        #expect(!groups.contains { $0.hasPrefix("herald-bench-\(getpid())-node") }, "\(groups)")
    }

    /// With `--node-cpu`, the upserts and installation `PUT`s are also sent to a node process in
    /// a cgroup of its own, on each store, and the summary gives their rates and the node's CPU
    /// per write. Needs a writable cgroup cpu controller (root); PostgreSQL when
    /// HERALD_TEST_DATABASE_URL is set.
    @Test(.timeLimit(.minutes(10)))
    func writesToANodeWithACPUQuota() async throws {
        let v1 = "/sys/fs/cgroup/cpu/cgroup.procs", v2 = "/sys/fs/cgroup/cgroup.subtree_control"
        guard FileManager.default.isWritableFile(atPath: v1) || FileManager.default.isWritableFile(atPath: v2) else {
            print("No writable cgroup cpu controller here (not root?): writes to a limited node are not tried")
            return
        }
        let database = ProcessInfo.processInfo.environment["HERALD_TEST_DATABASE_URL"].flatMap { $0.isEmpty ? nil : $0 }
        var arguments = [
            "bench", "--devices", "0", "--upserts", "40", "--installations", "40", "--sends", "0", "--broadcast", "0", "--template-devices", "0",
            "--receipt-devices", "0", "--console-devices", "0", "--ceiling-requests", "0", "--cluster-devices", "0", "--node-cpu", "0.5",
            "--connections", "4",
        ]
        if let database { arguments += ["--database-url", database] }
        let result = try await HeraldCommand.run(arguments)
        #expect(result.status == 0, "\(result.error)")
        let summary = try #require(result.output.components(separatedBy: "\nResults\n").last)
        for row in [
            "upserts, a node limited to 0.50 core", "… the node's CPU per upsert", "installation PUTs, a node limited to 0.50 core",
            "… the node's CPU per installation PUT",
        ] {
            let line = try #require(summary.split(separator: "\n").first { $0.hasPrefix(row) }, "\(row) is missing from:\n\(summary)")
            // A figure for each store measured, none missing, and with PostgreSQL its ratio.
            #expect(!line.contains("–  "), "\(line)")
            if database != nil { #expect(line.contains("%"), "\(line)") }
        }
        #expect(result.output.contains("µs in the node process"), "\(result.output)")
        // The group is removed with its node.
        let groups =
            (try? FileManager.default.contentsOfDirectory(atPath: FileManager.default.fileExists(atPath: v1) ? "/sys/fs/cgroup/cpu" : "/sys/fs/cgroup")) ?? []
        #expect(!groups.contains("herald-bench-\(getpid())-writes"), "\(groups)")
    }

    @Test func aCPUQuotaOutOfRangeIsRefused() async throws {
        let result = try await HeraldCommand.run(["bench", "--node-cpu", "0"])
        #expect(result.status != 0)
        #expect(result.error.contains("--node-cpu"), "\(result.error)")
    }
}
