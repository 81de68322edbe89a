import Foundation
import HeraldTestSupport
import NIOCore
import NIOHPACK
import Testing

@testable import HeraldPush

/// The HTTP/2 client against hyper-h2 (`Tests/Interop/h2_server.py`), a server independent of
/// both the client's framing and NIOHTTP2 (the emulators'): a small stream limit and stream
/// window, a small HPACK table, a PING, and every frame the client sends checked by hyper-h2.
@Suite(
    .timeLimit(.minutes(2)),
    .enabled("needs python3 with h2: pip install h2") { await PythonInterop.canImport("h2") }
)
struct HTTP2InteropTests {
    @Test func burstsWithBodiesOverTheStreamWindowAndALargeHeaderBlock() async throws {
        let directory = try PythonInterop.temporaryDirectory("herald-h2")
        defer { try? FileManager.default.removeItem(at: directory) }
        let portFile = directory.appendingPathComponent("port")
        let sends = 201
        async let server = PythonInterop.run("h2_server.py", arguments: [portFile.path, String(sends)])
        try await eventually("the h2 server listens", within: .seconds(60)) {
            FileManager.default.fileExists(atPath: portFile.path)
        }
        let port = try #require(Int(String(contentsOf: portFile, encoding: .utf8)))

        var configuration = HTTP2Client.Configuration(host: "127.0.0.1", port: port)
        configuration.usesTLS = false
        let client = try HTTP2Client(configuration: configuration)
        // Bodies from none to three stream windows; a field that repeats (into the small table).
        let bodies = (0..<200).map { index in String(repeating: Character(UnicodeScalar(97 + index % 26)!), count: index * 15) }
        let batch = bodies.enumerated().map { index, body in
            var headers = client.headerBlock(path: "/3/device/\(index)", reservingCapacity: 1)
            headers.add(name: "apns-topic", value: "com.example.app")
            return HTTP2Client.BatchRequest(headers: headers, body: body.isEmpty ? nil : ByteBuffer(string: body))
        }
        let answers = await client.send(batch: batch, deadline: .now() + .seconds(60))
        for (index, answer) in answers.enumerated() {
            let response = try answer.result.get()
            #expect(response.status == 200)
            #expect(response.header("x-length") == String(bodies[index].utf8.count))
            #expect(response.header("x-path") == "/3/device/\(index)")
            #expect(response.body.map { String(buffer: $0) } ?? "" == bodies[index])
        }
        // A header block of more than one frame: HEADERS and CONTINUATION.
        let large = try await client.send(
            HTTP2Client.Request(method: "GET", path: "/large", headers: [("x-large", String(repeating: "h", count: 40_000))]),
            deadline: .now() + .seconds(30))
        #expect(large.status == 200)
        await client.shutdown()

        let output = try await server
        try #require(output.status == 0, "\(output.transcript)")
        struct Summary: Decodable {
            var responses: Int
            var connections: Int
            var ping_acks: Int
            var max_open_streams: Int
            var errors: [String]
        }
        let summary = try JSONDecoder().decode(Summary.self, from: Data(output.stdout.utf8))
        #expect(summary.errors == [])
        #expect(summary.responses == sends)
        #expect(summary.connections == 1)
        #expect(summary.ping_acks == 1)
        #expect(summary.max_open_streams <= 4)
    }
}
