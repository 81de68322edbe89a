import Benchmark
import HeraldPush
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import Synchronization

/// Allocations per send: one prepared APNs-shaped request at a time through ``HTTP2Client``
/// to an HTTP/2 server in this process (cleartext, 127.0.0.1), which answers every stream
/// with `200` and a fixed `apns-id`, as APNs does on success.
///
/// Both ends run here, so the counts include the server's share (a few allocations per
/// stream, the same before and after a change of the client). Run with
/// `swift package benchmark --target HTTP2ClientBenchmarks`; CI builds it but does not run it.
let benchmarks: @Sendable () -> Void = {
    let configuration = Benchmark.Configuration(
        metrics: [.mallocCountTotal, .cpuTotal, .wallClock, .throughput],
        warmupIterations: 200,
        scalingFactor: .one,
        maxDuration: .seconds(5),
        maxIterations: 20_000
    )

    Benchmark("APNs send, header block built by the caller", configuration: configuration) { benchmark in
        let fixture = SendFixture.current
        for _ in benchmark.scaledIterations {
            var headers = fixture.client.headerBlock(path: fixture.path, reservingCapacity: 3)
            headers.add(name: "authorization", value: SendFixture.authorization)
            headers.add(name: "apns-topic", value: "com.example.app")
            headers.add(name: "apns-push-type", value: "alert")
            let response = try await fixture.client.send(headerBlock: headers, body: fixture.body, deadline: .now() + .seconds(10))
            blackHole(response.status)
        }
    } setup: {
        try await SendFixture.start()
    } teardown: {
        await SendFixture.stop()
    }

    // A fan-out's batch: 128 requests handed over together, one wait. Each iteration is one
    // request, so the counts compare with the single sends above.
    Benchmark("APNs send in batches of 128", configuration: configuration) { benchmark in
        let fixture = SendFixture.current
        let batchSize = 128
        var remaining = benchmark.scaledIterations.count
        while remaining > 0 {
            let count = min(batchSize, remaining)
            remaining -= count
            let batch = (0..<count).map { _ in
                var headers = fixture.client.headerBlock(path: fixture.path, reservingCapacity: 3)
                headers.add(name: "authorization", value: SendFixture.authorization)
                headers.add(name: "apns-topic", value: "com.example.app")
                headers.add(name: "apns-push-type", value: "alert")
                return HTTP2Client.BatchRequest(headers: headers, body: fixture.body)
            }
            let answers = await fixture.client.send(batch: batch, deadline: .now() + .seconds(10))
            blackHole(answers.count)
        }
    } setup: {
        try await SendFixture.start()
    } teardown: {
        await SendFixture.stop()
    }

    Benchmark("APNs send, headers without pseudo-header fields", configuration: configuration) { benchmark in
        let fixture = SendFixture.current
        for _ in benchmark.scaledIterations {
            let headers: HPACKHeaders = [
                "authorization": SendFixture.authorization, "apns-topic": "com.example.app", "apns-push-type": "alert",
            ]
            let response = try await fixture.client.send(
                path: fixture.path, headers: headers, body: fixture.body, deadline: .now() + .seconds(10))
            blackHole(response.status)
        }
    } setup: {
        try await SendFixture.start()
    } teardown: {
        await SendFixture.stop()
    }
}

/// The server and the client of one benchmark, made in its setup and closed in its teardown.
final class SendFixture: Sendable {
    /// A provider token's length and shape (`bearer` and an ES256 JWT).
    static let authorization = "bearer " + String(repeating: "eyJhbGciOiJFUzI1NiIsImtpZCI6IkFCQzEyMzQ1NjcifQ", count: 4)
    private static let shared = Mutex<SendFixture?>(nil)

    let server: any Channel
    let client: HTTP2Client
    let path = "/3/device/" + String(repeating: "0123456789abcdef", count: 4)
    let body = ByteBuffer(string: #"{"aps":{"alert":{"title":"Hello","body":"A notification of a usual size"},"badge":1}}"#)

    private init(server: any Channel, client: HTTP2Client) {
        self.server = server
        self.client = client
    }

    static var current: SendFixture {
        guard let fixture = shared.withLock({ $0 }) else { fatalError("the benchmark's setup did not run") }
        return fixture
    }

    static func start() async throws {
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    var connection = NIOHTTP2Handler.ConnectionConfiguration()
                    connection.initialSettings = [HTTP2Setting(parameter: .maxConcurrentStreams, value: 1000)]
                    try channel.pipeline.syncOperations.addHandler(NIOHTTP2Handler(mode: .server, connectionConfiguration: connection))
                    try channel.pipeline.syncOperations.addHandler(AnsweringHandler())
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        var configuration = HTTP2Client.Configuration(host: "127.0.0.1", port: server.localAddress?.port ?? 0)
        configuration.usesTLS = false
        let client = try HTTP2Client(configuration: configuration)
        let fixture = SendFixture(server: server, client: client)
        // The connection is set up before anything is measured.
        _ = try await client.send(path: fixture.path, headers: [:], body: fixture.body, deadline: .now() + .seconds(10))
        shared.withLock { $0 = fixture }
    }

    static func stop() async {
        guard
            let fixture = shared.withLock({ state in
                defer { state = nil }
                return state
            })
        else { return }
        await fixture.client.shutdown()
        try? await fixture.server.close()
    }
}

/// Answers every request stream, once it ends, with `200` and an `apns-id`; gives the
/// connection's flow-control credit back as request bodies arrive.
private final class AnsweringHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private static let response: HPACKHeaders = [":status": "200", "apns-id": "8d0bb5a7-1c35-4f4e-9a3a-6a3f3d2e1b0c"]
    private var credit = 0

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        let endStream: Bool
        switch frame.payload {
        case .headers(let headers):
            endStream = headers.endStream
        case .data(let data):
            credit += data.data.readableBytes
            endStream = data.endStream
        default:
            return
        }
        guard endStream else { return }
        let answer = HTTP2Frame(streamID: frame.streamID, payload: .headers(.init(headers: Self.response, endStream: true)))
        context.write(wrapOutboundOut(answer), promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if credit > 0 {
            context.write(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: credit))), promise: nil)
            credit = 0
        }
        context.flush()
        context.fireChannelReadComplete()
    }
}
