import NIOCore
import NIOHTTP1
import NIOSSL

/// Serves requests on an HTTP/1.1 connection (for curl and other plain clients), after NIO's
/// `HTTPServerPipelineHandler`, which orders pipelined requests and handles quiescing.
final class HTTP1EmulatorHandler<Responder: EmulatorResponder>: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let responder: Responder
    private let maxBodySize: Int
    private var state: Responder.ConnectionState
    private var head: HTTPRequestHead?
    private var body: ByteBuffer?
    private var tooLarge = false

    init(responder: Responder, maxBodySize: Int, clientCertificate: NIOSSLCertificate? = nil) {
        self.responder = responder
        self.maxBodySize = maxBodySize
        self.state = responder.makeConnectionState(clientCertificate: clientCertificate)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            self.body = nil
            self.tooLarge = false
        case .body(var chunk):
            guard !tooLarge else { return }
            if body == nil {
                body = chunk
            } else {
                body!.writeBuffer(&chunk)
            }
            if body!.readableBytes > maxBodySize {
                tooLarge = true
                body = nil
            }
        case .end:
            guard let head else { return }
            self.head = nil
            let response: EmulatorResponse
            if tooLarge {
                response = EmulatorResponse(status: 413)
            } else {
                let request = EmulatorRequest(
                    method: head.method.rawValue,
                    target: head.uri,
                    headers: .http1(head.headers),
                    body: body
                )
                response = responder.respond(to: request, state: &state, allocator: context.channel.allocator)
            }
            body = nil
            write(context: context, response: response, keepAlive: head.isKeepAlive && !tooLarge, version: head.version)
        }
    }

    private func write(context: ChannelHandlerContext, response: EmulatorResponse, keepAlive: Bool, version: HTTPVersion) {
        var headers = HTTPHeaders()
        headers.reserveCapacity(response.headers.count + 2)
        for header in response.headers {
            headers.add(name: header.name, value: header.value)
        }
        headers.add(name: "content-length", value: String(response.body?.readableBytes ?? 0))
        if !keepAlive {
            headers.add(name: "connection", value: "close")
        }
        let head = HTTPResponseHead(version: version, status: HTTPResponseStatus(statusCode: response.status), headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if let body = response.body, body.readableBytes > 0 {
            context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        }
        if keepAlive {
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        } else {
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
