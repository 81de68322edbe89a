public import Foundation
public import HeraldTLS
public import Logging
public import NIOCore
public import ServiceLifecycle
import Synchronization
public import _CryptoExtras

/// A local FCM HTTP v1: Google's OAuth2 token endpoint for service accounts (`POST /token`, RS256
/// JWT bearer assertions) and `POST /v1/projects/{project}/messages:send` with the status codes and
/// error shape FCM answers with. It records what each virtual device received and can be told to
/// fail.
public final class FCMEmulator: Service, Sendable {
    /// A service account that may obtain access tokens: its email and the public half of its key.
    public struct ServiceAccount: Sendable {
        public var clientEmail: String
        public var publicKey: _RSA.Signing.PublicKey

        public init(clientEmail: String, publicKey: _RSA.Signing.PublicKey) {
            self.clientEmail = clientEmail
            self.publicKey = publicKey
        }
    }

    public struct Configuration: Sendable {
        public var host = "127.0.0.1"
        /// 0 picks a free port; read it from ``FCMEmulator/port``.
        public var port = 0
        public var identity: TLSIdentity
        public var projectID: String
        public var serviceAccounts: [ServiceAccount]
        /// `true`: any well-formed token is a device. `false`: only tokens from
        /// ``FCMEmulator/registerDevice()`` are valid, others get 400 INVALID_ARGUMENT.
        public var openDeviceRegistry = false
        /// Keep received messages per device (the inbox).
        public var recordsPayloads = true
        /// At most this many notifications are kept per device, the newest; every one is still
        /// counted (the stats), so that memory stays bounded however long the emulator runs.
        public var inboxLimit = 100
        public var maxConcurrentStreams = 1000
        /// The event loops to serve on; `nil` uses NIO's shared singleton group.
        public var eventLoopGroup: (any EventLoopGroup)? = nil
        public var now: @Sendable () -> Date = Date.init

        public init(identity: TLSIdentity, projectID: String, serviceAccounts: [ServiceAccount]) {
            self.identity = identity
            self.projectID = projectID
            self.serviceAccounts = serviceAccounts
        }
    }

    private let server: EmulatorServer
    private let responder: FCMResponder
    private let host: String

    private init(server: EmulatorServer, responder: FCMResponder, host: String) {
        self.server = server
        self.responder = responder
        self.host = host
    }

    /// Binds and starts serving. `port` is the bound port.
    public static func start(configuration: Configuration, logger: Logger) async throws -> FCMEmulator {
        let responder = FCMResponder(configuration: configuration, logger: logger)
        let server = try await EmulatorServer.start(
            configuration: configuration.serverConfiguration,
            responder: responder,
            logger: logger
        )
        let emulator = FCMEmulator(server: server, responder: responder, host: configuration.host)
        responder.tokenURI.withLock { $0 = emulator.tokenURI }
        return emulator
    }

    /// The bound port.
    public var port: Int { server.port }
    /// `https://HOST:PORT`.
    public var baseURL: String { EmulatorURL.base(host: host, port: port) }
    /// `baseURL + "/token"`: the service account's `token_uri`, and the `aud` its assertions must carry.
    public var tokenURI: String { baseURL + "/token" }

    /// Serves until graceful shutdown or cancellation, then closes (in-flight requests are answered).
    public func run() async throws {
        await server.run()
    }

    /// Stops accepting connections, lets open ones finish, and returns when all are closed.
    public func shutdown() async throws {
        await server.shutdown()
    }

    // MARK: - Control

    /// A new registration token shaped like FCM's (about 160 characters of `[A-Za-z0-9_:-]`).
    public func registerDevice() -> String {
        responder.registerDevice()
    }

    /// What the device received (each payload is the `message` object), oldest first. Topic
    /// messages are kept under `/topics/{topic}`.
    public func notifications(for token: String) -> [ReceivedNotification] {
        responder.notifications(for: token)
    }

    /// Later sends to `token` get 404 NOT_FOUND with error code UNREGISTERED.
    public func unregister(token: String) {
        _ = responder.controlUnregister(token: token)
    }

    /// The next `count` sends that pass validation are answered with `fault`.
    public func injectFaults(_ fault: Fault, count: Int) {
        responder.injectFaults(fault, count: count)
    }

    /// Drops faults not yet used.
    public func clearFaults() {
        responder.clearFaults()
    }

    /// Total messages accepted (200s).
    /// Its devices' receipts: ``DeviceReceipts/configure(_:)`` makes them confirm what they receive.
    public var receipts: DeviceReceipts { responder.receipts }

    public var acceptedCount: Int { responder.acceptedCount }

    /// Messages accepted (200s) that came over HTTP/2; the others came over HTTP/1.1.
    public var acceptedOverHTTP2Count: Int { responder.acceptedOverHTTP2Count }
}

extension FCMEmulator.Configuration: EmulatorServerSettings {}
