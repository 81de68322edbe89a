import Foundation
import HeraldClient
import HeraldCore
import HeraldEmulator
import HeraldHub
import HeraldSQLite
import HeraldTLS
import HummingbirdTesting
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization
import Testing

/// A device whose handle names a host of its own choosing must not get the hub's push
/// credential, nor make Herald reach that host: WNS channel URIs and Web Push endpoints are
/// refused on any host but the push service's, when they are saved and again when they are
/// sent to. Here the push service is the emulator on 127.0.0.1 and the attacker an HTTPS
/// server of the test's own on 127.0.0.2, with a certificate Herald trusts.
@Suite(.timeLimit(.minutes(3))) struct ChannelHostTests {
    @Test func aWNSChannelOnAnotherHostIsRefusedThroughEveryAPI() async throws {
        try await HubTestServer.withServer { server in
            let herald = server.herald
            try await RecordingHTTPSServer.with(authority: herald.authority) { attacker in
                let channel = attacker.url("/wns/channel?token=x")

                // The app backend: a signed-up user registering "their" Windows device.
                let base = URL(string: "http://127.0.0.1:\(server.httpPort)")!
                let mallory = try await signedUpClient("mallory", at: base)
                let refused = await #expect(throws: HeraldClientError.self) {
                    try await mallory.register(handle: channel, platform: .wns, webPushKeys: nil)
                }
                #expect(refused?.status == 400)
                #expect(refused?.message.contains("WNS channel URI") == true, "\(String(describing: refused))")

                // The hub REST API with the public Listen key: a registration and an installation.
                let id = try await server.newRegistrationID(auth: .listen)
                let registration = try await server.putRegistration(
                    id: id,
                    Atom.open("WindowsRegistrationDescription")
                        + "<ChannelUri>\(Atom.escaped(channel))</ChannelUri></WindowsRegistrationDescription>",
                    auth: .listen)
                #expect(expectHubError(registration, 400).contains("WNS channel URI"))
                let installation = try await server.wire(
                    .PUT, "/\(HubTestServer.hubName)/installations/mallory-pc?\(HubTestServer.apiVersion)",
                    headers: [("Content-Type", "application/json")],
                    body: Data(#"{"installationId":"mallory-pc","platform":"wns","pushChannel":"\#(channel)"}"#.utf8),
                    auth: .listen)
                expectHubError(installation, 400)
                // A direct send to that channel, with the Send right.
                let direct = try await server.send(
                    format: "windows", "<toast><visual><binding template=\"ToastGeneric\"><text>hi</text></binding></visual></toast>",
                    query: "&direct",
                    headers: [("Content-Type", "application/xml"), ("X-WNS-Type", "wns/toast"), ("ServiceBusNotification-DeviceHandle", channel)])
                expectHubError(direct, 400)

                // Nothing was saved, nothing was sent: the attacker saw no connection at all.
                #expect(try await server.engine().registrationCount() == 0)
                #expect(try await herald.appHubEngine.registrationCount() == 0)
                #expect(attacker.connections == 0)

                // The emulator's own channels still register.
                let good = herald.wns.registerChannel()
                try await mallory.register(handle: good, platform: .wns, webPushKeys: nil)
            }
        }
    }

    /// A registration saved before the hosts were checked (or before the list was narrowed) is
    /// still never sent to: the provider checks the host before it sends with the token.
    @Test func aStoredChannelOnAnotherHostNeverGetsTheToken() async throws {
        try await TestHerald.withHerald { herald in
            try await RecordingHTTPSServer.with(authority: herald.authority) { attacker in
                try await herald.application().test(.live) { client in
                    let bob = try await signedUpClient("bob", at: URL(string: "http://127.0.0.1:\(try #require(client.port))")!)
                    let good = herald.wns.registerChannel()
                    let planted = [
                        Registration(id: "1-1-1", platform: .wns, handle: attacker.url("/wns/a"), tags: ["username:bob"], owner: "bob"),
                        Registration(
                            id: "2-2-1", platform: .webpush, handle: attacker.url("/push/b"),
                            webPushKeys: herald.webPush.subscribe().keys, tags: ["username:bob"], owner: "bob"),
                        Registration(id: "3-3-1", platform: .wns, handle: good, tags: ["username:bob"], owner: "bob"),
                    ]
                    try await herald.store.insertRegistrations(planted)

                    let summary = try await bob.notify(user: "bob", message: "hello")
                    #expect(summary.success == 1, "\(summary.outcomes)")
                    #expect(summary.outcomes.counts[.wns]?[.badChannel] == 1, "\(summary.outcomes)")
                    #expect(summary.outcomes.counts[.webpush]?[.badChannel] == 1, "\(summary.outcomes)")
                    #expect(herald.wns.notifications(for: good).count == 1)
                    #expect(attacker.connections == 0)
                    #expect(attacker.authorizations.isEmpty)
                }
            }
        }
    }

    /// APNs device tokens and FCM registration tokens are tokens, not URLs: one that names a
    /// host or a path is refused, and they are sent only to the configured service.
    @Test func apnsAndFCMHandlesCannotNameAHost() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.live) { client in
                let mallory = try await signedUpClient("mallory", at: URL(string: "http://127.0.0.1:\(try #require(client.port))")!)
                for (platform, handle) in [
                    (Platform.apns, "https://127.0.0.2/3/device/ab"), (.apns, String(repeating: "ab", count: 32) + "/../x"),
                    (.fcm, "https://127.0.0.2/x"), (.fcm, "token/../../v1/projects/other/messages:send"),
                ] {
                    let refused = await #expect(throws: HeraldClientError.self, "\(platform) \(handle)") {
                        try await mallory.register(handle: handle, platform: platform, webPushKeys: nil)
                    }
                    #expect(refused?.status == 400, "\(platform) \(handle)")
                }
                #expect(try await herald.appHubEngine.registrationCount() == 0)
            }
        }
    }

    @Test func aWebPushEndpointOnAnotherHostIsRefusedWhenSaved() async throws {
        try await TestHerald.withHerald { herald in
            try await RecordingHTTPSServer.with(authority: herald.authority) { attacker in
                try await herald.application().test(.live) { client in
                    let mallory = try await signedUpClient("mallory", at: URL(string: "http://127.0.0.1:\(try #require(client.port))")!)
                    let keys = herald.webPush.subscribe().keys
                    let refused = await #expect(throws: HeraldClientError.self) {
                        try await mallory.register(handle: attacker.url("/push/x"), platform: .webpush, webPushKeys: keys)
                    }
                    #expect(refused?.status == 400)
                    #expect(try await herald.appHubEngine.registrationCount() == 0)
                    #expect(attacker.connections == 0)
                }
            }
        }
    }
}

/// An HTTPS server on 127.0.0.2, with a certificate of the CA the test's Herald trusts (so that
/// only the host check stands in the way): it counts the connections it accepts, records each
/// request's `Authorization`, and answers `200`, as a host would that wants the push credential.
final class RecordingHTTPSServer: Sendable {
    static let host = "127.0.0.2"
    let port: Int
    private let listener: any Channel
    private let box: Box

    private init(listener: any Channel, box: Box) {
        self.listener = listener
        self.port = listener.localAddress?.port ?? 0
        self.box = box
    }

    /// Connections accepted so far.
    var connections: Int { box.state.withLock { $0.connections } }
    /// The `Authorization` of every request so far.
    var authorizations: [String] { box.state.withLock { $0.authorizations } }

    func url(_ path: String) -> String { "https://\(Self.host):\(port)\(path)" }

    static func with<T>(authority: CertificateAuthority, _ body: (RecordingHTTPSServer) async throws -> T) async throws -> T {
        let tls = try authority.issueServerIdentity(hosts: [host]).makeServerConfiguration(applicationProtocols: ["http/1.1"])
        let context = try NIOSSLContext(configuration: tls)
        let box = Box()
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                box.state.withLock { $0.connections += 1 }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(RecordingHandler(box: box))
                }
            }
            .bind(host: host, port: 0)
            .get()
        let server = RecordingHTTPSServer(listener: listener, box: box)
        do {
            let result = try await body(server)
            try await listener.close()
            return result
        } catch {
            try? await listener.close()
            throw error
        }
    }

    private final class Box: Sendable {
        let state = Mutex<(connections: Int, authorizations: [String])>((0, []))
    }

    private final class RecordingHandler: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        let box: Box
        init(box: Box) { self.box = box }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                box.state.withLock { $0.authorizations.append(head.headers.first(name: "authorization") ?? "") }
            case .body:
                break
            case .end:
                let head = HTTPResponseHead(version: .http1_1, status: .ok, headers: ["content-length": "0"])
                context.write(wrapOutboundOut(.head(head)), promise: nil)
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            }
        }
    }
}
