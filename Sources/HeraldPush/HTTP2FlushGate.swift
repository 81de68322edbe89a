import NIOCore

/// Sits between `NIOHTTP2Handler` and the socket (or TLS): holds back the flushes that
/// `NIOHTTP2Handler` passes on while ``HTTP2ClientHandler`` writes a burst of requests, so that
/// the burst still leaves in one write, and gathers the bytes written between two flushes into
/// one buffer.
///
/// Held flushes: `NIOHTTP2Handler` keeps DATA frames until a flush and then sends them in the
/// order of a hash set: flushed once per burst, the requests of a burst reach the server
/// shuffled, their answers come back out of order, and every stream closed before an older one
/// costs a linear shift in the handler's stream maps. Flushed once per request (this gate
/// making the socket see one flush per burst), the requests go out in stream order and are
/// answered in it.
///
/// One buffer per flush: `NIOHTTP2Handler` writes each frame (and a DATA frame's payload
/// apart from its header) as a write of its own, and TLS seals each write it is given as a
/// record of its own: three records per request, each with its own encryption call and
/// bookkeeping. Gathered, a burst of requests becomes a few full-size records. The write
/// promises of the gathered writes complete with the one write they became.
final class HTTP2FlushGate: ChannelOutboundHandler {
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private var context: ChannelHandlerContext?
    private var holding = false
    private var flushHeld = false
    /// The bytes written since the last flush. Kept between flushes, so that its storage is
    /// used again once the next handler has let go of it.
    private var gathered: ByteBuffer?
    private var gatheredWrites = 0
    private var promises: [EventLoopPromise<Void>] = []
    /// The largest gathering buffer kept for the next flush.
    static let storageKept = 1 << 20

    /// Runs `body` (which flushes after each request it writes) with flushes held, then
    /// flushes once if any came. On the channel's event loop.
    func coalescing(_ body: () -> Void) {
        holding = true
        body()
        holding = false
        if flushHeld {
            flushHeld = false
            context.map(forwardFlush)
        }
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        writeGathered(context: context)
        self.context = nil
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .byteBuffer(var bytes) = unwrapOutboundIn(data) else {
            // Not bytes (a file region): what came before it goes first.
            writeGathered(context: context)
            context.write(data, promise: promise)
            return
        }
        if let promise { promises.append(promise) }
        gatheredWrites += 1
        if gatheredWrites == 1, gathered == nil {
            gathered = bytes
            return
        }
        if gatheredWrites == 1 {
            gathered!.clear(minimumCapacity: bytes.readableBytes)
        }
        gathered!.writeBuffer(&bytes)
    }

    func flush(context: ChannelHandlerContext) {
        if holding {
            flushHeld = true
        } else {
            forwardFlush(context: context)
        }
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        // Written but not flushed: handed on as they would have been without this gate (the
        // next handler decides what a close does to them).
        writeGathered(context: context)
        context.close(mode: mode, promise: promise)
    }

    private func forwardFlush(context: ChannelHandlerContext) {
        writeGathered(context: context)
        context.flush()
    }

    /// Writes what was gathered as one write whose outcome is every gathered write's.
    private func writeGathered(context: ChannelHandlerContext) {
        guard gatheredWrites > 0, let bytes = gathered else { return }
        gatheredWrites = 0
        let promise: EventLoopPromise<Void>?
        switch promises.count {
        case 0:
            promise = nil
        case 1:
            promise = promises[0]
        default:
            let all = promises
            let combined = context.eventLoop.makePromise(of: Void.self)
            combined.futureResult.whenComplete { result in
                for promise in all { promise.completeWith(result) }
            }
            promise = combined
        }
        promises.removeAll(keepingCapacity: true)
        // A rare large burst does not keep its storage for the life of the connection.
        if bytes.capacity > Self.storageKept { gathered = nil }
        context.write(wrapOutboundOut(.byteBuffer(bytes)), promise: promise)
    }
}
