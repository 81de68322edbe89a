import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A TCP socket listening on a free port of 127.0.0.1, closed by ``close()``. Nothing accepts
/// its connections: the kernel completes them (up to its backlog) and they wait unanswered,
/// until ``close()`` resets them.
public struct ListeningSocket: Sendable {
    public let descriptor: Int32
    public let port: Int

    public init() throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let descriptor = descriptor
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) } }
        guard bound == 0, listen(descriptor, 1) == 0 else { throw ListeningSocketError(errno: errno) }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) } }
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    public func close() {
        _ = Glibc.close(descriptor)
    }
}

/// The socket could not bind or listen.
public struct ListeningSocketError: Error, CustomStringConvertible {
    public let errno: Int32
    public var description: String { "cannot listen on 127.0.0.1: errno \(errno)" }
}
