import Foundation
import HeraldTestSupport
import Testing

/// `herald hub webhooks …` and `herald hub channels …` as an operator types them.
@Suite struct HubChannelsAndWebhooksCommandTests {
    /// An endpoint is added (its secret shown once), listed without it, disabled, enabled, given
    /// a new secret (the old one signs for a while), sent a test event and removed; a plain-http
    /// URL is refused before anything is saved.
    @Test func anEndpointIsAddedListedRotatedAndRemoved() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("herald-webhooks-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: data) }
        func herald(_ arguments: [String]) async throws -> HeraldCommand.Result {
            try await HeraldCommand.run(["hub"] + arguments + ["--data-dir", data], environment: ["HERALD_LOG_LEVEL": "error"])
        }
        #expect(try await herald(["create", "games"]).status == 0)

        let plain = try await herald(["webhooks", "add", "games", "http://hooks.example.com/herald"])
        #expect(plain.status != 0)
        #expect(plain.error.contains("https"), "\(plain.error)")
        #expect(try await herald(["webhooks", "list", "games"]).output.contains("has no webhook endpoints"))

        let added = try await herald([
            "webhooks", "add", "games", "https://hooks.example.com/herald", "--events", "notification.completed,registration.expired",
        ])
        #expect(added.status == 0, "\(added.error)")
        let id = try #require(added.output.split(separator: " ").first.map(String.init))
        let secret = try #require(added.output.split(separator: "\n").first { $0.hasPrefix("Signing secret") }?.split(separator: " ").last)
        #expect(secret.hasPrefix("whsec_"), "\(added.output)")

        let listed = try await herald(["webhooks", "list", "games"])
        let line = try #require(listed.output.split(separator: "\n").first { $0.hasPrefix(id) }, "\(listed.output)")
        #expect(
            line.split(separator: " ") == [
                Substring(id), "enabled", "https://hooks.example.com/herald", "notification.completed,registration.expired", "(0", "waiting)",
            ], "\(line)")
        #expect(!listed.output.contains(secret), "the secret is shown once")

        #expect(try await herald(["webhooks", "disable", "games", id]).output.contains("DISABLED"))
        #expect(try await herald(["webhooks", "enable", "games", id]).output.contains("enabled"))

        let rotated = try await herald(["webhooks", "rotate-secret", "games", id])
        #expect(rotated.status == 0, "\(rotated.error)")
        let newSecret = try #require(rotated.output.split(separator: "\n").first { $0.hasPrefix("New signing secret") }?.split(separator: " ").last)
        #expect(newSecret.hasPrefix("whsec_") && newSecret != secret)
        #expect(rotated.output.contains("the previous secret signs too until"), "\(rotated.output)")

        let test = try await herald(["webhooks", "test", "games", id])
        #expect(test.output.contains("Recorded test event"), "\(test.output)\(test.error)")
        #expect(try await herald(["webhooks", "log", "games", id]).output.contains("No attempts yet."))

        #expect(try await herald(["webhooks", "remove", "games", id]).output.contains("Removed webhook endpoint \(id)."))
        #expect(try await herald(["webhooks", "list", "games"]).output.contains("has no webhook endpoints"))
        let gone = try await herald(["webhooks", "remove", "games", id])
        #expect(gone.status != 0)
    }

    /// Channels are created, listed, shown and deleted at the APNs emulator of `herald
    /// emulate`, with the settings it writes to herald.env; a hub without APNs credentials is
    /// told so.
    @Test(.timeLimit(.minutes(3)))
    func channelsAreManagedAtTheAPNsBroadcastEndpoint() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("herald-channels-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let (data, emulatorDirectory) = (root + "/data", root + "/emulator")
        let emulate = try HeraldCommand.launch(["emulate", "--data-dir", emulatorDirectory], environment: ["HERALD_LOG_LEVEL": "error"])
        defer {
            HeraldCommand.stop(emulate)
            try? FileManager.default.removeItem(at: emulate.directory)
        }
        let deadline = ContinuousClock.now + .seconds(60)
        while !emulate.printed.contains("Stop with Ctrl-C"), emulate.process.isRunning, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
        }
        var environment = ["HERALD_LOG_LEVEL": "error"]
        for line in try String(contentsOfFile: emulatorDirectory + "/herald.env", encoding: .utf8).split(separator: "\n") {
            guard !line.hasPrefix("#"), let equals = line.firstIndex(of: "=") else { continue }
            environment[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        #expect(environment["HERALD_APNS_BROADCAST_ENDPOINT"] != nil, "\(environment.keys.sorted())")
        func herald(_ arguments: [String], settings: [String: String]) async throws -> HeraldCommand.Result {
            try await HeraldCommand.run(["hub"] + arguments + ["--data-dir", data], environment: settings)
        }
        #expect(try await herald(["create", "games"], settings: environment).status == 0)

        let none = try await herald(["channels", "list", "games"], settings: ["HERALD_LOG_LEVEL": "error"])
        #expect(none.status != 0)
        #expect(none.error.contains("no APNs credentials"), "\(none.error)")

        let created = try await herald(["channels", "create", "games", "--storage-policy", "1"], settings: environment)
        #expect(created.status == 0, "\(created.error)")
        let id = created.output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(!id.isEmpty && !id.contains("\n"), "\(created.output)")
        #expect(try await herald(["channels", "list", "games"], settings: environment).output.contains(id))
        let shown = try await herald(["channels", "show", "games", id], settings: environment)
        #expect(shown.output.contains("message storage policy 1"), "\(shown.output)\(shown.error)")
        let policy = try await herald(["channels", "create", "games", "--storage-policy", "2"], settings: environment)
        #expect(policy.status != 0)
        #expect(policy.error.contains("--storage-policy is 0"), "\(policy.error)")

        #expect(try await herald(["channels", "delete", "games", id], settings: environment).output.contains("deleted channel \(id)"))
        #expect(!(try await herald(["channels", "list", "games"], settings: environment).output.contains(id)))
        let missing = try await herald(["channels", "show", "games", id], settings: environment)
        #expect(missing.status != 0, "\(missing.output)")
    }
}
