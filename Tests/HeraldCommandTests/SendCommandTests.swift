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
        #expect(!FileManager.default.fileExists(atPath: directory))
    }
}
