import Foundation
import Testing

/// `herald hub import` and `herald hub export`, run as a user runs them.
@Suite struct HubTransferCommandTests {
    static func apple(_ token: String, id: String? = nil, tags: String) -> String {
        let idElement = id.map { "<RegistrationId>\($0)</RegistrationId>" } ?? ""
        return #"<AppleRegistrationDescription xmlns:i="http://www.w3.org/2001/XMLSchema-instance" xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect">"#
            + "\(idElement)<Tags>\(tags)</Tags><DeviceToken>\(token)</DeviceToken></AppleRegistrationDescription>"
    }

    static func token() -> String {
        (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }

    @Test func importReportsBadLinesByNumberAndExportWritesWhatIsThere() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-transfer-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let data = directory.appendingPathComponent("data").path
        let created = try await HeraldCommand.run(["hub", "create", "myhub", "--data-dir", data])
        try #require(created.status == 0, "\(created.error)")

        let input = directory.appendingPathComponent("in.txt").path
        let lines = [
            Self.apple(Self.token(), id: "import-1", tags: "a,b"),
            "not xml at all",
            Self.apple(Self.token(), tags: "c"),
            Self.apple("zz", tags: "bad-token"),
        ]
        try (lines.joined(separator: "\n") + "\n").write(toFile: input, atomically: true, encoding: .utf8)

        let first = try await HeraldCommand.run(["hub", "import", "myhub", input, "--mode", "create", "--data-dir", data])
        #expect(first.status == 1, "a failed line makes the exit status 1: \(first.error)")
        #expect(first.error.contains("in.txt: line 2: "), "\(first.error)")
        #expect(first.error.contains("in.txt: line 4: DeviceToken"), "\(first.error)")
        #expect(!first.error.contains("line 1:") && !first.error.contains("line 3:"), "\(first.error)")
        #expect(first.error.contains("2 succeeded (2 created), 2 failed."), "\(first.error)")
        #expect(!first.error.contains("\u{1B}["), "no terminal bar when standard error is a file")

        // Again: idempotent.
        let second = try await HeraldCommand.run(["hub", "import", "myhub", input, "--mode", "create", "--data-dir", data])
        #expect(second.error.contains("2 succeeded (2 unchanged), 2 failed."), "\(second.error)")

        let output = directory.appendingPathComponent("out.txt").path
        let exported = try await HeraldCommand.run(["hub", "export", "myhub", output, "--data-dir", data])
        #expect(exported.status == 0, "\(exported.error)")
        #expect(exported.error.contains("Exported 2 registrations of hub myhub to \(output)."), "\(exported.error)")
        let written = try String(contentsOfFile: output, encoding: .utf8).split(separator: "\n")
        #expect(written.count == 2)
        #expect(written.contains { $0.contains("<RegistrationId>import-1</RegistrationId>") && $0.contains("<Tags>a,b</Tags>") })

        // The export deletes them all again; to standard output without a file.
        let deleted = try await HeraldCommand.run(["hub", "import", "myhub", output, "--mode", "delete", "--data-dir", data])
        #expect(deleted.status == 0 && deleted.error.contains("2 succeeded (2 deleted), 0 failed."), "\(deleted.error)")
        let empty = try await HeraldCommand.run(["hub", "export", "myhub", "--data-dir", data])
        #expect(empty.status == 0 && empty.output.isEmpty, "\(empty.output)")

        let unknown = try await HeraldCommand.run(["hub", "import", "myhub", input, "--mode", "merge", "--data-dir", data])
        #expect(unknown.status != 0 && unknown.error.contains("--mode"), "\(unknown.error)")
    }
}
