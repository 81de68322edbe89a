import Foundation
import Testing

/// `herald hub import` and `herald hub export`, run as a user runs them.
@Suite struct HubTransferCommandTests {
    static func apple(_ token: String, id: String? = nil, tags: String) -> String {
        let idElement = id.map { "<RegistrationId>\($0)</RegistrationId>" } ?? ""
        return
            #"<AppleRegistrationDescription xmlns:i="http://www.w3.org/2001/XMLSchema-instance" xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect">"#
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

    /// The export holds every device handle of the hub: it is created for its user only, and a
    /// file or a link already at that path is neither overwritten nor followed.
    @Test func exportCreatesAPrivateFileAndFollowsNoLink() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-export-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let data = directory.appendingPathComponent("data").path
        try #require(try await HeraldCommand.run(["hub", "create", "myhub", "--data-dir", data]).status == 0)

        let output = directory.appendingPathComponent("out.txt").path
        let exported = try await HeraldCommand.run(["hub", "export", "myhub", output, "--data-dir", data])
        #expect(exported.status == 0, "\(exported.error)")
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: output)[.posixPermissions] as? NSNumber)
        #expect(mode.intValue & 0o777 == 0o600, "mode \(String(mode.intValue, radix: 8))")

        // Again to the same path: refused, the file as it was.
        let again = try await HeraldCommand.run(["hub", "export", "myhub", output, "--data-dir", data])
        #expect(again.status != 0 && again.error.contains("exists"), "\(again.error)")

        // A link to another file (one another user would want overwritten): not followed.
        let victim = directory.appendingPathComponent("victim.txt").path
        try "keep me\n".write(toFile: victim, atomically: true, encoding: .utf8)
        let link = directory.appendingPathComponent("link.txt").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: victim)
        let linked = try await HeraldCommand.run(["hub", "export", "myhub", link, "--data-dir", data])
        #expect(linked.status != 0, "\(linked.error)")
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "keep me\n")
        // A dangling link: not followed to create its target either.
        let dangling = directory.appendingPathComponent("dangling.txt").path
        let target = directory.appendingPathComponent("created-through-link.txt").path
        try FileManager.default.createSymbolicLink(atPath: dangling, withDestinationPath: target)
        let throughDangling = try await HeraldCommand.run(["hub", "export", "myhub", dangling, "--data-dir", data])
        #expect(throughDangling.status != 0, "\(throughDangling.error)")
        #expect(!FileManager.default.fileExists(atPath: target))
    }
}
