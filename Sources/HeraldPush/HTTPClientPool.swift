import AsyncHTTPClient
import NIOCore
import NIOSSL
import Synchronization

/// A fixed set of HTTP clients that requests are spread over, round-robin.
///
/// AsyncHTTPClient multiplexes every request to one host over a single HTTP/2 connection
/// per client, so a provider that wants several connections keeps several clients.
///
/// The pool counts its open connections: AsyncHTTPClient does not report them, but calls its
/// connection initializers (`http1_1ConnectionDebugInitializer`,
/// `http2ConnectionDebugInitializer`) once for each connection it has set up, with the
/// connection's channel, whose close is then counted too.
final class HTTPClientPool: Sendable {
    let clients: [HTTPClient]
    private let counter = Atomic<Int>(0)
    private let isShutdown = Atomic<Bool>(false)
    private let connections = ConnectionCount()

    /// The connections open now, to every host the pool's clients reach (a push service, its
    /// token endpoint).
    var openConnections: Int { connections.value }

    init(count: Int, trustRoots: [NIOSSLCertificate]?, timeout: Duration, connectTimeout: Duration) {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let trustRoots { tls.trustRoots = .certificates(trustRoots) }
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.httpVersion = .automatic
        configuration.redirectConfiguration = .disallow
        configuration.decompression = .disabled
        configuration.timeout = .init(connect: .connectionSetup(connectTimeout, within: timeout))
        let connections = self.connections
        let counted: @Sendable (any Channel) -> EventLoopFuture<Void> = { channel in
            connections.opened(channel)
            return channel.eventLoop.makeSucceededVoidFuture()
        }
        configuration.http1_1ConnectionDebugInitializer = counted
        configuration.http2ConnectionDebugInitializer = counted
        self.clients = (0..<max(1, count)).map { _ in HTTPClient(configuration: configuration) }
    }

    /// The next client, round-robin.
    func next() -> HTTPClient {
        let n = counter.wrappingAdd(1, ordering: .relaxed).oldValue
        return clients[Int(UInt(bitPattern: n) % UInt(clients.count))]
    }

    var isShutDown: Bool { isShutdown.load(ordering: .acquiring) }

    /// Shuts every client down; later calls do nothing.
    func shutdown() async throws {
        guard !isShutdown.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var firstError: (any Error)?
        for client in clients {
            do { try await client.shutdown() } catch { firstError = firstError ?? error }
        }
        if let firstError { throw firstError }
    }
}

/// Connections open now: one more when a connection is set up, one fewer when its channel closes.
private final class ConnectionCount: Sendable {
    private let open = Atomic<Int>(0)

    var value: Int { max(0, open.load(ordering: .relaxed)) }

    func opened(_ channel: any Channel) {
        open.add(1, ordering: .relaxed)
        channel.closeFuture.whenComplete { [self] _ in
            open.subtract(1, ordering: .relaxed)
        }
    }
}
