import Foundation
import NIOCore
import NIOPosix

/// A client of a live server that connects from a loopback address of the test's choosing
/// (`127.0.0.2`, `127.0.0.3`…: the whole of 127/8 is loopback on Linux), so that one test can
/// be several clients, each with an address of its own, over real sockets.
struct LoopbackClient: Sendable {
    /// The address the connections come from.
    let address: String
    /// The server's port, on `host`.
    let port: Int
    var host = "127.0.0.1"

    /// A raw answer: status, headers (by lower-case name) and body.
    struct Answer: Sendable, CustomStringConvertible {
        var status: Int
        var headers: [String: String]
        var body: String

        init(_ text: String) {
            let parts = text.components(separatedBy: "\r\n\r\n")
            let head = parts[0].components(separatedBy: "\r\n")
            status = head.first.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
            var headers: [String: String] = [:]
            for line in head.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            self.headers = headers
            body = parts.dropFirst().joined(separator: "\r\n\r\n")
        }

        var description: String { "\(status) \(body)" }
    }

    private func bootstrap() throws -> ClientBootstrap {
        ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(to: try SocketAddress(ipAddress: address, port: 0))
    }

    /// Sends one request with `Connection: close` and reads the answer until the server closes
    /// the connection.
    func request(_ method: String, _ path: String, headers: [(String, String)] = [], body: String? = nil) async throws -> Answer {
        let channel = try await bootstrap().connect(host: host, port: port) { channel in
            channel.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel) }
        }
        return try await channel.executeThenClose { inbound, outbound in
            var text = "\(method) \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nConnection: close\r\n"
            for (name, value) in headers { text += "\(name): \(value)\r\n" }
            if let body { text += "Content-Length: \(body.utf8.count)\r\n" }
            text += "\r\n" + (body ?? "")
            // A connection refused at once may be closed before the request is written: its
            // answer is still there to read.
            try? await outbound.write(ByteBuffer(string: text))
            var received = ByteBuffer()
            do {
                for try await var chunk in inbound { received.writeBuffer(&chunk) }
            } catch {
                // A reset after the answer: what arrived is the answer.
            }
            return Answer(String(buffer: received))
        }
    }

    /// `POST path` with a JSON body.
    func post(_ path: String, json: String, headers: [(String, String)] = []) async throws -> Answer {
        try await request("POST", path, headers: headers + [("Content-Type", "application/json")], body: json)
    }

    /// Opens a connection that sends a request's head and the start of a body that never comes:
    /// a connection busy with a request until it is closed.
    func stalledRequest() async throws -> any Channel {
        let channel = try await bootstrap().connect(host: host, port: port).get()
        let head = "POST /api/token HTTP/1.1\r\nHost: \(host)\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
        try await channel.writeAndFlush(ByteBuffer(string: head))
        return channel
    }

    /// Opens a connection that sends nothing.
    func idleConnection() async throws -> any Channel {
        try await bootstrap().connect(host: host, port: port).get()
    }
}
