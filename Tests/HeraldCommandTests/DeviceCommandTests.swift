import Foundation
import HeraldTestSupport
import Testing

/// `herald device --live-activity` against a `herald serve` with its built-in emulators: the
/// simulated device gets a push-to-start token and an activity with an update token, and prints
/// the start and the update that aioapns, an independent APNs client, sends to them.
@Suite(
    "herald device simulates Live Activities",
    .enabled("needs python3 with aioapns: pip install aioapns") { await PythonInterop.canImport("aioapns") },
    .timeLimit(.minutes(4))
)
struct DeviceCommandTests {
    private struct KeyMetadata: Decodable {
        var keyID: String
        var teamID: String
    }

    @Test func aSimulatedActivityPrintsWhatArrives() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("herald-device-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: data) }
        let (portSocket, apnsSocket) = (try ListeningSocket(), try ListeningSocket())
        let (port, apnsPort) = (portSocket.port, apnsSocket.port)
        portSocket.close()
        apnsSocket.close()
        let serve = try HeraldCommand.launch(
            ["serve", "--data-dir", data, "--port", "\(port)", "--tls-port", "0"],
            environment: ["HERALD_LOG_LEVEL": "error", "HERALD_EMULATOR_APNS_PORT": "\(apnsPort)"])
        defer {
            HeraldCommand.stop(serve)
            try? FileManager.default.removeItem(at: serve.directory)
        }
        try await HeraldCommand.waitUntil(printed: "Herald is listening", by: serve)

        let device = try HeraldCommand.launch(
            [
                "device", "--server", "http://127.0.0.1:\(port)", "--user", "alice", "--password", "correct horse battery",
                "--sign-up", "--live-activity", "MatchAttributes", "--count", "2", "--timeout", "120",
            ],
            environment: [:])
        defer {
            HeraldCommand.stop(device)
            try? FileManager.default.removeItem(at: device.directory)
        }
        try await HeraldCommand.waitUntil(printed: "waiting for notifications", by: device)
        let lines = device.printed.split(separator: "\n")
        let startToken = try #require(Self.word(after: "push-to-start token ", in: lines))
        let updateToken = try #require(Self.word(after: "started in the app, update token ", in: lines))
        #expect(startToken.count == 64 && updateToken.count == 64, "\(device.printed)")
        // The app registers both with the app backend: its push-to-start token, and its activity's update token.
        #expect(device.printed.contains("registered the push-to-start token: registration "), "\(device.printed)")
        #expect(device.printed.contains("update token: registration "), "\(device.printed)")

        // The emulator's signing key, as `herald serve` keeps it in its data directory.
        let emulator = data + "/emulator"
        let metadata = try JSONDecoder().decode(KeyMetadata.self, from: Data(contentsOf: URL(fileURLWithPath: emulator + "/apns-key.json")))
        let topic = "com.example.herald-demo"
        let common = [
            "--host", "127.0.0.1", "--port", "\(apnsPort)", "--ca", emulator + "/ca.pem",
            "--key", emulator + "/AuthKey_\(metadata.keyID).p8", "--key-id", metadata.keyID, "--team-id", metadata.teamID,
            "--topic", topic, "--push-type", "liveactivity", "--request-topic", topic + ".push-type.liveactivity",
        ]
        let now = Int(Date().timeIntervalSince1970)
        let start = """
            {"aps": {"timestamp": \(now), "event": "start", "content-state": {"home": 0, "away": 0},
             "attributes-type": "MatchAttributes", "attributes": {"homeTeam": "Lions"}, "alert": {"title": "Kick-off"}}}
            """
        let update = #"{"aps": {"timestamp": \#(now), "event": "update", "content-state": {"home": 1, "away": 0}}}"#
        // One provider, one provider token: a second one within 20 minutes is TooManyProviderTokenUpdates.
        let sent = try await PythonInterop.run(
            "apns_aioapns.py", arguments: common + ["--token", startToken, "--payload", start, "--token", updateToken, "--payload", update])
        #expect(sent.status == 0, "\(sent.transcript)")
        #expect(!sent.stdout.contains("\"successful\": false"), "\(sent.transcript)")

        // Two pushes reached the activities: the device prints them and exits.
        let deadline = ContinuousClock.now + .seconds(60)
        while device.process.isRunning && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(100)) }
        let output = device.printed
        #expect(device.process.terminationStatus == 0, "\(output)\n\(device.printedErrors)")
        #expect(output.contains("start (push), started by push-to-start; update token "), "\(output)")
        #expect(output.contains(#"content-state {"away":0,"home":0}"#), "\(output)")
        #expect(output.contains("update (push)"), "\(output)")
        #expect(output.contains(#"content-state {"away":0,"home":1}"#), "\(output)")
    }

    private static func word(after prefix: String, in lines: [Substring]) -> String? {
        for line in lines {
            guard let range = line.range(of: prefix) else { continue }
            return line[range.upperBound...].split(separator: " ").first.map(String.init)
        }
        return nil
    }
}
