import NIOCore

/// Holds back the flushes that `NIOHTTP2Handler` passes towards the socket while
/// ``HTTP2ClientHandler`` writes a burst of requests, so that the burst still leaves in one
/// write.
///
/// `NIOHTTP2Handler` keeps DATA frames until a flush and then sends them in the order of a hash
/// set: flushed once per burst, the requests of a burst reach the server shuffled, their answers
/// come back out of order, and every stream closed before an older one costs a linear shift in
/// the handler's stream maps. Flushed once per request (this gate making the socket see one flush
/// per burst), the requests go out in stream order and are answered in it.
final class HTTP2FlushGate: ChannelOutboundHandler {
    typealias OutboundIn = IOData

    private var context: ChannelHandlerContext?
    private var holding = false
    private var flushHeld = false

    /// Runs `body` (which flushes after each request it writes) with flushes held, then
    /// flushes once if any came. On the channel's event loop.
    func coalescing(_ body: () -> Void) {
        holding = true
        body()
        holding = false
        if flushHeld {
            flushHeld = false
            context?.flush()
        }
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func flush(context: ChannelHandlerContext) {
        if holding {
            flushHeld = true
        } else {
            context.flush()
        }
    }
}
