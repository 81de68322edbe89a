import Hummingbird
import HummingbirdCore
public import Logging
import NIOCore
import NIOHTTPTypes
import Synchronization

/// The HTTP server's limits on connections: how many may be open at once, how long one may sit
/// idle (or take to send a request's head), and how long a request's body may take.
public struct ConnectionLimits: Sendable {
    /// Connections open at once, over the HTTP and TLS listeners together. A connection beyond
    /// it takes the place of the connection idle the longest, which is closed; when every
    /// connection is busy with a request, it gets `503 Service Unavailable` and is closed.
    public var maximumConnections: Int = 10_000
    /// A connection with no request in progress is closed after this long: idle keep-alive
    /// connections, and connections that do not finish sending a request's head.
    public var idleTimeout: Duration = .seconds(60)
    /// A request's body must arrive within this long of its head.
    public var bodyTimeout: Duration = .seconds(60)

    public init() {}
}

/// The connections open on the server's listeners, with whether each is busy with a request:
/// admits a new connection while there is room, or makes room by closing the connection idle
/// the longest, or refuses it. Shared by the HTTP and TLS listeners.
public final class ConnectionLimiter: Sendable {
    public let limits: ConnectionLimits
    private let logger: Logger
    private let state = Mutex(State())

    private struct State {
        var connections: [ObjectIdentifier: Connection] = [:]
        var refused = 0
        var evicted = 0
    }

    private struct Connection {
        var channel: any Channel
        var busy = false
        var idleSince: ContinuousClock.Instant
    }

    public init(limits: ConnectionLimits, logger: Logger) {
        self.limits = limits
        self.logger = logger
    }

    /// Connections open now.
    public var openConnections: Int { state.withLock { $0.connections.count } }

    enum Admission {
        case admitted
        case refused
    }

    func admit(_ channel: any Channel) -> Admission {
        let (admission, evict): (Admission, (any Channel)?) = state.withLock { state in
            var evict: (any Channel)?
            if state.connections.count >= limits.maximumConnections {
                // One pass, no copy of the table: this runs under the lock, for every connection
                // admitted at the limit.
                var oldest: (key: ObjectIdentifier, value: Connection)?
                for entry in state.connections where !entry.value.busy {
                    if oldest.map({ entry.value.idleSince < $0.value.idleSince }) ?? true { oldest = entry }
                }
                guard let oldest else {
                    state.refused += 1
                    return (.refused, nil)
                }
                state.connections[oldest.key] = nil
                state.evicted += 1
                evict = oldest.value.channel
            }
            state.connections[ObjectIdentifier(channel)] = Connection(channel: channel, idleSince: .now)
            return (.admitted, evict)
        }
        if let evict {
            logger.debug("Closing the connection idle the longest to admit a new one (connection limit reached)")
            evict.close(promise: nil)
        }
        if case .refused = admission {
            logger.warning(
                "Refused a connection: every one of the connections allowed is busy",
                metadata: ["herald.connections": "\(limits.maximumConnections)"])
        }
        return admission
    }

    func setBusy(_ channel: any Channel, _ busy: Bool) {
        state.withLock { state in
            let id = ObjectIdentifier(channel)
            guard state.connections[id] != nil else { return }
            state.connections[id]?.busy = busy
            if !busy { state.connections[id]?.idleSince = .now }
        }
    }

    func closed(_ channel: any Channel) {
        _ = state.withLock { $0.connections.removeValue(forKey: ObjectIdentifier(channel)) }
    }
}

/// Whether a request is in progress on a connection, sent by ``RequestDeadlineHandler``
/// towards the head of the pipeline, where ``ConnectionGuardHandler`` hears it.
enum ConnectionActivity: Sendable {
    case requestStarted
    case responseEnded
}

/// First in a connection's pipeline (after TLS): asks the limiter to admit the connection,
/// answers `503` and closes it when it is refused, and keeps the limiter told of the
/// connection's requests and of its end.
final class ConnectionGuardHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    typealias OutboundIn = NIOAny

    private let limiter: ConnectionLimiter
    private let refusesWithResponse: Bool
    private var admitted = false

    /// - Parameter refusesWithResponse: answer a refused connection with an HTTP/1.1 `503`
    ///   before closing it (on a TLS connection the handler sits behind TLS, so the answer is
    ///   encrypted like any other).
    init(limiter: ConnectionLimiter, refusesWithResponse: Bool = true) {
        self.limiter = limiter
        self.refusesWithResponse = refusesWithResponse
    }

    static let refusal = """
        HTTP/1.1 503 Service Unavailable\r
        Content-Type: text/plain; charset=utf-8\r
        Content-Length: 43\r
        Retry-After: 1\r
        Connection: close\r
        \r
        Herald is at its connection limit; retry.\n
        """

    func channelActive(context: ChannelHandlerContext) {
        switch limiter.admit(context.channel) {
        case .admitted:
            admitted = true
            context.fireChannelActive()
        case .refused:
            guard refusesWithResponse else {
                context.close(promise: nil)
                return
            }
            // Answer, stop sending, and read (and drop) what the client sends for a moment
            // before closing: closing with its request unread would reset the connection, and
            // the client could lose the answer.
            let bytes = context.channel.allocator.buffer(string: Self.refusal)
            let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
            context.writeAndFlush(NIOAny(bytes)).whenComplete { _ in
                let context = loopBound.value
                context.close(mode: .output, promise: nil)
                context.eventLoop.scheduleTask(in: .seconds(2)) { loopBound.value.close(promise: nil) }
            }
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // A refused connection reads nothing: its requests are never answered but by the 503.
        guard admitted else { return }
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if admitted { limiter.closed(context.channel) }
        context.fireChannelInactive()
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        guard let activity = event as? ConnectionActivity else {
            context.triggerUserOutboundEvent(event, promise: promise)
            return
        }
        limiter.setBusy(context.channel, activity == .requestStarted)
        promise?.succeed()
    }
}

/// After the HTTP codec: tells the guard when a request starts and its response ends, and
/// closes a connection whose request body does not arrive within the body timeout.
final class RequestDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart

    private let bodyTimeout: TimeAmount
    private let logger: Logger
    private var deadline: Scheduled<Void>?

    init(bodyTimeout: Duration, logger: Logger) {
        self.bodyTimeout = TimeAmount(bodyTimeout)
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            context.triggerUserOutboundEvent(ConnectionActivity.requestStarted, promise: nil)
            deadline?.cancel()
            deadline = nil
            // A request without a body (most GETs) ends with its head: no timer for it.
            guard head.headerFields[.contentLength].map({ $0 != "0" }) ?? false || head.headerFields[.transferEncoding] != nil
            else { break }
            let loopBound = NIOLoopBound((context: context, logger: logger), eventLoop: context.eventLoop)
            deadline = context.eventLoop.scheduleTask(in: bodyTimeout) {
                loopBound.value.logger.info("Closing a connection whose request body did not arrive in time")
                loopBound.value.context.close(promise: nil)
            }
        case .body:
            break
        case .end:
            deadline?.cancel()
            deadline = nil
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) {
            context.write(data, promise: promise)
            context.triggerUserOutboundEvent(ConnectionActivity.responseEnded, promise: nil)
            return
        }
        context.write(data, promise: promise)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }
}

/// HTTP/1.1 with Herald's connection limits: the guard first in every connection's pipeline,
/// the deadline handler after the codec, and Hummingbird's idle timeout.
struct GuardedHTTP1Channel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value

    let base: HTTP1Channel
    let limiter: ConnectionLimiter

    init(responder: @escaping HTTPChannelHandler.Responder, limiter: ConnectionLimiter, logger: Logger) {
        let limits = limiter.limits
        let configuration = HTTP1Channel.Configuration(
            additionalChannelHandlers: [RequestDeadlineHandler(bodyTimeout: limits.bodyTimeout, logger: logger)],
            idleTimeout: TimeAmount(limits.idleTimeout)
        )
        self.base = HTTP1Channel(responder: responder, configuration: configuration)
        self.limiter = limiter
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        do {
            try channel.pipeline.syncOperations.addHandler(ConnectionGuardHandler(limiter: limiter))
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return base.setup(channel: channel, logger: logger)
    }

    func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}

extension HTTPServerBuilder {
    /// HTTP/1.1 within Herald's connection limits.
    static func guardedHTTP1(_ limiter: ConnectionLimiter, logger: Logger) -> HTTPServerBuilder {
        HTTPServerBuilder { responder in GuardedHTTP1Channel(responder: responder, limiter: limiter, logger: logger) }
    }
}
