import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A real listening socket in front of a live server that passes every HTTP/1.1 request on and
/// relays the answer, except that it drops the connection of the first `drops` requests after
/// the server answered them: the client never gets that answer, as when a connection breaks
/// after the server did its work. One request per connection, blocking sockets on a thread
/// of its own (a test fixture; the server under test is untouched).
final class DroppingProxy: Sendable {
    let port: Int
    private let listener: Int32
    private let prefix: [UInt8]
    private let state: Mutex<(dropsLeft: Int, requests: Int)>

    /// How many requests the proxy passed on so far.
    var requests: Int { state.withLock { $0.requests } }

    /// Drops the answers of the first `drops` requests whose request line starts with
    /// `prefix` (any request when it is empty).
    init(upstreamPort: Int, drops: Int, prefix: String = "") throws {
        state = Mutex((drops, 0))
        self.prefix = Array(prefix.utf8)
        let listening = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listening, $0, length) } }
        guard bound == 0, listen(listening, 16) == 0 else { throw TestFailure("the proxy cannot listen") }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listening, $0, &length) } }
        port = Int(UInt16(bigEndian: address.sin_port))
        listener = listening
        Thread.detachNewThread { [self] in
            while true {
                let client = accept(listening, nil, nil)
                guard client >= 0 else { return }
                Thread.detachNewThread { self.relay(client, upstreamPort: upstreamPort) }
            }
        }
    }

    /// Stops listening (connections in progress end by themselves).
    func close() {
        shutdown(listener, Int32(SHUT_RDWR))
        Glibc.close(listener)
    }

    private func relay(_ client: Int32, upstreamPort: Int) {
        defer { Glibc.close(client) }
        guard let request = Self.readMessage(client) else { return }
        let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { Glibc.close(upstream) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(upstreamPort).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0, Self.writeAll(upstream, request), let answer = Self.readMessage(upstream) else { return }
        let matches = request.starts(with: prefix)
        let drop = state.withLock { state in
            state.requests += 1
            guard matches, state.dropsLeft > 0 else { return false }
            state.dropsLeft -= 1
            return true
        }
        if drop { return }
        _ = Self.writeAll(client, answer)
    }

    /// One HTTP/1.1 message: its head and a body of its `Content-Length` (0 when none).
    private static func readMessage(_ socket: Int32) -> [UInt8]? {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        while true {
            if let end = bytes.firstRange(of: separator)?.upperBound {
                let head = String(decoding: bytes[..<end], as: UTF8.self).lowercased()
                let length =
                    head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                    .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
                if bytes.count >= end + length { return Array(bytes[..<(end + length)]) }
            }
            let count = recv(socket, &buffer, buffer.count, 0)
            guard count > 0 else { return nil }
            bytes += buffer[..<count]
        }
    }

    private static func writeAll(_ socket: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }
}
