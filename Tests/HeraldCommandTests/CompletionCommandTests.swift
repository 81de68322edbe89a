import Foundation
import Testing

@Suite("herald completion")
struct CompletionCommandTests {
    /// The bash script names the commands and their options, and bash reads it without a
    /// syntax error (`bash -n`).
    @Test func bashCompletesCommandsAndOptions() async throws {
        let result = try await HeraldCommand.run(["completion", "bash"])
        #expect(result.status == 0, "\(result.error)")
        for word in ["serve", "emulate", "hub", "set-credentials", "--data-dir", "--rate-limit"] {
            #expect(result.output.contains(word), "\(word) is missing from the bash completion")
        }
        let script = FileManager.default.temporaryDirectory.appendingPathComponent("herald-completion-\(UUID().uuidString).bash")
        try result.output.write(to: script, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: script) }
        let bash = Process()
        bash.executableURL = URL(fileURLWithPath: "/bin/bash")
        bash.arguments = ["-n", script.path]
        let errors = Pipe()
        bash.standardError = errors
        try bash.run()
        bash.waitUntilExit()
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(bash.terminationStatus == 0, "bash -n: \(text)")
    }

    @Test func zshAndFishScriptsAreTheirShells() async throws {
        let zsh = try await HeraldCommand.run(["completion", "zsh"])
        #expect(zsh.status == 0 && zsh.output.hasPrefix("#compdef herald"), "\(zsh.output.prefix(200))")
        let fish = try await HeraldCommand.run(["completion", "fish"])
        #expect(fish.status == 0)
        #expect(fish.output.contains("complete -c 'herald'") || fish.output.contains("complete -c herald"), "\(fish.output.prefix(300))")
    }

    @Test func anotherShellIsAClearError() async throws {
        let result = try await HeraldCommand.run(["completion", "powershell"])
        #expect(result.status != 0)
        #expect(result.error.contains("use bash, zsh or fish"), "\(result.error)")
        #expect(result.output.isEmpty)
    }
}
