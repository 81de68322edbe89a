import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// One request of a load: a method, a path with its query, headers and a JSON body.
struct LoadRequest: Sendable {
    var method: String
    var path: String
    var headers: [(String, String)] = []
    var body: String?
}

/// A lean HTTP/1.1 load generator, as wrk is: each of `connections` keep-alive connections
/// sends its next request as soon as the answer to its last one has come. Its cost per request
/// is the encoding of a request head and the parsing of an answer (SwiftNIO's HTTP/1.1
/// handlers, on the shared event loops): a few tens of microseconds, where a general client
/// (pools, tasks, deadlines, redirects) costs as much as the server it measures. The requests
/// are split into `connections` lanes of consecutive requests, each lane sent in order.
///
/// Every answer must have a status below 300; the first that does not ends the run with an
/// error that names the request and the answer's status and body.
enum LoadGenerator {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Sends `requests` to the server at `base` (`http://host:port`); calls `answered` after each
    /// answer.
    static func run(
        _ requests: [LoadRequest], base: String, connections: Int, answered: @escaping @Sendable () -> Void
    ) async throws {
        guard let url = URLComponents(string: base), url.scheme == "http", let host = url.host, let port = url.port else {
            throw Failure(description: "the load generator needs an http://host:port address, not \(base)")
        }
        let authority = "\(host):\(port)"
        let encoded = requests.map { request in
            var head = HTTPRequestHead(version: .http1_1, method: HTTPMethod(rawValue: request.method), uri: request.path)
            head.headers.add(name: "host", value: authority)
            for (name, value) in request.headers { head.headers.add(name: name, value: value) }
            let body = request.body.map { ByteBuffer(string: $0) }
            if let body {
                head.headers.add(name: "content-type", value: "application/json")
                head.headers.add(name: "content-length", value: String(body.readableBytes))
            } else {
                head.headers.add(name: "content-length", value: "0")
            }
            return Lane.Request(head: head, body: body)
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in lanes(encoded, connections: connections) {
                group.addTask { try await run(lane, host: host, port: port, answered: answered) }
            }
            try await group.waitForAll()
        }
    }

    /// `work` split into at most `connections` lanes of consecutive items, none empty: each as
    /// long as `work` divided by `connections`, rounded up, the last one what is left.
    static func lanes<Item>(_ work: [Item], connections: Int) -> [[Item]] {
        let lanes = max(1, connections)
        let length = max(1, (work.count + lanes - 1) / lanes)
        return stride(from: 0, to: work.count, by: length).map { Array(work[$0..<min($0 + length, work.count)]) }
    }

    /// One connection, sending `requests` one after the other.
    private static func run(
        _ requests: [Lane.Request], host: String, port: Int, answered: @escaping @Sendable () -> Void
    ) async throws {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let finished = loop.makePromise(of: Void.self)
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: loop)
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHTTPClientHandlers()
                        try channel.pipeline.syncOperations.addHandler(Lane(requests: requests, finished: finished, answered: answered))
                    }
                }
                .connect(host: host, port: port)
                .get()
        } catch {
            finished.fail(error)
            throw Failure(description: "the load generator could not connect to \(host):\(port): \(error)")
        }
        do {
            try await finished.futureResult.get()
        } catch {
            try? await channel.close()
            throw error
        }
        try? await channel.close()
    }

    /// The handler of one connection: writes a request, reads its answer, writes the next.
    private final class Lane: ChannelInboundHandler {
        typealias InboundIn = HTTPClientResponsePart
        typealias OutboundOut = HTTPClientRequestPart

        struct Request: Sendable {
            var head: HTTPRequestHead
            var body: ByteBuffer?
        }

        private let requests: [Request]
        private let finished: EventLoopPromise<Void>
        private let answered: @Sendable () -> Void
        private var next = 0
        /// The body of an answer whose status is 300 or more, collected for the error.
        private var refusal: (status: HTTPResponseStatus, body: ByteBuffer)?
        private var done = false

        init(requests: [Request], finished: EventLoopPromise<Void>, answered: @escaping @Sendable () -> Void) {
            self.requests = requests
            self.finished = finished
            self.answered = answered
        }

        func channelActive(context: ChannelHandlerContext) {
            sendNext(context: context)
            context.fireChannelActive()
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                refusal = head.status.code >= 300 ? (head.status, context.channel.allocator.buffer(capacity: 0)) : nil
            case .body(var part):
                refusal?.body.writeBuffer(&part)
            case .end:
                if let refusal {
                    let request = requests[next - 1].head
                    finish(
                        .failure(
                            Failure(
                                description:
                                    "\(request.method) \(request.uri) answered \(refusal.status.code): \(String(buffer: refusal.body))"
                            )))
                    return
                }
                answered()
                sendNext(context: context)
            }
        }

        func channelInactive(context: ChannelHandlerContext) {
            finish(.failure(Failure(description: "the server closed a connection after \(next) of its \(requests.count) requests")))
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            finish(.failure(Failure(description: "a connection failed after \(next) of its \(requests.count) requests: \(error)")))
            context.close(promise: nil)
        }

        private func sendNext(context: ChannelHandlerContext) {
            guard next < requests.count else {
                finish(.success(()))
                return
            }
            let request = requests[next]
            next += 1
            context.write(wrapOutboundOut(.head(request.head)), promise: nil)
            if let body = request.body { context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil) }
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }

        private func finish(_ result: Result<Void, any Error>) {
            guard !done else { return }
            done = true
            finished.completeWith(result)
        }
    }
}
