import Foundation
import Testing

/// `herald hub idempotency-retention`: sets and resets how long a hub keeps the
/// Idempotency-Key of its sends; refuses more than 30 days.
@Suite struct HubIdempotencyCommandTests {
    @Test func theRetentionIsSetCheckedAndReset() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-idempotency-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let data = directory.path
        func herald(_ arguments: [String]) async throws -> HeraldCommand.Result {
            try await HeraldCommand.run(["hub"] + arguments + ["--data-dir", data], environment: ["HERALD_LOG_LEVEL": "error"])
        }
        #expect(try await herald(["create", "keyhub"]).status == 0)

        let set = try await herald(["idempotency-retention", "keyhub", "604800"])
        #expect(set.status == 0, "\(set.error)")
        #expect(set.output.contains("Hub keyhub keeps the Idempotency-Key of a send for 604800 seconds."), "\(set.output)")

        let tooLong = try await herald(["idempotency-retention", "keyhub", "2592001"])
        #expect(tooLong.status != 0)
        #expect(tooLong.error.contains("1 second to 30 days"), "\(tooLong.error)")

        let neither = try await herald(["idempotency-retention", "keyhub"])
        #expect(neither.status != 0)
        #expect(neither.error.contains("--default"), "\(neither.error)")

        let reset = try await herald(["idempotency-retention", "keyhub", "--default"])
        #expect(reset.status == 0, "\(reset.error)")
        #expect(reset.output.contains("24 hours (the default)"), "\(reset.output)")
    }
}
