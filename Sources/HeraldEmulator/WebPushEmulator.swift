public import Crypto
public import Foundation
public import HeraldTLS
public import Logging
public import NIOCore
public import ServiceLifecycle

/// A local Web Push service (RFC 8030) over HTTP/2 or HTTP/1.1 and TLS: it issues subscriptions
/// the way a browser's push service does (an endpoint, and the user agent's key pair and auth
/// secret, whose private half it keeps), checks VAPID (RFC 8292) on every message, decrypts the
/// `aes128gcm` body (RFC 8291) and records the plaintext as what the virtual browser received.
///
/// Start it with ``start(configuration:logger:)``; run it in a `ServiceGroup` (``run()`` returns
/// after graceful shutdown) or call ``shutdown()``. Control it in process or over HTTP on the same
/// port under `/_emulator/` (`POST /_emulator/subscriptions` issues a subscription).
public final class WebPushEmulator: Service, Sendable {
    public struct Configuration: Sendable {
        public var host = "127.0.0.1"
        /// 0 picks a free port; read it from ``WebPushEmulator/port``.
        public var port = 0
        public var identity: TLSIdentity
        /// The base URL in subscription endpoints, and the origin VAPID tokens must name as `aud`;
        /// `nil` uses ``WebPushEmulator/baseURL``. Set it when clients reach the emulator by
        /// another name (a proxy, a container's host name).
        public var publicBaseURL: String? = nil
        /// `false` accepts messages without VAPID (RFC 8030 alone); a token that is present is
        /// still checked.
        public var requiresVAPID = true
        /// Larger bodies get 413. RFC 8030 asks push services to accept at least 4096 bytes.
        public var maxMessageSize = 4096
        /// Keep received payloads per subscription (the inbox).
        public var recordsPayloads = true
        /// At most this many notifications are kept per subscription, the newest; every one is
        /// still counted (the stats), so that memory stays bounded however long the emulator runs.
        public var inboxLimit = 100
        public var maxConcurrentStreams = 1000
        /// The event loops to serve on; `nil` uses NIO's shared singleton group.
        public var eventLoopGroup: (any EventLoopGroup)? = nil
        public var now: @Sendable () -> Date = Date.init

        public init(identity: TLSIdentity) {
            self.identity = identity
        }
    }

    private let server: EmulatorServer
    private let responder: WebPushResponder
    private let host: String

    private init(server: EmulatorServer, responder: WebPushResponder, host: String) {
        self.server = server
        self.responder = responder
        self.host = host
    }

    /// Binds and starts serving. `port` is the bound port.
    public static func start(configuration: Configuration, logger: Logger) async throws -> WebPushEmulator {
        let responder = WebPushResponder(configuration: configuration, logger: logger)
        let server = try await EmulatorServer.start(
            configuration: configuration.serverConfiguration,
            responder: responder,
            logger: logger
        )
        let emulator = WebPushEmulator(server: server, responder: responder, host: configuration.host)
        responder.setPublicBaseURL(configuration.publicBaseURL ?? emulator.baseURL)
        return emulator
    }

    /// The bound port.
    public var port: Int { server.port }
    /// `https://HOST:PORT`.
    public var baseURL: String { EmulatorURL.base(host: host, port: port) }
    /// The origin that VAPID tokens must carry as `aud` (from ``Configuration/publicBaseURL``).
    public var origin: String { responder.origin }

    /// Serves until graceful shutdown or cancellation, then closes (in-flight requests are answered).
    public func run() async throws {
        await server.run()
    }

    /// Stops accepting connections, lets open ones finish, and returns when all are closed.
    public func shutdown() async throws {
        await server.shutdown()
    }

    // MARK: - Control

    /// A new subscription, as `pushManager.subscribe()` would return it: a fresh P-256 key pair
    /// and auth secret for the virtual browser, which keeps the private key to decrypt.
    ///
    /// - Parameter applicationServerKey: restricts the subscription to VAPID tokens signed by
    ///   this key (RFC 8292 §4.2); others get 403.
    public func subscribe(applicationServerKey: P256.Signing.PublicKey? = nil) -> WebPushSubscription {
        responder.subscribe(applicationServerKey: applicationServerKey)
    }

    /// What the subscription received, oldest first: the decrypted plaintext as `payload`
    /// (UTF-8; base64 with header `x-herald-payload-encoding: base64` if it is not UTF-8) and the
    /// `ttl`, `urgency` and `topic` headers.
    public func notifications(for subscription: WebPushSubscription) -> [ReceivedNotification] {
        responder.notifications(for: subscription.endpoint)
    }

    /// What the subscription with this endpoint (or id) received, oldest first.
    public func notifications(for endpoint: String) -> [ReceivedNotification] {
        responder.notifications(for: endpoint)
    }

    /// The user unsubscribed: later messages to the subscription get 410 Gone.
    public func unregister(_ subscription: WebPushSubscription) {
        _ = responder.controlUnregister(token: subscription.endpoint)
    }

    /// Later messages to the subscription with this endpoint (or id) get 410 Gone.
    public func unregister(endpoint: String) {
        _ = responder.controlUnregister(token: endpoint)
    }

    /// The next `count` messages that pass validation are answered with `fault`
    /// (`{"reason": …}`, `retry-after` if set).
    public func injectFaults(_ fault: Fault, count: Int) {
        responder.injectFaults(fault, count: count)
    }

    /// Drops faults not yet used.
    public func clearFaults() {
        responder.clearFaults()
    }

    /// Total messages accepted (201s).
    /// Its devices' receipts: ``DeviceReceipts/configure(_:)`` makes them confirm what they receive.
    public var receipts: DeviceReceipts { responder.receipts }

    public var acceptedCount: Int { responder.acceptedCount }
}

extension WebPushEmulator.Configuration: EmulatorServerSettings {}
