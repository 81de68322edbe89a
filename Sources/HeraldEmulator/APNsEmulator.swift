public import Crypto
public import Foundation
public import HeraldCore
public import HeraldTLS
public import Logging
public import NIOCore
public import ServiceLifecycle

/// A local APNs: HTTP/2 over TLS, provider-token (ES256 JWT) and client-certificate
/// authentication, and the status codes and reasons APNs answers with. It records what each virtual device received and can be told
/// to fail.
///
/// Start it with ``start(configuration:logger:)``; run it in a `ServiceGroup` (``run()`` returns
/// after graceful shutdown) or call ``shutdown()``. Control it in process or over HTTP on the same
/// port under `/_emulator/`.
public final class APNsEmulator: Service, Sendable {
    /// A key that may sign provider tokens: the public half of an APNs `.p8` key.
    public struct SigningKey: Sendable {
        public var keyID: String
        public var teamID: String
        public var publicKey: P256.Signing.PublicKey

        public init(keyID: String, teamID: String, publicKey: P256.Signing.PublicKey) {
            self.keyID = keyID
            self.teamID = teamID
            self.publicKey = publicKey
        }
    }

    /// How many Live Activities one push-to-start token (one app's activity type on one device)
    /// may start within `interval` seconds; more are answered 429 `TooManyRequests`. Apple
    /// limits starts per device without publishing the number.
    public struct PushToStartBudget: Sendable, Hashable {
        public var starts: Int
        public var interval: TimeInterval

        public init(starts: Int, interval: TimeInterval) {
            self.starts = starts
            self.interval = interval
        }

        /// 10 starts an hour.
        public static let `default` = PushToStartBudget(starts: 10, interval: 3600)
    }

    public struct Configuration: Sendable {
        public var host = "127.0.0.1"
        /// 0 picks a free port; read it from ``APNsEmulator/port``.
        public var port = 0
        /// The port of the broadcast channel management API (APNs serves it on a host and port of
        /// its own, `api-manage-broadcast.push.apple.com:2196`); 0 picks a free port, `nil` serves none.
        /// Read it from ``APNsEmulator/broadcastPort``.
        public var broadcastPort: Int? = 0
        /// Broadcast channels an app may have; creating one more is answered 400 `CannotCreateChannelConfig`.
        public var channelLimit = 10_000
        /// Push-to-start budget per token; `nil` for none.
        public var pushToStartBudget: PushToStartBudget? = .default
        public var identity: TLSIdentity
        public var signingKeys: [SigningKey]
        /// The CA whose client certificates authenticate requests without a provider token
        /// (certificate authentication); `nil` asks for no client certificate.
        ///
        /// TLS clients are asked for a certificate but need not present one (token clients do
        /// not). An expired (or not yet valid) certificate fails the TLS handshake, as APNs
        /// fails it. A request without an `authorization` header needs a certificate of this
        /// CA on its connection, else 403 `MissingProviderToken`; its `apns-topic` must be the
        /// certificate's subject `UID` (or that with APNs' `.voip`, `.complication`, …
        /// suffixes), else 400 `TopicDisallowed`. A request with a provider token is checked
        /// as a token request, whatever certificate its connection presented.
        public var clientCertificateAuthority: CertificateAuthority? = nil
        /// Allowed `apns-topic` values (with APNs' `.voip`, `.complication`, … suffixes); empty = any.
        public var topics: Set<String> = []
        /// `true`: any well-formed token is a device (benchmarks). `false`: only tokens from
        /// ``APNsEmulator/registerDevice(topic:)`` are valid, others get 400 BadDeviceToken.
        public var openDeviceRegistry = false
        /// Keep received payloads per device (the inbox).
        public var recordsPayloads = true
        /// At most this many notifications are kept per device, the newest; every one is still
        /// counted (the stats), so that memory stays bounded however long the emulator runs.
        public var inboxLimit = 100
        public var maxConcurrentStreams = 1000
        /// Provider tokens older than this (seconds) get 403 ExpiredProviderToken.
        public var providerTokenLifetime: TimeInterval = 3600
        /// A key presenting a new token sooner than this (seconds) after its previous new token
        /// gets 429 TooManyProviderTokenUpdates. 0 turns the check off.
        public var minimumProviderTokenInterval: TimeInterval = 20 * 60
        /// The event loops to serve on; `nil` uses NIO's shared singleton group.
        public var eventLoopGroup: (any EventLoopGroup)? = nil
        public var now: @Sendable () -> Date = Date.init

        public init(identity: TLSIdentity, signingKeys: [SigningKey]) {
            self.identity = identity
            self.signingKeys = signingKeys
        }
    }

    private let server: EmulatorServer
    private let broadcastServer: EmulatorServer?
    private let responder: APNsResponder
    private let host: String

    private init(server: EmulatorServer, broadcastServer: EmulatorServer?, responder: APNsResponder, host: String) {
        self.server = server
        self.broadcastServer = broadcastServer
        self.responder = responder
        self.host = host
    }

    /// Binds and starts serving. `port` is the bound port.
    public static func start(configuration: Configuration, logger: Logger) async throws -> APNsEmulator {
        let responder = APNsResponder(configuration: configuration, logger: logger)
        let server = try await EmulatorServer.start(
            configuration: configuration.serverConfiguration,
            responder: responder,
            logger: logger
        )
        var broadcastServer: EmulatorServer?
        if let broadcastPort = configuration.broadcastPort {
            var settings = configuration.serverConfiguration
            settings.port = broadcastPort
            do {
                broadcastServer = try await EmulatorServer.start(
                    configuration: settings, responder: APNsBroadcastResponder(apns: responder), logger: logger)
            } catch {
                await server.shutdown()
                throw error
            }
        }
        return APNsEmulator(server: server, broadcastServer: broadcastServer, responder: responder, host: configuration.host)
    }

    /// The bound port.
    public var port: Int { server.port }
    /// `https://HOST:PORT`.
    public var baseURL: String { EmulatorURL.base(host: host, port: port) }
    /// The bound port of the broadcast channel management API, if it is served.
    public var broadcastPort: Int? { broadcastServer?.port }
    /// `https://HOST:PORT` of the broadcast channel management API, if it is served.
    public var broadcastBaseURL: String? { broadcastPort.map { EmulatorURL.base(host: host, port: $0) } }

    /// Serves until graceful shutdown or cancellation, then closes (in-flight requests are answered).
    public func run() async throws {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.server.run() }
            if let broadcastServer = self.broadcastServer {
                group.addTask { await broadcastServer.run() }
            }
        }
    }

    /// Stops accepting connections, lets open ones finish, and returns when all are closed.
    public func shutdown() async throws {
        server.beginShutdown()
        broadcastServer?.beginShutdown()
        await server.waitUntilClosed()
        await broadcastServer?.waitUntilClosed()
    }

    // MARK: - Control

    /// A new random 32-byte token (64 lowercase hex) for a device of the app `topic`.
    public func registerDevice(topic: String) -> String {
        responder.registerDevice(topic: topic)
    }

    /// What the device received, oldest first.
    public func notifications(for token: String) -> [ReceivedNotification] {
        responder.notifications(for: token)
    }

    /// Later sends to `token` get 410 Unregistered with this moment as `timestamp`.
    public func unregister(token: String) {
        _ = responder.controlUnregister(token: token)
    }

    /// The next `count` requests that pass validation are answered with `fault`.
    public func injectFaults(_ fault: Fault, count: Int) {
        responder.injectFaults(fault, count: count)
    }

    /// Drops faults not yet used.
    public func clearFaults() {
        responder.clearFaults()
    }

    /// Total notifications accepted (200s; a broadcast counts once).
    /// Its devices' receipts: ``DeviceReceipts/configure(_:)`` makes them confirm what they receive.
    public var receipts: DeviceReceipts { responder.receipts }

    public var acceptedCount: Int { responder.acceptedCount }

    // MARK: - Live Activities

    /// A new push-to-start token of the app `topic` for activities of `attributesType` (what
    /// ActivityKit's `pushToStartTokenUpdates` gives the app). Pushes to it take the topic
    /// `<topic>.push-type.liveactivity`.
    public func registerPushToStartToken(topic: String, attributesType: String) -> String {
        responder.registerPushToStartToken(topic: topic, attributesType: attributesType)
    }

    /// An activity the app starts itself: with an update token, or listening on the broadcast
    /// channel `channelID` (which must be one of the app's).
    public func startActivity(
        topic: String, attributesType: String, attributes: JSONValue? = nil, contentState: JSONValue? = nil,
        channelID: String? = nil
    ) throws(APNsEmulatorError) -> LiveActivity {
        do {
            return try responder.startActivity(
                topic: topic, attributesType: attributesType, attributes: attributes, contentState: contentState,
                channelID: channelID)
        } catch {
            throw APNsEmulatorError(reason: error.reason.rawValue)
        }
    }

    /// The activity `id` as it is now.
    public func activity(id: String) -> LiveActivity? {
        responder.liveActivities.activity(id: id, now: responder.configuration.now())
    }

    /// The activity whose update token is `token`, or the activities that the push-to-start
    /// token `token` started, oldest first.
    public func activities(token: String) -> [LiveActivity] {
        responder.liveActivities.activities(token: token.lowercased(), now: responder.configuration.now())
    }

    /// Makes the activity listen on the broadcast channel `channelID` of its app.
    public func subscribe(activityID: String, channelID: String) throws(APNsEmulatorError) {
        do {
            try responder.liveActivities.subscribe(activityID: activityID, channelID: channelID)
        } catch {
            throw APNsEmulatorError(reason: error.reason.rawValue)
        }
    }
}

/// What the APNs emulator's in-process API refused, with the APNs reason (`ChannelNotRegistered`, …).
public struct APNsEmulatorError: Error, Hashable, Sendable {
    public var reason: String
}

enum EmulatorURL {
    static func base(host: String, port: Int) -> String {
        let reachable: String
        switch host {
        case "0.0.0.0", "": reachable = "127.0.0.1"
        case "::": reachable = "[::1]"
        default: reachable = host.contains(":") ? "[\(host)]" : host
        }
        return "https://\(reachable):\(port)"
    }
}

extension APNsEmulator.Configuration: EmulatorServerSettings {
    var requestsClientCertificates: Bool { clientCertificateAuthority != nil }
}
