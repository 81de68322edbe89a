import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOSSL

/// Serves requests on an HTTP/2 connection, frame by frame.
///
/// It sits directly after `NIOHTTP2Handler` (no stream multiplexer, no child channel per stream):
/// HEADERS and DATA frames are collected per stream ID, the responder is called when a stream's
/// request ends, and the response frames are written at once and flushed at the end of each read
/// burst. Because nothing consumes data later, this handler also returns flow-control credit
/// (WINDOW_UPDATE) as soon as DATA arrives.
final class HTTP2EmulatorHandler<Responder: EmulatorResponder>: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private struct PendingRequest {
        var headers: HPACKHeaders
        var body: ByteBuffer?
    }

    /// The connection-level inbound window this handler keeps open.
    static var connectionWindow: Int { 4 << 20 }

    private let responder: Responder
    private let maxBodySize: Int
    private let streamWindow: Int
    private var state: Responder.ConnectionState
    private var pending: [HTTP2StreamID: PendingRequest] = [:]
    private var highestStreamID: HTTP2StreamID = .rootStream
    private var needsFlush = false
    private var openedConnectionWindow = false
    /// Shutdown has begun: a first GOAWAY (last stream ID = max) and a PING went out.
    private var quiescing = false
    /// The PING came back: the final GOAWAY named the last stream served; close once idle.
    private var draining = false
    private var closing = false
    private static var quiescePing: HTTP2PingData { HTTP2PingData(withInteger: 0x6865_7261_6c64) }

    init(responder: Responder, maxBodySize: Int, streamWindow: Int, clientCertificate: NIOSSLCertificate? = nil) {
        self.responder = responder
        self.maxBodySize = maxBodySize
        self.streamWindow = streamWindow
        self.state = responder.makeConnectionState(clientCertificate: clientCertificate)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        if !openedConnectionWindow {
            // Widen the connection window once, after the peer's preface, so that many
            // concurrent streams can send their bodies without waiting for credit.
            openedConnectionWindow = true
            let increment = Self.connectionWindow - 65535
            context.write(
                wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: increment))),
                promise: nil
            )
            needsFlush = true
        }
        let streamID = frame.streamID
        switch frame.payload {
        case .headers(let headers):
            if headers.endStream, let request = pending.removeValue(forKey: streamID) {
                // Trailers end the request; nothing in them matters here.
                dispatch(context: context, streamID: streamID, headers: request.headers, body: request.body)
                return
            }
            if pending[streamID] != nil { return }
            if streamID > highestStreamID {
                // After the final GOAWAY, newer streams are refused (NIOHTTP2Handler resets them).
                if draining { return }
                highestStreamID = streamID
            }
            if headers.endStream {
                dispatch(context: context, streamID: streamID, headers: headers.headers, body: nil)
            } else {
                pending[streamID] = PendingRequest(headers: headers.headers, body: nil)
            }
        case .data(let data):
            guard let index = pending.index(forKey: streamID) else { return }
            if case .byteBuffer(var chunk) = data.data, chunk.readableBytes > 0 {
                if pending.values[index].body == nil {
                    pending.values[index].body = chunk
                } else {
                    pending.values[index].body!.writeBuffer(&chunk)
                }
            }
            let size = pending.values[index].body?.readableBytes ?? 0
            if size > maxBodySize {
                pending.remove(at: index)
                let response = EmulatorResponse(status: 413)
                write(context: context, streamID: streamID, response: response, promise: nil)
                // The response is complete; the rest of the request body is not wanted.
                context.write(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .rstStream(.noError))), promise: nil)
                closeIfIdle(context: context)
                return
            }
            if data.endStream {
                let request = pending.remove(at: index).value
                dispatch(context: context, streamID: streamID, headers: request.headers, body: request.body)
            }
        case .rstStream:
            pending.removeValue(forKey: streamID)
            closeIfIdle(context: context)
        case .ping(let data, ack: true) where quiescing && !draining && data == Self.quiescePing:
            drain(context: context)
        default:
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if needsFlush {
            needsFlush = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? NIOHTTP2WindowUpdatedEvent, let inbound = event.inboundWindowSize {
            if event.streamID == .rootStream {
                if openedConnectionWindow, inbound < Self.connectionWindow / 2 {
                    let frame = HTTP2Frame(
                        streamID: .rootStream,
                        payload: .windowUpdate(windowSizeIncrement: Self.connectionWindow - inbound)
                    )
                    context.write(wrapOutboundOut(frame), promise: nil)
                    needsFlush = true
                }
            } else if pending[event.streamID] != nil, inbound < streamWindow / 2 {
                let frame = HTTP2Frame(
                    streamID: event.streamID,
                    payload: .windowUpdate(windowSizeIncrement: streamWindow - inbound)
                )
                context.write(wrapOutboundOut(frame), promise: nil)
                needsFlush = true
            }
        } else if let closed = event as? StreamClosedEvent {
            if pending.removeValue(forKey: closed.streamID) != nil { closeIfIdle(context: context) }
        } else if event is ChannelShouldQuiesceEvent {
            quiesce(context: context)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Protocol errors have already been answered by NIOHTTP2Handler (RST_STREAM or GOAWAY).
        // A stream error ends that stream only; anything else means the connection is not usable.
        if let streamError = error as? NIOHTTP2Errors.StreamError {
            if pending.removeValue(forKey: streamError.streamID) != nil { closeIfIdle(context: context) }
            return
        }
        context.close(promise: nil)
    }

    // MARK: - Requests and responses

    private func dispatch(context: ChannelHandlerContext, streamID: HTTP2StreamID, headers: HPACKHeaders, body: ByteBuffer?) {
        let request = EmulatorRequest(
            method: headers.first(name: ":method") ?? "",
            target: headers.first(name: ":path") ?? "",
            headers: .http2(headers),
            body: body
        )
        let response = responder.respond(to: request, state: &state, allocator: context.channel.allocator)
        if draining && pending.isEmpty {
            let promise = context.eventLoop.makePromise(of: Void.self)
            write(context: context, streamID: streamID, response: response, promise: promise)
            closeAfter(promise.futureResult, context: context)
        } else {
            write(context: context, streamID: streamID, response: response, promise: nil)
        }
    }

    private func write(
        context: ChannelHandlerContext,
        streamID: HTTP2StreamID,
        response: EmulatorResponse,
        promise: EventLoopPromise<Void>?
    ) {
        var headers = HPACKHeaders()
        headers.reserveCapacity(response.headers.count + 2)
        headers.add(name: ":status", value: String(response.status))
        for header in response.headers {
            headers.add(name: header.name, value: header.value)
        }
        if let body = response.body, body.readableBytes > 0 {
            headers.add(name: "content-length", value: String(body.readableBytes))
            context.write(
                wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: headers)))),
                promise: nil
            )
            context.write(
                wrapOutboundOut(
                    HTTP2Frame(streamID: streamID, payload: .data(.init(data: .byteBuffer(body), endStream: true)))
                ),
                promise: promise
            )
        } else {
            context.write(
                wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: headers, endStream: true)))),
                promise: promise
            )
        }
        needsFlush = true
    }

    // MARK: - Graceful shutdown

    /// Two-step GOAWAY (RFC 9113 §6.8): first announce shutdown without refusing anything, then,
    /// one round trip later (a PING), name the last stream that will be served. Streams the peer
    /// opened in the meantime are served rather than refused.
    private func quiesce(context: ChannelHandlerContext) {
        guard !quiescing else { return }
        quiescing = true
        context.write(
            wrapOutboundOut(
                HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: .maxID, errorCode: .noError, opaqueData: nil))
            ),
            promise: nil
        )
        context.writeAndFlush(
            wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .ping(Self.quiescePing, ack: false))),
            promise: nil
        )
        needsFlush = false
    }

    private func drain(context: ChannelHandlerContext) {
        draining = true
        let promise = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(
            wrapOutboundOut(
                HTTP2Frame(
                    streamID: .rootStream,
                    payload: .goAway(lastStreamID: highestStreamID, errorCode: .noError, opaqueData: nil)
                )
            ),
            promise: promise
        )
        if pending.isEmpty {
            closeAfter(promise.futureResult, context: context)
        }
    }

    private func closeIfIdle(context: ChannelHandlerContext) {
        guard draining, pending.isEmpty, !closing else { return }
        closing = true
        context.flush()
        context.close(promise: nil)
    }

    private func closeAfter(_ future: EventLoopFuture<Void>, context: ChannelHandlerContext) {
        guard !closing else { return }
        closing = true
        needsFlush = false
        context.flush()
        let channel = context.channel
        future.whenComplete { _ in channel.close(promise: nil) }
    }
}
