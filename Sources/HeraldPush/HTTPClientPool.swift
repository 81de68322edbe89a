import AsyncHTTPClient
import NIOCore
import NIOSSL
import Synchronization

/// A fixed set of HTTP clients that requests are spread over, round-robin.
///
/// AsyncHTTPClient multiplexes every request to one host over a single HTTP/2 connection
/// per client, so a provider that wants several connections keeps several clients.
final class HTTPClientPool: Sendable {
    let clients: [HTTPClient]
    private let counter = Atomic<Int>(0)
    private let isShutdown = Atomic<Bool>(false)

    init(count: Int, trustRoots: [NIOSSLCertificate]?, timeout: Duration, connectTimeout: Duration) {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let trustRoots { tls.trustRoots = .certificates(trustRoots) }
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.httpVersion = .automatic
        configuration.redirectConfiguration = .disallow
        configuration.decompression = .disabled
        configuration.timeout = .init(connect: .connectionSetup(connectTimeout, within: timeout))
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
