import Foundation
import HeraldTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `herald device` confirms what arrives, as an app would: against a `herald serve` with its
/// built-in emulators, a notification to the device's user is printed and confirmed with its
/// `herald.id` (`POST /api/receipts`); with `--no-confirm` it is printed only.
@Suite("herald device confirms what arrives", .timeLimit(.minutes(4)))
struct DeviceReceiptCommandTests {
    @Test(arguments: [true, false])
    func aDeviceConfirmsUnlessToldNotTo(confirms: Bool) async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("herald-receipt-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: data) }
        let portSocket = try ListeningSocket()
        let port = portSocket.port
        portSocket.close()
        let serve = try HeraldCommand.launch(
            ["serve", "--data-dir", data, "--port", "\(port)", "--tls-port", "0"], environment: ["HERALD_LOG_LEVEL": "error"])
        defer {
            HeraldCommand.stop(serve)
            try? FileManager.default.removeItem(at: serve.directory)
        }
        try await HeraldCommand.waitUntil(printed: "Herald is listening", by: serve)
        let base = "http://127.0.0.1:\(port)"
        let device = try HeraldCommand.launch(
            ["device", "--server", base, "--user", "alice", "--password", "correct horse battery", "--sign-up", "--count", "1", "--timeout", "120"]
                + (confirms ? [] : ["--no-confirm"]),
            environment: [:])
        defer {
            HeraldCommand.stop(device)
            try? FileManager.default.removeItem(at: device.directory)
        }
        try await HeraldCommand.waitUntil(printed: "waiting for notifications", by: device)

        // Bob notifies alice through the app backend.
        _ = try await Self.call(base, "POST", "/api/accounts", body: #"{"username":"bob","password":"bob-password-1"}"#)
        let signIn = try await Self.call(base, "POST", "/api/token", body: #"{"username":"bob","password":"bob-password-1"}"#)
        let token = try #require((try JSONSerialization.jsonObject(with: signIn) as? [String: Any])?["token"] as? String)
        let sent = try await Self.call(base, "POST", "/api/notifications?to_tag=alice", body: #""Dinner at 8?""#, bearer: token)
        let id = try #require((try JSONSerialization.jsonObject(with: sent) as? [String: Any])?["id"] as? String)

        let deadline = ContinuousClock.now + .seconds(60)
        while device.process.isRunning && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(100)) }
        let output = device.printed
        #expect(device.process.terminationStatus == 0, "\(output)\n\(device.printedErrors)")
        #expect(output.contains(#""herald.id":"\#(id)""#), "the payload carries the notification's id: \(output)")
        #expect(output.contains("confirmed \(id) (POST /api/receipts)") == confirms, "\(output)")
        #expect(!output.contains("could not confirm"), "\(output)")
    }

    /// A request to the app backend; throws unless it answers 2xx.
    private static func call(_ base: String, _ method: String, _ path: String, body: String, bearer: String? = nil) async throws -> Data {
        var request = URLRequest(url: URL(string: base + path)!)
        request.httpMethod = method
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        if let bearer { request.setValue("Bearer \(bearer)", forHTTPHeaderField: "Authorization") }
        request.httpBody = Data(body.utf8)
        let (data, response) = try await URLSession.shared.data(for: request)
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        guard (200..<300).contains(status) else {
            throw HeraldCommand.Failure(description: "\(method) \(path): \(status) \(String(decoding: data, as: UTF8.self))")
        }
        return data
    }
}
