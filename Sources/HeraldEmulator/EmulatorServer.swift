import Foundation
import HeraldTLS
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import NIOTLS
import ServiceLifecycle
import Synchronization

/// The HTTP/2-over-TLS server that every emulator runs on: TLS with ALPN `h2` and `http/1.1`
/// (and, without ALPN, HTTP/2 with prior knowledge or HTTP/1.1, told apart by the first bytes),
/// HTTP/2 handled frame by frame, HTTP/1.1 through NIO's server pipeline, graceful shutdown
/// (GOAWAY, serve what was started, close).
final class EmulatorServer: Sendable {
    struct Configuration: Sendable {
        var host: String
        var port: Int
        var identity: TLSIdentity
        var maxConcurrentStreams: Int
        /// Larger request bodies are refused with 413 before they are read whole.
        var maxBodySize: Int = 1 << 20
        /// How long connections get to finish their requests on shutdown before they are closed.
        var shutdownGracePeriod: TimeAmount = .seconds(5)
        var eventLoopGroup: (any EventLoopGroup)?
        /// Whether TLS clients are asked for a certificate (optional: clients without one are
        /// served too). A presented certificate outside its validity period at `now` fails the
        /// handshake, as APNs fails it for an expired certificate; which CA issued it is the
        /// responder's to check.
        var requestsClientCertificates = false
        var now: @Sendable () -> Date = Date.init
    }

    private struct Lifecycle {
        var connections: [ObjectIdentifier: any Channel] = [:]
        var shuttingDown = false
        var closed = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let serverChannel: any Channel
    private let tracker: ConnectionTracker
    private let gracePeriod: TimeAmount
    private let logger: Logger
    /// The bound port.
    let port: Int

    private init(serverChannel: any Channel, tracker: ConnectionTracker, gracePeriod: TimeAmount, logger: Logger) {
        self.serverChannel = serverChannel
        self.tracker = tracker
        self.gracePeriod = gracePeriod
        self.logger = logger
        self.port = serverChannel.localAddress?.port ?? 0
    }

    /// Binds and starts serving with `responder`.
    static func start<Responder: EmulatorResponder>(
        configuration: Configuration,
        responder: Responder,
        logger: Logger
    ) async throws -> EmulatorServer {
        var tls = configuration.identity.makeServerConfiguration()
        let requestsClientCertificates = configuration.requestsClientCertificates
        if requestsClientCertificates { tls.certificateVerification = .optionalVerification }
        let sslContext = try NIOSSLContext(configuration: tls)
        let now = configuration.now
        let tracker = ConnectionTracker()
        var settings = HTTP2Settings()
        settings.append(HTTP2Setting(parameter: .maxConcurrentStreams, value: configuration.maxConcurrentStreams))
        settings.append(HTTP2Setting(parameter: .maxHeaderListSize, value: 64 * 1024))
        settings.append(HTTP2Setting(parameter: .initialWindowSize, value: 1 << 20))
        let connectionConfiguration = {
            var connection = NIOHTTP2Handler.ConnectionConfiguration()
            connection.initialSettings = settings
            return connection
        }()
        let streamWindow = 1 << 20
        let maxBodySize = configuration.maxBodySize
        let group = configuration.eventLoopGroup ?? MultiThreadedEventLoopGroup.singleton

        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelOption(.maxMessagesPerRead, value: 16)
            .childChannelInitializer { channel in
                guard tracker.register(channel) else {
                    return channel.close()
                }
                return channel.eventLoop.makeCompletedFuture {
                    let handler: NIOSSLServerHandler
                    if requestsClientCertificates {
                        handler = NIOSSLServerHandler(context: sslContext) { chain, promise in
                            // Only the validity period here; the responder checks the issuer.
                            let valid = chain.first.flatMap(ClientCertificate.validity(of:))?.contains(now()) ?? false
                            promise.succeed(valid ? .certificateVerified : .failed)
                        }
                    } else {
                        handler = NIOSSLServerHandler(context: sslContext)
                    }
                    try channel.pipeline.syncOperations.addHandler(handler)
                }.flatMap {
                    // Asked once the handshake is done (the protocol is chosen after it).
                    let clientCertificate: @Sendable (any Channel) -> NIOSSLCertificate? = { channel in
                        guard requestsClientCertificates else { return nil }
                        return try? channel.pipeline.syncOperations.handler(type: NIOSSLServerHandler.self).peerCertificate
                    }
                    let http2: HTTPVersionSniffer.Configurator = { channel in
                        channel.eventLoop.makeCompletedFuture {
                            let sync = channel.pipeline.syncOperations
                            try sync.addHandler(NIOHTTP2Handler(mode: .server, connectionConfiguration: connectionConfiguration))
                            try sync.addHandler(
                                HTTP2EmulatorHandler(
                                    responder: responder, maxBodySize: maxBodySize, streamWindow: streamWindow,
                                    clientCertificate: clientCertificate(channel))
                            )
                        }
                    }
                    let http1: HTTPVersionSniffer.Configurator = { channel in
                        channel.eventLoop.makeCompletedFuture {
                            let sync = channel.pipeline.syncOperations
                            try sync.configureHTTPServerPipeline(withErrorHandling: true)
                            try sync.addHandler(
                                HTTP1EmulatorHandler(
                                    responder: responder, maxBodySize: maxBodySize, clientCertificate: clientCertificate(channel)))
                        }
                    }
                    // ALPN decides; without it (a client with prior knowledge, as real APNs
                    // allows) the first bytes do.
                    return channel.eventLoop.makeCompletedFuture {
                        let negotiation = ApplicationProtocolNegotiationHandler { result, channel in
                            switch result {
                            case .negotiated("h2"):
                                return http2(channel)
                            case .negotiated("http/1.1"):
                                return http1(channel)
                            case .fallback:
                                return channel.eventLoop.makeCompletedFuture {
                                    try channel.pipeline.syncOperations.addHandler(HTTPVersionSniffer(http2: http2, http1: http1))
                                }
                            case .negotiated:
                                return channel.close()
                            }
                        }
                        try channel.pipeline.syncOperations.addHandler(negotiation)
                    }
                }
            }
            .bind(host: configuration.host, port: configuration.port)
            .get()

        let server = EmulatorServer(
            serverChannel: channel,
            tracker: tracker,
            gracePeriod: configuration.shutdownGracePeriod,
            logger: logger
        )
        logger.debug("emulator listening", metadata: ["herald.emulator.port": "\(server.port)"])
        return server
    }

    /// Stops accepting, asks every connection to finish (HTTP/2 GOAWAY, HTTP/1 close when idle),
    /// and closes whatever is still open after the grace period. Idempotent; returns at once.
    func beginShutdown() {
        let connections: [any Channel]? = tracker.lifecycle.withLock { state in
            guard !state.shuttingDown else { return nil }
            state.shuttingDown = true
            return Array(state.connections.values)
        }
        guard let connections else { return }
        logger.debug("emulator shutting down", metadata: ["herald.emulator.port": "\(port)"])

        serverChannel.close(promise: nil)
        let grace = gracePeriod
        for connection in connections {
            connection.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
            connection.eventLoop.scheduleTask(in: grace) { connection.close(promise: nil) }
        }
        let futures = [serverChannel.closeFuture] + connections.map(\.closeFuture)
        EventLoopFuture.andAllComplete(futures, on: serverChannel.eventLoop).whenComplete { _ in
            let waiters = self.tracker.lifecycle.withLock { state in
                state.closed = true
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }
    }

    /// Suspends until ``beginShutdown()`` has finished closing everything.
    func waitUntilClosed() async {
        await withCheckedContinuation { continuation in
            let closed = tracker.lifecycle.withLock { state in
                if state.closed { return true }
                state.waiters.append(continuation)
                return false
            }
            if closed { continuation.resume() }
        }
    }

    func shutdown() async {
        beginShutdown()
        await waitUntilClosed()
    }

    /// Serves until graceful shutdown (ServiceLifecycle) or cancellation, then shuts down.
    func run() async {
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                await waitUntilClosed()
            } onGracefulShutdown: {
                self.beginShutdown()
            }
        } onCancel: {
            self.beginShutdown()
        }
    }

    /// Keeps the set of open connections, so that shutdown can reach them.
    private final class ConnectionTracker: Sendable {
        let lifecycle = Mutex(Lifecycle())

        /// Adds `channel`, or returns `false` if the server is already shutting down.
        func register(_ channel: any Channel) -> Bool {
            let id = ObjectIdentifier(channel)
            let accepted = lifecycle.withLock { state in
                guard !state.shuttingDown else { return false }
                state.connections[id] = channel
                return true
            }
            if accepted {
                channel.closeFuture.whenComplete { _ in
                    _ = self.lifecycle.withLock { $0.connections.removeValue(forKey: id) }
                }
            }
            return accepted
        }
    }
}

/// The listening settings every emulator's configuration has; the server's configuration
/// is derived from them in one place.
protocol EmulatorServerSettings {
    var host: String { get }
    var port: Int { get }
    var identity: TLSIdentity { get }
    var maxConcurrentStreams: Int { get }
    var eventLoopGroup: (any EventLoopGroup)? { get }
    /// Whether TLS clients are asked for a certificate (``EmulatorServer/Configuration/requestsClientCertificates``).
    var requestsClientCertificates: Bool { get }
    var now: @Sendable () -> Date { get }
}

extension EmulatorServerSettings {
    /// Only the APNs emulator asks for client certificates.
    var requestsClientCertificates: Bool { false }

    var serverConfiguration: EmulatorServer.Configuration {
        EmulatorServer.Configuration(
            host: host,
            port: port,
            identity: identity,
            maxConcurrentStreams: maxConcurrentStreams,
            eventLoopGroup: eventLoopGroup,
            requestsClientCertificates: requestsClientCertificates,
            now: now
        )
    }
}
