import NIOCore
import NIOHPACK
import NIOHTTP2

/// The client side of one HTTP/2 connection, frame by frame.
///
/// It sits directly after `NIOHTTP2Handler` (no stream multiplexer, no child channel per
/// stream). Requests handed to ``submit(_:)`` get the next odd stream ids; their HEADERS and
/// DATA (with END_STREAM) are written together and flushed once per burst. Response HEADERS
/// and DATA are collected per stream id, and whoever waits for the stream is answered at
/// END_STREAM. `NIOHTTP2Handler` holds back streams beyond the server's
/// SETTINGS_MAX_CONCURRENT_STREAMS and answers PING; this handler returns connection-level
/// flow-control credit as responses arrive, checks deadlines every
/// ``Configuration/timeoutResolution`` while streams are open (an expired stream is reset), and
/// reports the connection's life to its ``HTTP2ClientConnection``.
///
/// Requests wait for the server's SETTINGS before their streams open, so that the first burst
/// respects the server's stream limit rather than the default of 100. (Only `h2` is offered in
/// ALPN; a server that answers the preface with anything but HTTP/2 frames fails the
/// connection, which counts as a failed attempt.)
final class HTTP2ClientHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    struct Configuration: Sendable {
        /// Time from TCP connect until the server's SETTINGS (TLS handshake included).
        var connectTimeout: TimeAmount
        var maxStreams: Int
        var maxResponseBodySize: Int
        var timeoutResolution: TimeAmount
        /// `host:port`, for error messages.
        var peer: String
    }

    /// Our SETTINGS: no server push, default stream windows (responses are small).
    ///
    /// NIOHTTP2's checks of every header block and of content lengths are off: the blocks
    /// sent are built by ``HTTP2Client`` and its providers (pseudo-header fields first, names
    /// in lowercase, checked where a caller supplies them), and of a response only `:status`
    /// and the body, bounded by ``Configuration/maxResponseBodySize``, are read.
    static let connectionConfiguration: NIOHTTP2Handler.ConnectionConfiguration = {
        var configuration = NIOHTTP2Handler.ConnectionConfiguration()
        configuration.headerBlockValidation = .disabled
        configuration.contentLengthValidation = .disabled
        configuration.initialSettings = [
            HTTP2Setting(parameter: .enablePush, value: 0),
            HTTP2Setting(parameter: .maxConcurrentStreams, value: 100),
            HTTP2Setting(parameter: .maxHeaderListSize, value: 64 * 1024),
        ]
        return configuration
    }()

    /// The connection-level inbound window this handler keeps open.
    static var connectionWindow: Int { 1 << 20 }

    private struct Stream {
        var requestID: Int
        var completion: HTTP2Completion
        var deadline: NIODeadline
        var status: Int?
        var headers: HPACKHeaders
        var body: ByteBuffer?

        func fail(_ error: HTTP2ClientError) {
            completion.complete(.failure(error))
        }
    }

    private enum Phase {
        /// Waiting for TLS and the server's SETTINGS; requests are held.
        case starting
        case ready
        /// No new streams (GOAWAY, stream ids used up, shutdown); closes when the last one ends.
        case goingAway
        case closed
    }

    private let owner: HTTP2ClientConnection
    private let flushGate: HTTP2FlushGate
    private let connectionID: Int
    private let configuration: Configuration
    private var context: ChannelHandlerContext?
    private var phase = Phase.starting
    private var becameReady = false
    private var streams: [HTTP2StreamID: Stream] = [:]
    private var held: [HTTP2PendingRequest] = []
    private var nextStreamID: Int32 = 1
    private var streamsOpened = 0
    /// We end the connection (shutdown, stream ids used up): say so with a GOAWAY before closing.
    private var sendGoAwayOnClose = false
    private var closing = false
    private var needsFlush = false
    private var sweep: Scheduled<Void>?
    private var readinessCheck: Scheduled<Void>?
    /// Why the connection failed, for the errors of the requests it held.
    private var failure: String?

    private var peer: String { configuration.peer }

    init(owner: HTTP2ClientConnection, flushGate: HTTP2FlushGate, connectionID: Int, configuration: Configuration) {
        self.owner = owner
        self.flushGate = flushGate
        self.connectionID = connectionID
        self.configuration = configuration
    }

    // MARK: - Requests

    /// Opens a stream for each request (or holds them until the connection is ready) and
    /// flushes once. Requests it cannot take, because the connection is going away, go back to
    /// the owner, which has already been told to use another connection.
    func submit(_ requests: [HTTP2PendingRequest]) {
        guard !requests.isEmpty else { return }
        switch phase {
        case .starting:
            held.append(contentsOf: requests)
            armSweep()
        case .ready:
            guard let context else {
                let error = HTTP2ClientError(.connectionClosed, "the connection to \(peer) is closed")
                for request in requests { request.fail(error) }
                return
            }
            open(requests[...], context: context)
        case .goingAway, .closed:
            owner.resubmit(requests)
        }
    }

    private func open(_ requests: ArraySlice<HTTP2PendingRequest>, context: ChannelHandlerContext) {
        var index = requests.startIndex
        // A flush after each request sends its DATA in stream order (see HTTP2FlushGate); the
        // gate passes one flush to the socket for the burst.
        flushGate.coalescing {
            while index < requests.endIndex, streamsOpened < configuration.maxStreams {
                open(requests[index], context: context)
                context.flush()
                index += 1
            }
        }
        needsFlush = false
        armSweep()
        if streamsOpened >= configuration.maxStreams {
            // Stream ids are used up: finish on this connection, send the rest over a new one.
            sendGoAwayOnClose = true
            beginGoingAway()
            if index < requests.endIndex { owner.resubmit(Array(requests[index...])) }
            closeIfIdle()
        }
    }

    private func open(_ request: HTTP2PendingRequest, context: ChannelHandlerContext) {
        let streamID = HTTP2StreamID(nextStreamID)
        nextStreamID &+= 2
        streamsOpened += 1
        streams[streamID] = Stream(
            requestID: request.id, completion: request.completion, deadline: request.deadline, status: nil,
            headers: [:], body: nil)
        let written = context.eventLoop.makePromise(of: Void.self)
        if let body = request.body, body.readableBytes > 0 {
            write(.headers(.init(headers: request.headers)), on: streamID, context: context, promise: written)
            write(.data(.init(data: .byteBuffer(body), endStream: true)), on: streamID, context: context)
        } else {
            write(.headers(.init(headers: request.headers, endStream: true)), on: streamID, context: context, promise: written)
        }
        // A stream that cannot be created (a header NIOHTTP2 refuses, a closing connection)
        // would otherwise wait for its deadline.
        written.futureResult.assumeIsolated().whenFailure { error in
            let code: HTTP2ClientError.Code = error is ChannelError ? .connectionClosed : .invalidRequest
            self.fail(streamID, HTTP2ClientError(code, "the request could not be written to \(self.peer): \(error)"))
        }
    }

    private func write(
        _ payload: HTTP2Frame.FramePayload,
        on streamID: HTTP2StreamID,
        context: ChannelHandlerContext,
        promise: EventLoopPromise<Void>? = nil
    ) {
        context.write(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: payload)), promise: promise)
    }

    /// Fails request `requestID` with `error` if it is held or on a stream of this connection
    /// (resetting the stream). Returns whether it was found.
    func cancel(requestID: Int, error: HTTP2ClientError) -> Bool {
        if let index = held.firstIndex(where: { $0.id == requestID }) {
            held.remove(at: index).fail(error)
            closeIfIdle()
            return true
        }
        guard let index = streams.firstIndex(where: { $0.value.requestID == requestID }) else { return false }
        reset(at: index, error)
        if needsFlush {
            needsFlush = false
            context?.flush()
        }
        return true
    }

    /// Finishes the streams in flight, then closes; requests not yet sent fail. For shutdown.
    func closeWhenIdle() {
        sendGoAwayOnClose = true
        switch phase {
        case .starting:
            failHeld(HTTP2ClientError(.shutDown, "the HTTP/2 client is shut down"))
            phase = .goingAway
            closeIfIdle()
        case .ready:
            phase = .goingAway
            closeIfIdle()
        case .goingAway:
            closeIfIdle()
        case .closed:
            break
        }
    }

    // MARK: - Inbound

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        readinessCheck = context.eventLoop.assumeIsolated().scheduleTask(in: configuration.connectTimeout) {
            guard self.phase == .starting else { return }
            self.failure = "no HTTP/2 SETTINGS within \(self.configuration.connectTimeout)"
            // TLS shutdown still reads: SETTINGS arriving now must not open streams on a
            // closing connection, whose requests would fail as if sent and lost.
            self.phase = .closed
            context.close(promise: nil)
        }
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .headers(let payload):
            receiveHeaders(payload, streamID: frame.streamID)
        case .data(let payload):
            receiveData(payload, streamID: frame.streamID)
        case .settings(.settings):
            if phase == .starting { becomeReady(context: context) }
        case .goAway(let lastStreamID, let errorCode, _):
            receiveGoAway(lastStreamID: lastStreamID, errorCode: errorCode)
        case .rstStream(let errorCode):
            fail(frame.streamID, HTTP2ClientError(.streamReset, "\(peer) reset the stream (\(errorCode))"))
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

    private func becomeReady(context: ChannelHandlerContext) {
        phase = .ready
        becameReady = true
        readinessCheck?.cancel()
        readinessCheck = nil
        owner.connectionReady(id: connectionID)
        // Widen the connection window once, so that many responses need no credit round trip.
        write(.windowUpdate(windowSizeIncrement: Self.connectionWindow - 65535), on: .rootStream, context: context)
        let requests = held
        held = []
        open(requests[...], context: context)
    }

    private func receiveHeaders(_ payload: HTTP2Frame.FramePayload.Headers, streamID: HTTP2StreamID) {
        guard let index = streams.index(forKey: streamID) else { return }
        if streams.values[index].status == nil {
            guard let raw = payload.headers.first(name: ":status"), let status = Int(raw) else {
                reset(at: index, HTTP2ClientError(.invalidResponse, "\(peer) answered without :status"))
                return
            }
            // 1xx: an interim response; the final one follows.
            if status < 200 { return }
            streams.values[index].status = status
            streams.values[index].headers = payload.headers
        }
        // Anything after the final response headers are trailers: not needed.
        if payload.endStream { complete(at: index) }
    }

    private func receiveData(_ payload: HTTP2Frame.FramePayload.Data, streamID: HTTP2StreamID) {
        guard let index = streams.index(forKey: streamID) else { return }
        if case .byteBuffer(var chunk) = payload.data, chunk.readableBytes > 0 {
            let size = (streams.values[index].body?.readableBytes ?? 0) + chunk.readableBytes
            guard size <= configuration.maxResponseBodySize else {
                let limit = configuration.maxResponseBodySize
                reset(at: index, HTTP2ClientError(.invalidResponse, "the response body from \(peer) exceeds \(limit) bytes"))
                return
            }
            if streams.values[index].body == nil {
                streams.values[index].body = chunk
            } else {
                streams.values[index].body!.writeBuffer(&chunk)
            }
        }
        if payload.endStream { complete(at: index) }
    }

    private func complete(at index: Dictionary<HTTP2StreamID, Stream>.Index) {
        let stream = streams.remove(at: index).value
        if let status = stream.status {
            let response = HTTP2Client.Response(status: status, headers: stream.headers, body: stream.body)
            stream.completion.complete(.success(response))
        } else {
            stream.fail(HTTP2ClientError(.invalidResponse, "\(peer) ended the stream without response headers"))
        }
        closeIfIdle()
    }

    /// Fails the stream at `index` and resets it, so that the server stops and the slot frees.
    private func reset(at index: Dictionary<HTTP2StreamID, Stream>.Index, _ error: HTTP2ClientError) {
        let (streamID, stream) = streams.remove(at: index)
        stream.fail(error)
        if let context { write(.rstStream(.cancel), on: streamID, context: context) }
        needsFlush = true
        closeIfIdle()
    }

    private func receiveGoAway(lastStreamID: HTTP2StreamID, errorCode: HTTP2ErrorCode) {
        // Streams above the last one the server processed were not processed: safe to send again.
        let refused = streams.keys.filter { $0 > lastStreamID }
        if !refused.isEmpty || !held.isEmpty {
            let error = HTTP2ClientError(
                .goAway, "\(peer) is going away (GOAWAY \(errorCode)); the request was not processed")
            for streamID in refused { fail(streamID, error) }
            failHeld(error)
        }
        beginGoingAway()
        closeIfIdle()
    }

    private func beginGoingAway() {
        guard phase == .starting || phase == .ready else { return }
        phase = .goingAway
        owner.connectionGoingAway(id: connectionID)
    }

    private func closeIfIdle() {
        guard phase == .goingAway, streams.isEmpty, held.isEmpty, !closing, let context else { return }
        closing = true
        if sendGoAwayOnClose {
            write(.goAway(lastStreamID: .rootStream, errorCode: .noError, opaqueData: nil), on: .rootStream, context: context)
        }
        context.flush()
        needsFlush = false
        context.close(promise: nil)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case let closed as StreamClosedEvent:
            if streams[closed.streamID] != nil {
                let reason = closed.reason.map { "\($0)" } ?? "closed"
                fail(closed.streamID, HTTP2ClientError(.streamReset, "the stream to \(peer) ended (\(reason))"))
            }
        case let window as NIOHTTP2WindowUpdatedEvent:
            if window.streamID == .rootStream, becameReady, let inbound = window.inboundWindowSize,
                inbound < Self.connectionWindow / 2
            {
                write(.windowUpdate(windowSizeIncrement: Self.connectionWindow - inbound), on: .rootStream, context: context)
                needsFlush = true
            }
        default:
            break
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A stream error ends that stream only (StreamClosedEvent follows); anything else means
        // the connection is not usable.
        if error is NIOHTTP2Errors.StreamError { return }
        if failure == nil { failure = String(describing: error) }
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        phase = .closed
        sweep?.cancel()
        sweep = nil
        readinessCheck?.cancel()
        readinessCheck = nil
        let error =
            becameReady
            ? HTTP2ClientError(.connectionClosed, "the connection to \(peer) closed before the response was complete")
            : HTTP2ClientError(.connectFailed, "cannot set up HTTP/2 with \(peer): \(failure ?? "the connection closed")")
        let open = streams
        streams = [:]
        for stream in open.values { stream.fail(error) }
        failHeld(error)
        owner.connectionClosed(id: connectionID, error: error)
        context.fireChannelInactive()
    }

    // MARK: - Failures and deadlines

    private func fail(_ streamID: HTTP2StreamID, _ error: HTTP2ClientError) {
        guard let stream = streams.removeValue(forKey: streamID) else { return }
        stream.fail(error)
        closeIfIdle()
    }

    private func failHeld(_ error: HTTP2ClientError) {
        let requests = held
        held = []
        for request in requests { request.fail(error) }
    }

    private func armSweep() {
        guard sweep == nil, phase != .closed, let context else { return }
        sweep = context.eventLoop.assumeIsolated().scheduleTask(in: configuration.timeoutResolution) {
            self.sweep = nil
            self.expireOverdue()
        }
    }

    /// Fails and resets the streams (and held requests) whose deadline passed.
    private func expireOverdue() {
        guard phase != .closed, let context else { return }
        let now = NIODeadline.now()
        let error = HTTP2ClientError(.timeout, "no complete response from \(peer) before the deadline")
        var expired: [HTTP2StreamID] = []
        for (streamID, stream) in streams where stream.deadline <= now {
            expired.append(streamID)
        }
        for streamID in expired {
            streams.removeValue(forKey: streamID)?.fail(error)
            write(.rstStream(.cancel), on: streamID, context: context)
        }
        if held.contains(where: { $0.deadline <= now }) {
            var kept: [HTTP2PendingRequest] = []
            for request in held {
                if request.deadline <= now { request.fail(error) } else { kept.append(request) }
            }
            held = kept
        }
        if !expired.isEmpty {
            context.flush()
            closeIfIdle()
        }
        if !streams.isEmpty || !held.isEmpty { armSweep() }
    }
}
