public import Foundation
public import HeraldTLS
public import Logging
public import NIOCore
public import ServiceLifecycle
import Synchronization

/// A local Windows Push Notification Services: the OAuth2 token endpoint (`POST /accesstoken.srf`,
/// client credentials grant) and channel URIs (`POST /w/?token=…`) answered with the status codes
/// and `X-WNS-*` headers WNS answers with. It records what each channel received and can be told
/// to fail or to take a device offline.
///
/// Start it with ``start(configuration:logger:)``; run it in a `ServiceGroup` (``run()`` returns
/// after graceful shutdown) or call ``shutdown()``. Control it in process or over HTTP on the same
/// port under `/_emulator/`: besides the routes every emulator has (`devices`, `faults`, `stats`;
/// a device is a channel, named by its URI or its token),
///
/// - `POST /_emulator/channels` `{"clientID"?}` → `{"channel": uri}`
/// - `POST /_emulator/channels/connection` `{"channel", "connected": false}` → `{"channel"}`
///
/// Injected faults: ``Fault/throttled`` (and any 406) is answered as WNS throttles, 406 with
/// `X-WNS-Status: channelthrottled`; any other fault with its status and its reason as
/// `X-WNS-Error-Description`. A `retryAfter` is sent as `Retry-After`.
public final class WNSEmulator: Service, Sendable {
    /// An app that may obtain access tokens: its package SID (`client_id`) and client secret.
    public struct App: Sendable, Hashable {
        public var clientID: String
        public var clientSecret: String

        public init(clientID: String, clientSecret: String) {
            self.clientID = clientID
            self.clientSecret = clientSecret
        }
    }

    public struct Configuration: Sendable {
        public var host = "127.0.0.1"
        /// 0 picks a free port; read it from ``WNSEmulator/port``.
        public var port = 0
        public var identity: TLSIdentity
        public var apps: [App]
        /// Seconds an access token is valid for; WNS issues them for a day.
        public var accessTokenLifetime = 86_400
        /// Keep received notifications per channel (the inbox).
        public var recordsPayloads = true
        /// At most this many notifications are kept per channel, the newest; every one is still
        /// counted (the stats), so that memory stays bounded however long the emulator runs.
        public var inboxLimit = 100
        public var maxConcurrentStreams = 1000
        /// The event loops to serve on; `nil` uses NIO's shared singleton group.
        public var eventLoopGroup: (any EventLoopGroup)? = nil
        public var now: @Sendable () -> Date = Date.init

        public init(identity: TLSIdentity, apps: [App]) {
            self.identity = identity
            self.apps = apps
        }
    }

    private let server: EmulatorServer
    private let responder: WNSResponder
    private let host: String

    private init(server: EmulatorServer, responder: WNSResponder, host: String) {
        self.server = server
        self.responder = responder
        self.host = host
    }

    /// Binds and starts serving. `port` is the bound port.
    public static func start(configuration: Configuration, logger: Logger) async throws -> WNSEmulator {
        let responder = WNSResponder(configuration: configuration, logger: logger)
        let server = try await EmulatorServer.start(
            configuration: configuration.serverConfiguration,
            responder: responder,
            logger: logger
        )
        let emulator = WNSEmulator(server: server, responder: responder, host: configuration.host)
        responder.baseURL.withLock { $0 = emulator.baseURL }
        return emulator
    }

    /// The bound port.
    public var port: Int { server.port }
    /// `https://HOST:PORT`.
    public var baseURL: String { EmulatorURL.base(host: host, port: port) }
    /// `baseURL + "/accesstoken.srf"`: where ``WNSConfiguration``'s `tokenURI` should point.
    public var tokenURI: String { baseURL + WNSResponder.tokenPath }

    /// Serves until graceful shutdown or cancellation, then closes (in-flight requests are answered).
    public func run() async throws {
        await server.run()
    }

    /// Stops accepting connections, lets open ones finish, and returns when all are closed.
    public func shutdown() async throws {
        await server.shutdown()
    }

    // MARK: - Control

    /// A new channel URI, `baseURL + "/w/?token=<percent-encoded base64>"`, for the app
    /// `clientID` (the first configured app by default).
    ///
    /// - Precondition: the app is configured.
    public func registerChannel(clientID: String? = nil) -> String {
        do {
            return try responder.registerChannel(clientID: clientID)
        } catch {
            preconditionFailure(error.message)
        }
    }

    /// What the channel received, oldest first. Toast, tile and badge payloads are the XML text;
    /// raw payloads are base64. `headers` holds the request's `X-WNS-*` headers (names
    /// lowercased) and its `content-type`; `id` is the `X-WNS-Msg-ID` answered.
    public func notifications(for channel: String) -> [ReceivedNotification] {
        responder.notifications(for: channel)
    }

    /// Later sends to the channel get 410 Gone.
    public func expire(channel: String) {
        _ = responder.controlUnregister(token: channel)
    }

    /// Takes the channel's device offline (`false`) or back online. While it is offline, toasts
    /// are dropped (`X-WNS-Status: dropped`), raw notifications too unless sent with
    /// `X-WNS-Cache-Policy: cache`, and tiles and badges are kept unless sent with `no-cache`;
    /// answers say `X-WNS-DeviceConnectionStatus: disconnected`.
    public func setConnected(_ connected: Bool, channel: String) {
        _ = responder.setConnected(connected, channel: channel)
    }

    /// The next `count` sends that pass validation are answered with `fault`.
    public func injectFaults(_ fault: Fault, count: Int) {
        responder.injectFaults(fault, count: count)
    }

    /// Drops faults not yet used.
    public func clearFaults() {
        responder.clearFaults()
    }

    /// Total notifications accepted (200 `received`).
    /// Its devices' receipts: ``DeviceReceipts/configure(_:)`` makes them confirm what they receive.
    public var receipts: DeviceReceipts { responder.receipts }

    public var acceptedCount: Int { responder.acceptedCount }

    /// Total requests to the token endpoint, granted or not.
    public var tokenRequestCount: Int { responder.tokenRequestCount }
}

extension WNSEmulator.Configuration: EmulatorServerSettings {}
