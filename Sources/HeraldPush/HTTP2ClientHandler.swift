import NIOCore
import NIOHPACK

/// The client side of one HTTP/2 connection, frame by frame, right above the socket (or TLS).
///
/// It speaks HTTP/2 itself (RFC 9113), with ``HTTP2FrameEncoder`` and ``HTTP2FrameDecoder``,
/// and only as much of it as a push client needs: it opens streams, sends one request on each
/// and reads one response; the server can open none (push is off).
///
/// Requests handed to ``submit(_:)`` get the next odd stream ids, up to the server's
/// SETTINGS_MAX_CONCURRENT_STREAMS open at once; the rest wait in order and open as streams
/// close. Each request's HEADERS and DATA (with END_STREAM) are written into one buffer, and a
/// whole burst leaves in one write and one flush, so that TLS seals it as a few full records.
/// A body that does not fit in the server's flow-control windows waits for its WINDOW_UPDATE.
/// Response HEADERS and DATA are collected per stream, and whoever waits for the stream is
/// answered at END_STREAM. Connection-level credit is returned as responses arrive (stream
/// windows are large enough for any response this client accepts); PING is answered; the
/// server's SETTINGS apply when they arrive, to the streams already open too.
///
/// Deadlines are checked every ``Configuration/timeoutResolution`` while streams are open (an
/// expired stream is reset), and the connection's life is reported to its
/// ``HTTP2ClientConnection``. Requests wait for the server's SETTINGS before their streams
/// open, so that the first burst respects the server's stream limit. (Only `h2` is offered in
/// ALPN; a server that answers the preface with anything but SETTINGS fails the connection,
/// which counts as a failed attempt.) A server that breaks the protocol gets a GOAWAY with the
/// error's code, and the connection closes; its requests fail as on any lost connection.
final class HTTP2ClientHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    struct Configuration: Sendable {
        /// Time from TCP connect until the server's SETTINGS (TLS handshake included).
        var connectTimeout: TimeAmount
        var maxStreams: Int
        var maxResponseBodySize: Int
        var timeoutResolution: TimeAmount
        /// `host:port`, for error messages.
        var peer: String
    }

    /// The SETTINGS_MAX_CONCURRENT_STREAMS sent (the server can open no stream anyway).
    static let maxConcurrentStreams: UInt32 = 100
    /// The SETTINGS_MAX_HEADER_LIST_SIZE sent, and the largest response header list accepted.
    static let maxHeaderListSize = 64 * 1024
    /// The connection-level inbound window this handler keeps open.
    static var connectionWindow: Int { 1 << 20 }
    /// The default initial window of a stream and of the connection (RFC 9113, 6.9.2).
    static let defaultWindow = 65_535
    /// The largest flow-control window.
    static let largestWindow = Int(Int32.max)
    /// The streams a server may have open at once when its SETTINGS do not say.
    static let defaultPeerMaxConcurrentStreams = 100
    /// The largest output buffer kept for the next burst.
    static let outputKept = 1 << 20

    /// The inbound window of each stream: room for the largest response body accepted and
    /// some padding, so that no stream needs a WINDOW_UPDATE (a larger body resets the stream).
    static func streamWindow(maxResponseBodySize: Int) -> Int {
        max(defaultWindow, min(largestWindow, maxResponseBodySize + 16 * 1024))
    }

    private struct Stream {
        var requestID: Int
        var completion: HTTP2Completion
        var deadline: NIODeadline
        var status: Int?
        var headers: HPACKHeaders
        var body: ByteBuffer?
        /// What the server's window for this stream lets this client still send.
        var sendWindow: Int
        /// The part of the request body not sent yet, waiting for window.
        var unsent: ByteBuffer?
        /// DATA received on this stream (padding included), against its inbound window.
        var received: Int

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
    private let connectionID: Int
    private let configuration: Configuration
    private let streamWindow: Int
    private var context: ChannelHandlerContext?
    private var phase = Phase.starting
    private var becameReady = false
    private var encoder = HTTP2FrameEncoder()
    private var decoder = HTTP2FrameDecoder(maxHeaderListSize: HTTP2ClientHandler.maxHeaderListSize)
    private var streams: [UInt32: Stream] = [:]
    /// Requests accepted and not yet on a stream: before the server's SETTINGS, or beyond its
    /// stream limit.
    private var held = CircularBuffer<HTTP2PendingRequest>()
    /// Streams whose body waits for window, oldest first.
    private var blocked = CircularBuffer<UInt32>()
    private var nextStreamID: UInt32 = 1
    private var streamsOpened = 0
    /// Whether the server's SETTINGS came (the first frame it must send).
    private var sawSettings = false
    private var peerWentAway = false
    private var peerMaxConcurrentStreams = HTTP2ClientHandler.defaultPeerMaxConcurrentStreams
    private var peerInitialWindow = HTTP2ClientHandler.defaultWindow
    private var connectionSendWindow = HTTP2ClientHandler.defaultWindow
    private var connectionReceiveWindow = HTTP2ClientHandler.defaultWindow
    /// We end the connection (shutdown, stream ids used up): say so with a GOAWAY before closing.
    private var sendGoAwayOnClose = false
    private var closing = false
    private var sweep: Scheduled<Void>?
    private var readinessCheck: Scheduled<Void>?
    /// Why the connection failed, for the errors of the requests it held.
    private var failure: String?

    private var peer: String { configuration.peer }

    init(owner: HTTP2ClientConnection, connectionID: Int, configuration: Configuration) {
        self.owner = owner
        self.connectionID = connectionID
        self.configuration = configuration
        self.streamWindow = Self.streamWindow(maxResponseBodySize: configuration.maxResponseBodySize)
    }

    // MARK: - Requests

    /// Opens a stream for each request (or holds them until the connection is ready or a
    /// stream is free) and flushes once. Requests it cannot take, because the connection is
    /// going away, go back to the owner, which has already been told to use another connection.
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
            held.append(contentsOf: requests)
            openHeld()
            flushOutput(context: context)
            armSweep()
        case .goingAway:
            owner.resubmit(requests)
        case .closed:
            // Not yet reported closed, so the owner still sends here.
            let error = closedError
            for request in requests { request.fail(error) }
        }
    }

    /// Opens streams for held requests while the server's stream limit allows. When this
    /// connection's stream ids are used up, it goes away and hands the rest to its owner.
    private func openHeld() {
        guard becameReady, phase == .ready || phase == .goingAway, !peerWentAway, !closing, context != nil else { return }
        while streams.count < peerMaxConcurrentStreams, streamsOpened < configuration.maxStreams,
            let request = held.popFirst()
        {
            open(request)
            if phase == .closed { return }
        }
        guard streamsOpened >= configuration.maxStreams else { return }
        // Stream ids are used up: finish on this connection, send the rest over a new one.
        sendGoAwayOnClose = true
        beginGoingAway()
        if !held.isEmpty {
            let rest = Array(held)
            held.removeAll()
            owner.resubmit(rest)
        }
    }

    private func open(_ request: HTTP2PendingRequest) {
        let streamID = nextStreamID
        nextStreamID &+= 2
        streamsOpened += 1
        let body = request.body.flatMap { $0.readableBytes > 0 ? $0 : nil }
        do {
            try encoder.writeHeaders(streamID: streamID, headers: request.headers, endStream: body == nil)
        } catch {
            request.fail(HTTP2ClientError(.invalidRequest, "the request could not be written to \(peer): \(error.message)"))
            failConnection(error)
            return
        }
        var stream = Stream(
            requestID: request.id, completion: request.completion, deadline: request.deadline, status: nil, headers: [:],
            body: nil, sendWindow: peerInitialWindow, unsent: body, received: 0)
        if body != nil {
            if blocked.isEmpty { sendData(streamID, &stream) }
            if stream.unsent != nil { blocked.append(streamID) }
        }
        streams[streamID] = stream
    }

    /// Writes as much of the stream's unsent body as the windows and the frame size allow.
    private func sendData(_ streamID: UInt32, _ stream: inout Stream) {
        guard var rest = stream.unsent else { return }
        stream.unsent = nil
        while true {
            let size = min(rest.readableBytes, connectionSendWindow, stream.sendWindow, encoder.maxFrameSize)
            guard size > 0 else { break }
            let chunk = rest.readSlice(length: size)!
            let end = rest.readableBytes == 0
            encoder.writeData(streamID: streamID, payload: chunk, endStream: end)
            connectionSendWindow -= size
            stream.sendWindow -= size
            if end { return }
        }
        stream.unsent = rest
    }

    /// Sends what waits for window, oldest stream first, as far as the windows now allow.
    private func sendBlocked() {
        guard !blocked.isEmpty else { return }
        var waiting = CircularBuffer<UInt32>(initialCapacity: blocked.count)
        while let streamID = blocked.popFirst() {
            guard let index = streams.index(forKey: streamID), streams.values[index].unsent != nil else { continue }
            if connectionSendWindow > 0 { sendData(streamID, &streams.values[index]) }
            if streams.values[index].unsent != nil { waiting.append(streamID) }
        }
        blocked = waiting
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
        reset(at: index, .cancel, error)
        if let context { flushOutput(context: context) }
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
        // The preface and our SETTINGS go out at once (TLS holds them until its handshake is
        // done); the connection window is widened right away, so that many responses need no
        // credit round trip.
        encoder.writePreface()
        var settings = [
            HTTP2SettingsParameter(HTTP2SettingsParameter.enablePush, 0),
            HTTP2SettingsParameter(HTTP2SettingsParameter.maxConcurrentStreams, Self.maxConcurrentStreams),
            HTTP2SettingsParameter(HTTP2SettingsParameter.maxHeaderListSize, UInt32(Self.maxHeaderListSize)),
        ]
        if streamWindow != Self.defaultWindow {
            settings.append(HTTP2SettingsParameter(HTTP2SettingsParameter.initialWindowSize, UInt32(streamWindow)))
        }
        encoder.writeSettings(settings)
        encoder.writeWindowUpdate(streamID: 0, increment: Self.connectionWindow - connectionReceiveWindow)
        connectionReceiveWindow = Self.connectionWindow
        flushOutput(context: context)
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
        guard !closing else { return }
        decoder.append(unwrapInboundIn(data))
        do {
            while !closing, let frame = try decoder.nextFrame() {
                try receive(frame, context: context)
            }
        } catch {
            failConnection(error)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if becameReady, !closing, connectionReceiveWindow < Self.connectionWindow / 2 {
            encoder.writeWindowUpdate(streamID: 0, increment: Self.connectionWindow - connectionReceiveWindow)
            connectionReceiveWindow = Self.connectionWindow
        }
        flushOutput(context: context)
        context.fireChannelReadComplete()
    }

    private func receive(_ frame: HTTP2FrameDecoder.Frame, context: ChannelHandlerContext) throws(HTTP2ProtocolError) {
        if !sawSettings {
            guard case .settings = frame else {
                throw HTTP2ProtocolError(.protocolError, "the server's first frame is not SETTINGS")
            }
        }
        switch frame {
        case .headers(let streamID, let headers, let endStream):
            try receiveHeaders(headers, endStream: endStream, streamID: streamID)
        case .data(let streamID, let payload, let endStream, let length):
            connectionReceiveWindow -= length
            guard connectionReceiveWindow >= 0 else {
                throw HTTP2ProtocolError(.flowControlError, "DATA beyond the connection's flow-control window")
            }
            try receiveData(payload, endStream: endStream, length: length, streamID: streamID)
        case .settings(let parameters):
            try apply(parameters)
            encoder.writeSettingsAck()
            if !sawSettings {
                sawSettings = true
                if phase == .starting { becomeReady() }
            } else {
                sendBlocked()
                openHeld()
            }
        case .settingsAck:
            break
        case .ping(let opaqueData, let ack):
            if !ack { encoder.writePing(opaqueData: opaqueData, ack: true) }
        case .goAway(let lastStreamID, let errorCode):
            receiveGoAway(lastStreamID: lastStreamID, errorCode: errorCode)
        case .rstStream(let streamID, let errorCode):
            try checkOpened(streamID, frame: "RST_STREAM")
            fail(streamID, HTTP2ClientError(.streamReset, "\(peer) reset the stream (\(errorCode))"))
        case .windowUpdate(0, let increment):
            connectionSendWindow += increment
            guard connectionSendWindow <= Self.largestWindow else {
                throw HTTP2ProtocolError(.flowControlError, "a WINDOW_UPDATE beyond the largest connection window")
            }
            sendBlocked()
        case .windowUpdate(let streamID, let increment):
            try receiveWindowUpdate(increment, streamID: streamID)
        case .ignored:
            break
        }
    }

    /// Applies the server's SETTINGS.
    private func apply(_ parameters: [HTTP2SettingsParameter]) throws(HTTP2ProtocolError) {
        for parameter in parameters {
            let value = Int(parameter.value)
            switch parameter.identifier {
            case HTTP2SettingsParameter.headerTableSize:
                encoder.setHeaderTableSize(value)
            case HTTP2SettingsParameter.enablePush:
                guard value <= 1 else { throw HTTP2ProtocolError(.protocolError, "SETTINGS_ENABLE_PUSH of \(value)") }
            case HTTP2SettingsParameter.maxConcurrentStreams:
                peerMaxConcurrentStreams = value
            case HTTP2SettingsParameter.initialWindowSize:
                guard value <= Self.largestWindow else {
                    throw HTTP2ProtocolError(.flowControlError, "SETTINGS_INITIAL_WINDOW_SIZE of \(value)")
                }
                // The change applies to the streams open now as well (RFC 9113, 6.9.2).
                let delta = value - peerInitialWindow
                peerInitialWindow = value
                guard delta != 0 else { break }
                for index in streams.indices {
                    streams.values[index].sendWindow += delta
                    guard streams.values[index].sendWindow <= Self.largestWindow else {
                        throw HTTP2ProtocolError(.flowControlError, "SETTINGS_INITIAL_WINDOW_SIZE overflows a stream's window")
                    }
                }
            case HTTP2SettingsParameter.maxFrameSize:
                guard (16_384...16_777_215).contains(value) else {
                    throw HTTP2ProtocolError(.protocolError, "SETTINGS_MAX_FRAME_SIZE of \(value)")
                }
                encoder.maxFrameSize = value
            default:
                // SETTINGS_MAX_HEADER_LIST_SIZE is advisory; unknown settings are ignored.
                break
            }
        }
    }

    private func becomeReady() {
        phase = .ready
        becameReady = true
        readinessCheck?.cancel()
        readinessCheck = nil
        owner.connectionReady(id: connectionID)
        openHeld()
    }

    /// A frame about a stream this client has not opened (an even id, or one not used yet)
    /// breaks the protocol; one about a stream that has closed is ignored.
    private func checkOpened(_ streamID: UInt32, frame: String) throws(HTTP2ProtocolError) {
        guard streamID & 1 == 1, streamID < nextStreamID else {
            throw HTTP2ProtocolError(.protocolError, "\(frame) on stream \(streamID), which this client did not open")
        }
    }

    private func receiveHeaders(_ headers: HPACKHeaders, endStream: Bool, streamID: UInt32) throws(HTTP2ProtocolError) {
        guard let index = streams.index(forKey: streamID) else {
            try checkOpened(streamID, frame: "HEADERS")
            return
        }
        if streams.values[index].status == nil {
            guard let raw = headers.first(name: ":status"), let status = Int(raw) else {
                reset(at: index, .protocolError, HTTP2ClientError(.invalidResponse, "\(peer) answered without :status"))
                return
            }
            // 1xx: an interim response; the final one follows.
            if status < 200 { return }
            streams.values[index].status = status
            streams.values[index].headers = headers
        }
        // Anything after the final response headers are trailers: not needed.
        if endStream { complete(at: index) }
    }

    private func receiveData(_ payload: ByteBuffer, endStream: Bool, length: Int, streamID: UInt32) throws(HTTP2ProtocolError) {
        guard let index = streams.index(forKey: streamID) else {
            try checkOpened(streamID, frame: "DATA")
            return
        }
        streams.values[index].received += length
        guard streams.values[index].received <= streamWindow else {
            reset(
                at: index, .flowControlError,
                HTTP2ClientError(.invalidResponse, "\(peer) sent DATA beyond the stream's flow-control window"))
            return
        }
        if payload.readableBytes > 0 {
            let size = (streams.values[index].body?.readableBytes ?? 0) + payload.readableBytes
            guard size <= configuration.maxResponseBodySize else {
                let limit = configuration.maxResponseBodySize
                reset(at: index, .cancel, HTTP2ClientError(.invalidResponse, "the response body from \(peer) exceeds \(limit) bytes"))
                return
            }
            if streams.values[index].body == nil {
                streams.values[index].body = payload
            } else {
                var chunk = payload
                streams.values[index].body!.writeBuffer(&chunk)
            }
        }
        if endStream { complete(at: index) }
    }

    private func receiveWindowUpdate(_ increment: Int, streamID: UInt32) throws(HTTP2ProtocolError) {
        guard let index = streams.index(forKey: streamID) else {
            try checkOpened(streamID, frame: "WINDOW_UPDATE")
            return
        }
        guard increment > 0 else {
            reset(at: index, .protocolError, HTTP2ClientError(.invalidResponse, "\(peer) sent a WINDOW_UPDATE of 0"))
            return
        }
        streams.values[index].sendWindow += increment
        guard streams.values[index].sendWindow <= Self.largestWindow else {
            reset(
                at: index, .flowControlError,
                HTTP2ClientError(.invalidResponse, "\(peer) sent a WINDOW_UPDATE beyond the largest stream window"))
            return
        }
        if streams.values[index].unsent != nil { sendBlocked() }
    }

    private func complete(at index: Dictionary<UInt32, Stream>.Index) {
        let (streamID, stream) = streams.remove(at: index)
        // Answered before its body was all sent: the rest is not wanted.
        if stream.unsent != nil { encoder.writeRstStream(streamID: streamID, errorCode: .cancel) }
        if let status = stream.status {
            let response = HTTP2Client.Response(status: status, headers: stream.headers, body: stream.body)
            stream.completion.complete(.success(response))
        } else {
            stream.fail(HTTP2ClientError(.invalidResponse, "\(peer) ended the stream without response headers"))
        }
        streamClosed()
    }

    /// Fails the stream at `index` and resets it, so that the server stops and the slot frees.
    private func reset(at index: Dictionary<UInt32, Stream>.Index, _ code: HTTP2ErrorCode, _ error: HTTP2ClientError) {
        let (streamID, stream) = streams.remove(at: index)
        stream.fail(error)
        encoder.writeRstStream(streamID: streamID, errorCode: code)
        streamClosed()
    }

    /// A stream closed: its slot may take a held request, or the connection may be done.
    private func streamClosed() {
        if !held.isEmpty { openHeld() }
        closeIfIdle()
    }

    private func receiveGoAway(lastStreamID: UInt32, errorCode: HTTP2ErrorCode) {
        peerWentAway = true
        // Streams above the last one the server processed were not processed: safe to send again.
        let refused = streams.keys.filter { $0 > lastStreamID }
        if !refused.isEmpty || !held.isEmpty {
            let error = HTTP2ClientError(
                .goAway, "\(peer) is going away (GOAWAY \(errorCode)); the request was not processed")
            for streamID in refused { streams.removeValue(forKey: streamID)?.fail(error) }
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
        if sendGoAwayOnClose { encoder.writeGoAway(errorCode: .noError) }
        flushOutput(context: context)
        context.close(promise: nil)
    }

    /// The server broke the protocol: a GOAWAY with the error's code, and the connection closes.
    private func failConnection(_ error: HTTP2ProtocolError) {
        guard !closing, let context else { return }
        failure = "HTTP/2 protocol error (\(error.code)): \(error.message)"
        // A connection that was up is replaced at once; one that never came up counts as a
        // failed attempt, reported when it closes.
        if becameReady { beginGoingAway() }
        phase = .closed
        closing = true
        encoder.writeGoAway(errorCode: error.code, debugData: error.message)
        flushOutput(context: context)
        context.close(promise: nil)
    }

    /// Writes what was encoded as one write, and flushes.
    private func flushOutput(context: ChannelHandlerContext) {
        guard encoder.output.readableBytes > 0 else { return }
        context.write(wrapOutboundOut(encoder.output), promise: nil)
        context.flush()
        // The storage is used again for the next burst once the next handler has let go of it;
        // a rare large burst does not keep its storage for the life of the connection.
        if encoder.output.capacity > Self.outputKept {
            encoder.output = context.channel.allocator.buffer(capacity: 4096)
        } else {
            encoder.output.clear()
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if failure == nil { failure = String(describing: error) }
        context.close(promise: nil)
    }

    private var closedError: HTTP2ClientError {
        becameReady
            ? HTTP2ClientError(
                .connectionClosed,
                "the connection to \(peer) closed before the response was complete" + (failure.map { " (\($0))" } ?? ""))
            : HTTP2ClientError(.connectFailed, "cannot set up HTTP/2 with \(peer): \(failure ?? "the connection closed")")
    }

    func channelInactive(context: ChannelHandlerContext) {
        phase = .closed
        sweep?.cancel()
        sweep = nil
        readinessCheck?.cancel()
        readinessCheck = nil
        let error = closedError
        let open = streams
        streams = [:]
        blocked.removeAll()
        for stream in open.values { stream.fail(error) }
        failHeld(error)
        owner.connectionClosed(id: connectionID, error: error)
        context.fireChannelInactive()
    }

    // MARK: - Failures and deadlines

    private func fail(_ streamID: UInt32, _ error: HTTP2ClientError) {
        guard let stream = streams.removeValue(forKey: streamID) else { return }
        stream.fail(error)
        streamClosed()
    }

    private func failHeld(_ error: HTTP2ClientError) {
        let requests = held
        held.removeAll()
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
        var expired: [UInt32] = []
        for (streamID, stream) in streams where stream.deadline <= now {
            expired.append(streamID)
        }
        for streamID in expired {
            streams.removeValue(forKey: streamID)?.fail(error)
            encoder.writeRstStream(streamID: streamID, errorCode: .cancel)
        }
        if held.contains(where: { $0.deadline <= now }) {
            var kept = CircularBuffer<HTTP2PendingRequest>(initialCapacity: held.count)
            for request in held {
                if request.deadline <= now { request.fail(error) } else { kept.append(request) }
            }
            held = kept
        }
        if !expired.isEmpty, !held.isEmpty { openHeld() }
        flushOutput(context: context)
        closeIfIdle()
        if !streams.isEmpty || !held.isEmpty { armSweep() }
    }
}
