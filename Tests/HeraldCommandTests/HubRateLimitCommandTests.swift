import Foundation
import HeraldTestSupport
import Testing

/// `herald hub set-credentials … --rate-limit PLATFORM=N/min`, as a user runs it.
@Suite("herald hub set-credentials --rate-limit")
struct HubRateLimitCommandTests {
    @Test func aRateIsSetShownAndReturnedToTheDefault() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-rate-cli-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: directory) }
        func herald(_ arguments: [String]) async throws -> HeraldCommand.Result {
            try await HeraldCommand.run(["hub"] + arguments + ["--data-dir", directory.path], environment: ["HERALD_LOG_LEVEL": "error"])
        }
        #expect(try await herald(["create", "ratehub"]).status == 0)

        let set = try await herald(["set-credentials", "ratehub", "--rate-limit", "fcm=1000/s", "--rate-limit", "apns=90000/min"])
        #expect(set.status == 0, "\(set.error)")
        #expect(set.output.contains("Hub ratehub sends with its apns credential at most 90000/min."), "\(set.output)")
        #expect(set.output.contains("Hub ratehub sends with its fcm credential at most 60000/min."), "\(set.output)")
        let shown = try await herald(["credentials", "ratehub"]).output
        #expect(shown.contains("send rate apns 90000/min") && shown.contains("send rate fcm 60000/min"), "\(shown)")

        // A rate Herald cannot read is refused, naming it, and changes nothing.
        let bad = try await herald(["set-credentials", "ratehub", "--rate-limit", "fcm=lots"])
        #expect(bad.status != 0)
        #expect(bad.error.contains("--rate-limit fcm=lots"), "\(bad.error)")
        let noPlatform = try await herald(["set-credentials", "ratehub", "--rate-limit", "pager=10/s"])
        #expect(noPlatform.status != 0)
        #expect(noPlatform.error.contains("platforms: apns, fcm, wns, webpush"), "\(noPlatform.error)")
        #expect(try await herald(["credentials", "ratehub"]).output.contains("send rate fcm 60000/min"))

        let reset = try await herald(["set-credentials", "ratehub", "--rate-limit", "fcm=default", "--rate-limit", "apns=default"])
        #expect(reset.output.contains("fcm credential at most 600000/min (the default)"), "\(reset.output)")
        #expect(reset.output.contains("apns credential without a limit (the default)"), "\(reset.output)")
        #expect(!(try await herald(["credentials", "ratehub"]).output.contains("send rate")))
    }
}
