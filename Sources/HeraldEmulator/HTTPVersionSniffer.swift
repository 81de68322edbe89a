import NIOCore

/// For a TLS connection that negotiated no protocol (no ALPN): reads the first bytes and
/// serves HTTP/2 if they are the HTTP/2 connection preface (a client with prior knowledge,
/// which real APNs accepts), HTTP/1.1 otherwise.
final class HTTPVersionSniffer: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// `PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n` (RFC 9113 §3.4).
    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    typealias Configurator = @Sendable (any Channel) -> EventLoopFuture<Void>
    private let http2: Configurator
    private let http1: Configurator
    private var buffered: ByteBuffer?
    private var decided = false

    init(http2: @escaping Configurator, http1: @escaping Configurator) {
        self.http2 = http2
        self.http1 = http1
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var incoming = unwrapInboundIn(data)
        guard !decided else {
            context.fireChannelRead(data)
            return
        }
        if buffered == nil {
            buffered = incoming
        } else {
            buffered!.writeBuffer(&incoming)
        }
        let bytes = buffered!.readableBytesView
        let count = min(bytes.count, Self.preface.count)
        let isPreface = bytes.prefix(count).elementsEqual(Self.preface.prefix(count))
        if isPreface, count < Self.preface.count { return }  // not enough to tell yet
        decided = true
        let configure = isPreface ? http2 : http1
        let bufferedBytes = buffered!
        buffered = nil
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        configure(context.channel).whenComplete { result in
            let (handler, context) = loopBound.value
            switch result {
            case .success:
                // The protocol's handlers follow this one: hand them what was read, then leave.
                context.fireChannelRead(handler.wrapInboundOut(bufferedBytes))
                context.fireChannelReadComplete()
                context.pipeline.syncOperations.removeHandler(handler, promise: nil)
            case .failure(let error):
                context.fireErrorCaught(error)
                context.close(promise: nil)
            }
        }
    }
}
