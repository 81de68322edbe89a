import Foundation
import Testing

@Suite("herald serve as a user runs it")
struct ServeCommandTests {
    /// A port that is taken is said once, clearly, with no banner claiming that Herald listens.
    @Test(arguments: ["port", "tls-port"])
    func aTakenPortIsAClearErrorAndNoBanner(_ option: String) async throws {
        let taken = try ListeningSocket()
        defer { taken.close() }
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("herald-serve-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: data) }
        let free = try ListeningSocket()
        let freePort = free.port
        free.close()
        let ports = option == "port" ? ["--port", "\(taken.port)", "--tls-port", "0"] : ["--port", "\(freePort)", "--tls-port", "\(taken.port)"]
        let result = try await HeraldCommand.run(["serve", "--data-dir", data] + ports, environment: ["HERALD_LOG_LEVEL": "error"])
        #expect(result.status == 1)
        #expect(!result.output.contains("Herald is listening"), "\(result.output)")
        let name = option == "port" ? "port" : "TLS port"
        #expect(
            result.error.contains("cannot listen on 127.0.0.1:\(taken.port): the address is in use"),
            "\(result.error)"
        )
        #expect(result.error.contains("choose another \(name) with --\(option)"), "\(result.error)")
        // The stores were closed on the way out (a debug build asserts otherwise).
        #expect(!result.error.contains("Assertion failed"), "\(result.error)")
    }
}
