import Foundation
import Testing

/// `herald send`'s delivery options, as a user types them.
@Suite struct SendCommandTests {
    @Test func optionsThatCannotBeSentAreClearErrorsBeforeAnythingIsOpened() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-send-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let priority = try await HeraldCommand.run(["send", "--to", "news", "--message", "hi", "--priority", "urgent", "--data-dir", directory])
        #expect(priority.status != 0)
        #expect(priority.error.contains("--priority is high, normal or low, not 'urgent'"))
        let ttl = try await HeraldCommand.run(["send", "--to", "news", "--message", "hi", "--ttl=-5", "--data-dir", directory])
        #expect(ttl.status != 0)
        #expect(ttl.error.contains("--ttl is a number of seconds"))
        let spread = try await HeraldCommand.run(["send", "--to", "news", "--message", "hi", "--spread", "0", "--data-dir", directory])
        #expect(spread.status != 0)
        #expect(spread.error.contains("--spread is a number of seconds, at least 1"))
        #expect(!FileManager.default.fileExists(atPath: directory))
    }

    /// The same `herald send` run twice under one key queues one notification; other options
    /// under that key are refused, naming it.
    @Test func aSendRunAgainUnderItsIdempotencyKeyQueuesNothingMore() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-send-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let environment = ["HERALD_LOG_LEVEL": "error"]
        #expect(try await HeraldCommand.run(["hub", "create", "app", "--data-dir", directory], environment: environment).status == 0)
        let send = ["send", "--to", "news", "--message", "Kick-off", "--wait", "0", "--idempotency-key", "match-42", "--data-dir", directory]
        let first = try await HeraldCommand.run(send, environment: environment)
        #expect(first.status == 0, "\(first.error)")
        let id = try #require(first.output.split(separator: "\n").first { $0.hasPrefix("accepted notification ") }?.split(separator: " ").last)

        let again = try await HeraldCommand.run(send, environment: environment)
        #expect(again.status == 0, "\(again.error)")
        #expect(again.output.contains("already sent under this idempotency key: notification \(id) (nothing was sent again)"), "\(again.output)")

        var other = send
        other[4] = "Half-time"
        let refused = try await HeraldCommand.run(other, environment: environment)
        #expect(refused.status != 0)
        #expect(refused.error.contains("--idempotency-key 'match-42' was used for a different send"), "\(refused.error)")
        let spread = try await HeraldCommand.run(send + ["--spread", "60"], environment: environment)
        #expect(spread.status != 0, "spreading it is another send")
        #expect(spread.error.contains("--idempotency-key 'match-42' was used for a different send"), "\(spread.error)")
        let tooLong = try await HeraldCommand.run(send.dropLast(4) + ["--spread", "7200", "--data-dir", directory], environment: environment)
        #expect(tooLong.status != 0)
        #expect(tooLong.error.contains("spread over 1 second to less than 1800 seconds"), "\(tooLong.error)")

        let bad = try await HeraldCommand.run(send.dropLast(3) + ["", "--data-dir", directory], environment: environment)
        #expect(bad.status != 0)
        #expect(bad.error.contains("--idempotency-key: 1 to 255 printable ASCII characters"), "\(bad.error)")
    }

    /// `--live-activity`: the push is accepted into the hub's queue with its `aps` as APNs
    /// wants it, or refused with the field the hub found wrong; its options go with it only.
    @Test func liveActivityPushesAreQueuedOrRefusedNamingTheField() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-send-live-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func herald(_ arguments: [String]) async throws -> HeraldCommand.Result {
            try await HeraldCommand.run(arguments + ["--data-dir", directory], environment: ["HERALD_LOG_LEVEL": "error"])
        }
        #expect(try await herald(["hub", "create", "games"]).status == 0)
        let send = ["send", "--hub", "games", "--to", "match-42", "--wait", "0", "--live-activity"]

        let update = try await herald(send + ["update", "--content-state", #"{"home":1}"#, "--stale-in", "600"])
        #expect(update.status == 0, "\(update.error)")
        #expect(update.output.contains("accepted notification"), "\(update.output)")
        let end = try await herald(send + ["end", "--dismiss-in", "900"])
        #expect(end.status == 0, "\(end.error)")

        let noState = try await herald(send + ["update"])
        #expect(noState.status != 0)
        #expect(noState.error.contains("aps.content-state"), "\(noState.error)")
        let noAttributes = try await herald(send + ["start", "--content-state", "{}", "--message", "Kick-off"])
        #expect(noAttributes.status != 0)
        #expect(noAttributes.error.contains("aps.attributes-type"), "\(noAttributes.error)")
        let lowPriority = try await herald(send + ["update", "--content-state", "{}", "--priority", "low"])
        #expect(lowPriority.error.contains("apns-priority"), "\(lowPriority.error)")
        let notJSON = try await herald(send + ["update", "--content-state", "home=1"])
        #expect(notJSON.error.contains("--content-state must be a JSON object"), "\(notJSON.error)")
        let unknown = try await herald(send + ["pause"])
        #expect(unknown.error.contains("--live-activity is start, update or end"), "\(unknown.error)")
        let stray = try await herald(["send", "--hub", "games", "--to", "x", "--message", "hi", "--content-state", "{}"])
        #expect(stray.error.contains("--content-state goes with --live-activity"), "\(stray.error)")
    }
}
