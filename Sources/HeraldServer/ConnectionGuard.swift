import Hummingbird
import HummingbirdCore
public import Logging
import NIOCore
import NIOHTTPTypes
import Synchronization

/// The HTTP server's limits on connections: how many may be open at once, in all and from one
/// client, how long one may sit idle (or take to send a request's head), and how long a
/// request's body may take.
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
    /// Connections open at once from one client (``SocketAddress/clientKey``: an IPv6 client
    /// by its /64); `0` for no such limit. A client's connection beyond it takes the place of
    /// that client's connection idle the longest; when all of them are busy, it gets `503` and
    /// is closed, and other clients are not affected. 256 is far more than a browser (6 per
    /// host) or an SDK's pool opens, and 40 clients at it are needed to fill the 10,000 in all;
    /// behind a reverse proxy every connection comes from the proxy: raise it there, or set 0.
    public var maximumConnectionsPerClient: Int = 256

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
        /// Connections open per client key.
        var perClient: [String: Int] = [:]
        var refused = 0
        var evicted = 0

        mutating func remove(_ id: ObjectIdentifier) -> Connection? {
            guard let connection = connections.removeValue(forKey: id) else { return nil }
            let left = (perClient[connection.client] ?? 1) - 1
            perClient[connection.client] = left > 0 ? left : nil
            return connection
        }

        /// The connection idle the longest, of `client` or of anyone. One pass, no copy of the
        /// table: this runs under the lock, for every connection admitted at a limit.
        func idleLongest(of client: String? = nil) -> ObjectIdentifier? {
            var oldest: (key: ObjectIdentifier, value: Connection)?
            for entry in connections where !entry.value.busy && (client == nil || entry.value.client == client) {
                if oldest.map({ entry.value.idleSince < $0.value.idleSince }) ?? true { oldest = entry }
            }
            return oldest?.key
        }
    }

    private struct Connection {
        var channel: any Channel
        /// The peer's ``SocketAddress/clientKey``.
        var client: String
        var busy = false
        var idleSince: ContinuousClock.Instant
    }

    public init(limits: ConnectionLimits, logger: Logger) {
        self.limits = limits
        self.logger = logger
    }

    /// Connections open now.
    public var openConnections: Int { state.withLock { $0.connections.count } }

    /// Connections open now from `client` (a ``SocketAddress/clientKey``).
    func openConnections(from client: String) -> Int {
        state.withLock { $0.perClient[client] ?? 0 }
    }

    enum Admission: Equatable {
        case admitted
        /// Every connection allowed is busy.
        case refused
        /// Every connection allowed to this client is busy.
        case refusedForClient
    }

    func admit(_ channel: any Channel) -> Admission {
        let client = SocketAddress.clientKey(channel.remoteAddress)
        let perClient = limits.maximumConnectionsPerClient
        let (admission, evict): (Admission, (any Channel)?) = state.withLock { state in
            var evict: (any Channel)?
            if perClient > 0, state.perClient[client] ?? 0 >= perClient {
                // The client makes room among its own connections, or is refused: never another's.
                guard let oldest = state.idleLongest(of: client) else {
                    state.refused += 1
                    return (.refusedForClient, nil)
                }
                evict = state.remove(oldest)?.channel
                state.evicted += 1
            } else if state.connections.count >= limits.maximumConnections {
                guard let oldest = state.idleLongest() else {
                    state.refused += 1
                    return (.refused, nil)
                }
                evict = state.remove(oldest)?.channel
                state.evicted += 1
            }
            state.connections[ObjectIdentifier(channel)] = Connection(channel: channel, client: client, idleSince: .now)
            state.perClient[client, default: 0] += 1
            return (.admitted, evict)
        }
        if let evict {
            logger.debug("Closing the connection idle the longest to admit a new one (connection limit reached)")
            evict.close(promise: nil)
        }
        switch admission {
        case .refused:
            logger.warning(
                "Refused a connection: every one of the connections allowed is busy",
                metadata: ["herald.connections": "\(limits.maximumConnections)"])
        case .refusedForClient:
            // Debug only: one client's flood must not flood the log too.
            logger.debug(
                "Refused a connection: every one of the connections allowed to its client is busy",
                metadata: ["herald.client": "\(client)", "herald.connections": "\(perClient)"])
        case .admitted:
            break
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
        _ = state.withLock { $0.remove(ObjectIdentifier(channel)) }
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

    static let refusal = refusal("Herald is at its connection limit; retry.\n")
    static let refusalForClient = refusal("Too many connections from your address are busy; retry.\n")

    static func refusal(_ message: String) -> String {
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: \(message.utf8.count)\r\n"
            + "Retry-After: 1\r\nConnection: close\r\n\r\n" + message
    }

    func channelActive(context: ChannelHandlerContext) {
        let admission = limiter.admit(context.channel)
        switch admission {
        case .admitted:
            admitted = true
            context.fireChannelActive()
        case .refused, .refusedForClient:
            guard refusesWithResponse else {
                context.close(promise: nil)
                return
            }
            // Answer, stop sending, and read (and drop) what the client sends for a moment
            // before closing: closing with its request unread would reset the connection, and
            // the client could lose the answer.
            let bytes = context.channel.allocator.buffer(string: admission == .refused ? Self.refusal : Self.refusalForClient)
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
