import NIOCore
import NIOEmbedded
import NIOHPACK
import Testing

@testable import HeraldPush

/// One client connection on an `EmbeddedChannel`, with the test playing the server frame by
/// frame: what the client writes is read back with ``HTTP2FrameDecoder``, what the server says
/// is written with ``HTTP2FrameEncoder``.
final class ScriptedHTTP2Connection {
    let channel = EmbeddedChannel()
    let handler: HTTP2ClientHandler
    private var server = HTTP2FrameEncoder()
    private var reader = HTTP2FrameDecoder(maxHeaderListSize: 1 << 20)
    private var sawPreface = false

    init(maxResponseBodySize: Int = 16 * 1024) throws {
        let owner = HTTP2ClientConnection(
            eventLoop: channel.embeddedEventLoop,
            shared: .init(configuration: .init(host: "127.0.0.1", port: 443), sslContext: nil, serverHostname: nil))
        handler = HTTP2ClientHandler(
            owner: owner, connectionID: 1,
            configuration: .init(
                connectTimeout: .seconds(10), maxStreams: 1 << 30, maxResponseBodySize: maxResponseBodySize,
                timeoutResolution: .seconds(10), peer: "127.0.0.1:443"))
        try channel.pipeline.syncOperations.addHandler(handler)
        channel.connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: 443), promise: nil)
    }

    /// The frames the client wrote since the last call.
    func clientFrames() throws -> [HTTP2FrameDecoder.Frame] {
        while var bytes = try channel.readOutbound(as: ByteBuffer.self) {
            if !sawPreface {
                #expect(bytes.readString(length: 24) == HTTP2FrameEncoder.preface)
                sawPreface = true
            }
            reader.append(bytes)
        }
        var frames: [HTTP2FrameDecoder.Frame] = []
        while let frame = try reader.nextFrame() { frames.append(frame) }
        return frames
    }

    /// Sends what `write` encodes to the client, as one read.
    func serverSends(_ write: (inout HTTP2FrameEncoder) throws -> Void) throws {
        try write(&server)
        let bytes = server.output
        server.output.clear()
        try channel.writeInbound(bytes)
        channel.pipeline.fireChannelReadComplete()
    }

    func serverSends(raw bytes: ByteBuffer) throws {
        try channel.writeInbound(bytes)
        channel.pipeline.fireChannelReadComplete()
    }

    /// A response header block.
    static func response(_ status: Int, _ fields: [(String, String)] = []) -> HPACKHeaders {
        var headers = HPACKHeaders()
        headers.add(name: ":status", value: String(status))
        for (name, value) in fields { headers.add(name: name, value: value) }
        return headers
    }

    static func requestHeaders(_ path: String = "/3/device/00") -> HPACKHeaders {
        var headers = HPACKHeaders()
        headers.add(name: ":method", value: "POST")
        headers.add(name: ":scheme", value: "https")
        headers.add(name: ":authority", value: "127.0.0.1:443")
        headers.add(name: ":path", value: path, indexing: .nonIndexable)
        return headers
    }

    /// Submits `bodies.count` requests as one batch, runs `script` (which must see every
    /// request answered or failed), then closes the connection, failing what is still open so
    /// that the batch always completes, and returns the answers in order.
    func exchange(
        _ bodies: [ByteBuffer?],
        deadline: NIODeadline = .now() + .seconds(60),
        _ script: ([HTTP2PendingRequest]) throws -> Void
    ) async throws -> [Result<HTTP2Client.Response, HTTP2ClientError>] {
        var failure: (any Error)?
        let answers = await withUnsafeContinuation { continuation in
            let batch = HTTP2Batch(count: bodies.count, continuation: continuation)
            let requests = bodies.enumerated().map { index, body in
                HTTP2PendingRequest(
                    id: index, headers: Self.requestHeaders(), body: body, deadline: deadline,
                    completion: .batch(batch, index: index))
            }
            do {
                try script(requests)
            } catch {
                failure = error
            }
            channel.pipeline.fireChannelInactive()
        }
        if let failure { throw failure }
        return answers.map(\.result)
    }
}

extension HTTP2FrameDecoder.Frame {
    var streamID: UInt32? {
        switch self {
        case .data(let streamID, _, _, _), .headers(let streamID, _, _), .rstStream(let streamID, _),
            .windowUpdate(let streamID, _):
            return streamID
        default:
            return nil
        }
    }

    /// DATA: its stream, length and END_STREAM.
    var dataFrame: (streamID: UInt32, length: Int, endStream: Bool)? {
        guard case .data(let streamID, let payload, let endStream, _) = self else { return nil }
        return (streamID, payload.readableBytes, endStream)
    }

    var isHeaders: Bool {
        if case .headers = self { return true }
        return false
    }
}

@Suite(.timeLimit(.minutes(1))) struct HTTP2ClientHandlerTests {
    @Test func theClientSpeaksFirstAndHoldsRequestsUntilTheServersSettings() async throws {
        let connection = try ScriptedHTTP2Connection()
        let answers = try await connection.exchange([ByteBuffer(string: "{}"), nil]) { requests in
            let opening = try connection.clientFrames()
            guard opening.count == 2, case .settings(let settings) = opening[0],
                case .windowUpdate(0, let increment) = opening[1]
            else {
                Issue.record("\(opening)")
                return
            }
            #expect(settings == [.init(2, 0), .init(3, 100), .init(6, 65536)])
            #expect(increment == HTTP2ClientHandler.connectionWindow - 65_535)

            connection.handler.submit(requests)
            #expect(try connection.clientFrames().isEmpty)

            try connection.serverSends { $0.writeSettings([]) }
            let sent = try connection.clientFrames()
            guard sent.count == 4, case .settingsAck = sent[0], case .headers(1, let headers, false) = sent[1],
                case .data(1, let body, true, _) = sent[2], case .headers(3, _, true) = sent[3]
            else {
                Issue.record("\(sent)")
                return
            }
            #expect(headers.first(name: ":path") == "/3/device/00")
            #expect(String(buffer: body) == "{}")

            try connection.serverSends {
                $0.writeSettingsAck()
                try $0.writeHeaders(streamID: 3, headers: ScriptedHTTP2Connection.response(410), endStream: false)
                $0.writeData(streamID: 3, payload: ByteBuffer(string: #"{"reason":"#), endStream: false)
                $0.writeData(streamID: 3, payload: ByteBuffer(string: #""Unregistered"}"#), endStream: true)
                try $0.writeHeaders(
                    streamID: 1, headers: ScriptedHTTP2Connection.response(200, [("apns-id", "A")]), endStream: true)
            }
        }
        let ok = try answers[0].get()
        #expect(ok.status == 200)
        #expect(ok.header("apns-id") == "A")
        #expect(ok.body == nil)
        let gone = try answers[1].get()
        #expect(gone.status == 410)
        #expect(gone.body.map { String(buffer: $0) } == #"{"reason":"Unregistered"}"#)
    }

    @Test func theServersStreamLimitHoldsStreamsBackUntilOthersClose() async throws {
        let connection = try ScriptedHTTP2Connection()
        let answers = try await connection.exchange(Array(repeating: nil, count: 5)) { requests in
            _ = try connection.clientFrames()
            connection.handler.submit(requests)
            try connection.serverSends { $0.writeSettings([.init(HTTP2SettingsParameter.maxConcurrentStreams, 2)]) }
            #expect(try connection.clientFrames().compactMap { $0.isHeaders ? $0.streamID : nil } == [1, 3])

            // One answered, one reset by the server: two slots free.
            try connection.serverSends {
                try $0.writeHeaders(streamID: 1, headers: ScriptedHTTP2Connection.response(200), endStream: true)
                $0.writeRstStream(streamID: 3, errorCode: .refusedStream)
            }
            #expect(try connection.clientFrames().compactMap { $0.isHeaders ? $0.streamID : nil } == [5, 7])

            // A limit raised mid-connection lets the last one go at once.
            try connection.serverSends { $0.writeSettings([.init(HTTP2SettingsParameter.maxConcurrentStreams, 3)]) }
            #expect(try connection.clientFrames().compactMap { $0.isHeaders ? $0.streamID : nil } == [9])
            try connection.serverSends {
                for streamID: UInt32 in [5, 7, 9] {
                    try $0.writeHeaders(streamID: streamID, headers: ScriptedHTTP2Connection.response(200), endStream: true)
                }
            }
        }
        #expect(answers.map(\.status) == [200, nil, 200, 200, 200])
        #expect(answers[1].errorCode == .streamReset)
    }

    @Test func aBodyWaitsForTheStreamWindowAndAWindowChangeAppliesToOpenStreams() async throws {
        let connection = try ScriptedHTTP2Connection()
        let answers = try await connection.exchange([ByteBuffer(repeating: 1, count: 25)]) { requests in
            _ = try connection.clientFrames()
            connection.handler.submit(requests)
            try connection.serverSends { $0.writeSettings([.init(HTTP2SettingsParameter.initialWindowSize, 10)]) }
            #expect(try connection.clientFrames().compactMap(\.dataFrame).map(\.length) == [10])

            try connection.serverSends { $0.writeWindowUpdate(streamID: 1, increment: 5) }
            #expect(try connection.clientFrames().compactMap(\.dataFrame).map(\.length) == [5])

            // Lowered: the stream's window goes below zero, and a WINDOW_UPDATE of 5 is not enough.
            try connection.serverSends { $0.writeSettings([.init(HTTP2SettingsParameter.initialWindowSize, 5)]) }
            try connection.serverSends { $0.writeWindowUpdate(streamID: 1, increment: 5) }
            #expect(try connection.clientFrames().compactMap(\.dataFrame).isEmpty)

            // Raised by 20: the stream's window is now 20, and the last 10 bytes go.
            try connection.serverSends { $0.writeSettings([.init(HTTP2SettingsParameter.initialWindowSize, 25)]) }
            let last = try connection.clientFrames().compactMap(\.dataFrame)
            #expect(last.map(\.length) == [10])
            #expect(last.map(\.endStream) == [true])
            try connection.serverSends {
                try $0.writeHeaders(streamID: 1, headers: ScriptedHTTP2Connection.response(200), endStream: true)
            }
        }
        #expect(answers.map(\.status) == [200])
    }

    @Test func bodiesWaitForTheConnectionWindowInStreamOrderAndFramesRespectTheFrameSize() async throws {
        let connection = try ScriptedHTTP2Connection()
        let answers = try await connection.exchange([ByteBuffer(repeating: 1, count: 60_000), ByteBuffer(repeating: 2, count: 10_000)]) {
            requests in
            _ = try connection.clientFrames()
            connection.handler.submit(requests)
            try connection.serverSends { $0.writeSettings([.init(HTTP2SettingsParameter.initialWindowSize, 1 << 20)]) }
            // 65,535 bytes of connection window: all of stream 1, 5,535 bytes of stream 3.
            let first = try connection.clientFrames().compactMap(\.dataFrame)
            #expect(first.map(\.streamID) == [1, 1, 1, 1, 3])
            #expect(first.map(\.length) == [16_384, 16_384, 16_384, 10_848, 5_535])
            #expect(first.map(\.endStream) == [false, false, false, true, false])

            try connection.serverSends {
                $0.writeSettings([.init(HTTP2SettingsParameter.maxFrameSize, 1 << 15)])
                $0.writeWindowUpdate(streamID: 0, increment: 1_000)
            }
            #expect(try connection.clientFrames().compactMap(\.dataFrame).map(\.length) == [1_000])
            try connection.serverSends { $0.writeWindowUpdate(streamID: 0, increment: 1 << 20) }
            let rest = try connection.clientFrames().compactMap(\.dataFrame)
            #expect(rest.map(\.length) == [3_465])
            #expect(rest.map(\.endStream) == [true])
            try connection.serverSends {
                try $0.writeHeaders(streamID: 1, headers: ScriptedHTTP2Connection.response(200), endStream: true)
                try $0.writeHeaders(streamID: 3, headers: ScriptedHTTP2Connection.response(200), endStream: true)
            }
        }
        #expect(answers.map(\.status) == [200, 200])
    }

    @Test func anAnswerBeforeTheWholeBodyResetsTheRest() async throws {
        let connection = try ScriptedHTTP2Connection()
        let answers = try await connection.exchange([ByteBuffer(repeating: 1, count: 100)]) { requests in
            _ = try connection.clientFrames()
            connection.handler.submit(requests)
            try connection.serverSends { $0.writeSettings([.init(HTTP2SettingsParameter.initialWindowSize, 10)]) }
            _ = try connection.clientFrames()
            try connection.serverSends {
                try $0.writeHeaders(streamID: 1, headers: ScriptedHTTP2Connection.response(413), endStream: true)
                $0.writeWindowUpdate(streamID: 1, increment: 1000)
            }
            let frames = try connection.clientFrames()
            guard frames.count == 1, case .rstStream(1, .cancel) = frames[0] else {
                Issue.record("\(frames)")
                return
            }
        }
        #expect(answers.map(\.status) == [413])
    }

    @Test func pingIsAnsweredAndResponsesReturnConnectionCredit() async throws {
        let connection = try ScriptedHTTP2Connection(maxResponseBodySize: 1 << 20)
        let answers = try await connection.exchange([nil]) { requests in
            let opening = try connection.clientFrames()
            guard case .settings(let settings) = opening.first else {
                Issue.record("\(opening)")
                return
            }
            // A stream window large enough for the largest body accepted.
            #expect(settings.contains(.init(HTTP2SettingsParameter.initialWindowSize, UInt32((1 << 20) + 16 * 1024))))
            connection.handler.submit(requests)
            try connection.serverSends {
                $0.writeSettings([])
                $0.writePing(opaqueData: 0xfeed, ack: false)
            }
            let answered = try connection.clientFrames()
            #expect(answered.contains { if case .ping(0xfeed, true) = $0 { true } else { false } })

            // 600,000 bytes of response: past half the connection window, credit comes back.
            try connection.serverSends {
                try $0.writeHeaders(streamID: 1, headers: ScriptedHTTP2Connection.response(200), endStream: false)
                for _ in 0..<40 { $0.writeData(streamID: 1, payload: ByteBuffer(repeating: 0, count: 15_000), endStream: false) }
            }
            let credit = try connection.clientFrames()
            guard credit.count == 1, case .windowUpdate(0, let increment) = credit[0] else {
                Issue.record("\(credit)")
                return
            }
            #expect(increment == 600_000)
            try connection.serverSends { $0.writeData(streamID: 1, payload: ByteBuffer(), endStream: true) }
        }
        #expect(try answers[0].get().body?.readableBytes == 600_000)
    }

    @Test func aBodyAboveTheLimitResetsItsStreamOnly() async throws {
        let connection = try ScriptedHTTP2Connection(maxResponseBodySize: 100)
        let answers = try await connection.exchange([nil, nil]) { requests in
            _ = try connection.clientFrames()
            connection.handler.submit(requests)
            try connection.serverSends { $0.writeSettings([]) }
            _ = try connection.clientFrames()
            try connection.serverSends {
                try $0.writeHeaders(streamID: 1, headers: ScriptedHTTP2Connection.response(400), endStream: false)
                $0.writeData(streamID: 1, payload: ByteBuffer(repeating: 0, count: 101), endStream: true)
                try $0.writeHeaders(streamID: 3, headers: ScriptedHTTP2Connection.response(200), endStream: true)
            }
            let frames = try connection.clientFrames()
            guard frames.count == 1, case .rstStream(1, .cancel) = frames[0] else {
                Issue.record("\(frames)")
                return
            }
        }
        #expect(answers[0].errorCode == .invalidResponse)
        #expect(answers[1].status == 200)
    }

    /// A server that breaks the protocol gets a GOAWAY with the reason, and the connection closes.
    static let violations: [(String, @Sendable (inout HTTP2FrameEncoder) throws -> Void, HTTP2ErrorCode)] = [
        ("PUSH_PROMISE", { _ in }, .protocolError),
        (
            "a response on a stream never opened", { try $0.writeHeaders(streamID: 7, headers: ScriptedHTTP2Connection.response(200), endStream: true) },
            .protocolError
        ),
        (
            "a stream opened by the server", { try $0.writeHeaders(streamID: 2, headers: ScriptedHTTP2Connection.response(200), endStream: true) },
            .protocolError
        ),
        ("a bad SETTINGS_MAX_FRAME_SIZE", { $0.writeSettings([.init(HTTP2SettingsParameter.maxFrameSize, 100)]) }, .protocolError),
        ("a window too large", { $0.writeSettings([.init(HTTP2SettingsParameter.initialWindowSize, 1 << 31)]) }, .flowControlError),
        ("a connection window overflowing", { $0.writeWindowUpdate(streamID: 0, increment: Int(Int32.max)) }, .flowControlError),
    ]

    @Test(arguments: violations.indices) func aServerBreakingTheProtocolFailsTheConnectionCleanly(index: Int) async throws {
        let (what, write, code) = Self.violations[index]
        let connection = try ScriptedHTTP2Connection()
        let answers = try await connection.exchange([nil]) { requests in
            _ = try connection.clientFrames()
            connection.handler.submit(requests)
            try connection.serverSends { $0.writeSettings([]) }
            _ = try connection.clientFrames()
            if what == "PUSH_PROMISE" {
                try connection.serverSends(raw: HTTP2FrameCodecTests.frame(type: 0x5, flags: 0x4, streamID: 1, payload: [0, 0, 0, 2, 0x88]))
            } else {
                try connection.serverSends(write)
            }
            let frames = try connection.clientFrames()
            guard case .goAway(0, let sent) = frames.last else {
                Issue.record("\(what): \(frames)")
                return
            }
            #expect(sent == code, "\(what)")
            #expect(!connection.channel.isActive, "\(what)")
        }
        #expect(answers[0].errorCode == .connectionClosed, "\(what)")
        if case .failure(let error) = answers[0] { #expect(error.message.contains("HTTP/2 protocol error"), "\(what)") }
    }

    @Test func aServerThatDoesNotSpeakHTTP2FailsTheAttempt() async throws {
        let connection = try ScriptedHTTP2Connection()
        let answers = try await connection.exchange([nil]) { requests in
            _ = try connection.clientFrames()
            connection.handler.submit(requests)
            try connection.serverSends(raw: ByteBuffer(string: "HTTP/1.1 400 Bad Request\r\n\r\n"))
            #expect(!connection.channel.isActive)
        }
        #expect(answers[0].errorCode == .connectFailed)
        if case .failure(let error) = answers[0] { #expect(error.message.contains("FRAME_SIZE_ERROR")) }
    }

    @Test func aFirstFrameOtherThanSettingsFailsTheAttempt() async throws {
        let connection = try ScriptedHTTP2Connection()
        let answers = try await connection.exchange([nil]) { requests in
            _ = try connection.clientFrames()
            connection.handler.submit(requests)
            try connection.serverSends { $0.writePing(opaqueData: 1, ack: false) }
            #expect(!connection.channel.isActive)
        }
        #expect(answers[0].errorCode == .connectFailed)
    }

    @Test func lateFramesOnAClosedStreamAreIgnoredButStillCountAndDecode() async throws {
        let connection = try ScriptedHTTP2Connection()
        let answers = try await connection.exchange([nil, nil]) { requests in
            _ = try connection.clientFrames()
            connection.handler.submit([requests[0]])
            try connection.serverSends { $0.writeSettings([]) }
            _ = try connection.clientFrames()
            // Stream 1 is cancelled; its answer comes late, with a field the HPACK table keeps.
            #expect(connection.handler.cancel(requestID: 0, error: HTTP2ClientError(.cancelled, "cancelled")))
            #expect(try connection.clientFrames().contains { if case .rstStream(1, .cancel) = $0 { true } else { false } })
            try connection.serverSends {
                try $0.writeHeaders(streamID: 1, headers: ScriptedHTTP2Connection.response(200, [("apns-id", "late")]), endStream: false)
                $0.writeData(streamID: 1, payload: ByteBuffer(repeating: 0, count: 100), endStream: true)
                $0.writeRstStream(streamID: 1, errorCode: .streamClosed)
            }
            connection.handler.submit([requests[1]])
            // The next answer indexes the field the late one added to the table.
            try connection.serverSends {
                try $0.writeHeaders(streamID: 3, headers: ScriptedHTTP2Connection.response(200, [("apns-id", "late")]), endStream: true)
            }
        }
        #expect(answers[0].errorCode == .cancelled)
        #expect(try answers[1].get().header("apns-id") == "late")
    }
}
