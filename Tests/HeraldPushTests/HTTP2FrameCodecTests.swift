import NIOCore
import NIOHPACK
import Testing

@testable import HeraldPush

/// The frame codec of the HTTP/2 client with no I/O: what ``HTTP2FrameEncoder`` writes,
/// ``HTTP2FrameDecoder`` reads back (both sides of a connection frame alike, but for the
/// preface), and frames built byte by byte test what the encoder never writes (padding,
/// priority fields, a server's mistakes).
@Suite struct HTTP2FrameCodecTests {
    /// The frames in `bytes`, in order; throws what the decoder throws.
    static func frames(_ bytes: ByteBuffer, maxHeaderListSize: Int = 64 * 1024) throws -> [HTTP2FrameDecoder.Frame] {
        var decoder = HTTP2FrameDecoder(maxHeaderListSize: maxHeaderListSize)
        decoder.append(bytes)
        var frames: [HTTP2FrameDecoder.Frame] = []
        while let frame = try decoder.nextFrame() { frames.append(frame) }
        return frames
    }

    /// A frame as bytes: 9-byte header and payload.
    static func frame(type: UInt8, flags: UInt8 = 0, streamID: UInt32, payload: [UInt8]) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.writeMultipleIntegers(UInt32(payload.count) << 8 | UInt32(type), flags, streamID)
        buffer.writeBytes(payload)
        return buffer
    }

    static let request: HPACKHeaders = {
        var headers = HPACKHeaders()
        headers.add(name: ":method", value: "POST")
        headers.add(name: ":scheme", value: "https")
        headers.add(name: ":authority", value: "api.push.example")
        headers.add(name: ":path", value: "/3/device/" + String(repeating: "ab", count: 32), indexing: .nonIndexable)
        headers.add(name: "authorization", value: "bearer " + String(repeating: "x", count: 150))
        headers.add(name: "apns-topic", value: "com.example.app")
        return headers
    }()

    static func pairs(_ headers: HPACKHeaders) -> [String] {
        headers.map { "\($0.name): \($0.value)" }
    }

    @Test func everyFrameTheClientWritesReadsBack() throws {
        var encoder = HTTP2FrameEncoder()
        encoder.writeSettings([.init(HTTP2SettingsParameter.enablePush, 0), .init(HTTP2SettingsParameter.maxHeaderListSize, 65536)])
        encoder.writeSettingsAck()
        try encoder.writeHeaders(streamID: 1, headers: Self.request, endStream: false)
        encoder.writeData(streamID: 1, payload: ByteBuffer(string: #"{"aps":{}}"#), endStream: true)
        try encoder.writeHeaders(streamID: 3, headers: Self.request, endStream: true)
        encoder.writeWindowUpdate(streamID: 0, increment: 1 << 20)
        encoder.writeRstStream(streamID: 3, errorCode: .cancel)
        encoder.writePing(opaqueData: 0x0102_0304_0506_0708, ack: true)
        encoder.writeGoAway(errorCode: .enhanceYourCalm, debugData: "slow down")

        let frames = try Self.frames(encoder.output)
        #expect(frames.count == 9)
        guard frames.count == 9 else { return }
        guard case .settings(let settings) = frames[0] else {
            Issue.record("\(frames[0])")
            return
        }
        #expect(settings == [.init(2, 0), .init(6, 65536)])
        guard case .settingsAck = frames[1] else {
            Issue.record("\(frames[1])")
            return
        }
        guard case .headers(1, let first, false) = frames[2] else {
            Issue.record("\(frames[2])")
            return
        }
        #expect(Self.pairs(first) == Self.pairs(Self.request))
        guard case .data(1, let body, true, 10) = frames[3] else {
            Issue.record("\(frames[3])")
            return
        }
        #expect(String(buffer: body) == #"{"aps":{}}"#)
        guard case .headers(3, let second, true) = frames[4] else {
            Issue.record("\(frames[4])")
            return
        }
        #expect(Self.pairs(second) == Self.pairs(Self.request))
        guard case .windowUpdate(0, 1 << 20) = frames[5] else {
            Issue.record("\(frames[5])")
            return
        }
        guard case .rstStream(3, .cancel) = frames[6] else {
            Issue.record("\(frames[6])")
            return
        }
        guard case .ping(0x0102_0304_0506_0708, true) = frames[7] else {
            Issue.record("\(frames[7])")
            return
        }
        guard case .goAway(0, .enhanceYourCalm) = frames[8] else {
            Issue.record("\(frames[8])")
            return
        }
    }

    @Test func headerValuesAreNotHuffmanCodedAndRepeatedFieldsComeFromTheDynamicTable() throws {
        var encoder = HTTP2FrameEncoder()
        try encoder.writeHeaders(streamID: 1, headers: Self.request, endStream: true)
        let first = encoder.output.readableBytes
        try encoder.writeHeaders(streamID: 3, headers: Self.request, endStream: true)
        let second = encoder.output.readableBytes - first
        // The device's path as it is, so the server sees it without decoding Huffman.
        #expect(String(buffer: encoder.output).contains("/3/device/" + String(repeating: "ab", count: 32)))
        // The second block: the path (2 + 74 bytes) and an index for each other field.
        #expect(second < 9 + 90)
        #expect(first > second + 150)
    }

    /// Blocks that repeat (a fan-out), change (a new token, another notification's fields) and
    /// meet table size changes: every block's bytes are the ones NIOHPACK's encoder writes on
    /// its own, whether they came from HPACK or were repeated.
    @Test func repeatedBlocksAreWrittenExactlyAsHPACKWouldWriteThem() throws {
        var reference = HPACKEncoder(allocator: ByteBufferAllocator(), useHuffmanEncoding: false)
        var encoder = HTTP2FrameEncoder()
        var random = UInt64(0x2545_f491_4f6c_dd1d)
        func next(_ bound: Int) -> Int {
            random = random &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((random >> 33) % UInt64(bound))
        }
        let authorization = "bearer " + String(repeating: "t", count: 120)
        var mismatches = 0
        for round in 0..<3000 {
            if round % 700 == 699 {
                let size = [0, 256, 4096, 1024][next(4)]
                try reference.setDynamicTableSize(size)
                encoder.setHeaderTableSize(size)
            }
            var headers = HPACKHeaders()
            headers.add(name: ":method", value: "POST")
            headers.add(name: ":scheme", value: "https")
            headers.add(name: ":authority", value: next(100) == 0 ? "other.example" : "api.push.example")
            headers.add(name: ":path", value: "/3/device/" + String(next(1_000_000)), indexing: .nonIndexable)
            headers.add(name: "authorization", value: authorization + String(round / 400))
            headers.add(name: "apns-topic", value: next(50) == 0 ? "com.example.other" : "com.example.app")
            if round % 300 < 150 { headers.add(name: "apns-priority", value: "5") }
            if next(10) == 0 { headers.add(name: "x-secret", value: String(next(1000)), indexing: .neverIndexed) }
            headers.add(name: "x-note", value: String(repeating: "n", count: next(300)), indexing: .nonIndexable)

            var expected = ByteBuffer()
            try reference.encode(headers: headers, to: &expected)
            encoder.output.clear()
            try encoder.writeHeaders(streamID: 1, headers: headers, endStream: true)
            let block = encoder.output.getSlice(at: 9, length: encoder.output.readableBytes - 9)
            if block != expected { mismatches += 1 }
        }
        #expect(mismatches == 0)
    }

    @Test func aBlockLargerThanTheFrameSizeGoesOutInContinuationFramesAndReadsBackWhole() throws {
        var headers = Self.request
        headers.add(name: "x-large", value: String(repeating: "v", count: 40_000), indexing: .nonIndexable)
        var encoder = HTTP2FrameEncoder()
        try encoder.writeHeaders(streamID: 5, headers: headers, endStream: true)
        // HEADERS then CONTINUATION frames, none larger than 16,384 bytes, END_HEADERS on the last.
        var bytes = encoder.output
        var kinds: [(type: UInt8, flags: UInt8, length: Int)] = []
        while bytes.readableBytes > 0 {
            let (lengthAndType, flags, _) = bytes.readMultipleIntegers(as: (UInt32, UInt8, UInt32).self)!
            kinds.append((UInt8(truncatingIfNeeded: lengthAndType), flags, Int(lengthAndType >> 8)))
            bytes.moveReaderIndex(forwardBy: Int(lengthAndType >> 8))
        }
        #expect(kinds.map(\.type) == [0x1, 0x9, 0x9])
        #expect(kinds.map(\.flags) == [0x1, 0x0, 0x4])
        #expect(kinds.allSatisfy { $0.length <= 16_384 })

        let frames = try Self.frames(encoder.output)
        guard frames.count == 1, case .headers(5, let decoded, true) = frames[0] else {
            Issue.record("\(frames)")
            return
        }
        #expect(Self.pairs(decoded) == Self.pairs(headers))

        // A server with a larger SETTINGS_MAX_FRAME_SIZE gets fewer frames.
        var wide = HTTP2FrameEncoder()
        wide.maxFrameSize = 1 << 16
        try wide.writeHeaders(streamID: 5, headers: headers, endStream: true)
        #expect(wide.output.readableBytes < encoder.output.readableBytes)
    }

    @Test func framesSplitAnywhereReadTheSame() throws {
        var encoder = HTTP2FrameEncoder()
        try encoder.writeHeaders(streamID: 1, headers: Self.request, endStream: false)
        encoder.writeData(streamID: 1, payload: ByteBuffer(repeating: 7, count: 3000), endStream: true)
        encoder.writePing(opaqueData: 42, ack: false)
        let whole = encoder.output
        var decoder = HTTP2FrameDecoder(maxHeaderListSize: 64 * 1024)
        var frames: [HTTP2FrameDecoder.Frame] = []
        var rest = whole
        while rest.readableBytes > 0 {
            decoder.append(rest.readSlice(length: min(7, rest.readableBytes))!)
            while let frame = try decoder.nextFrame() { frames.append(frame) }
        }
        #expect(frames.count == 3)
        guard frames.count == 3 else { return }
        guard case .headers(1, let headers, false) = frames[0] else {
            Issue.record("\(frames[0])")
            return
        }
        #expect(Self.pairs(headers) == Self.pairs(Self.request))
        guard case .data(1, let body, true, 3000) = frames[1] else {
            Issue.record("\(frames[1])")
            return
        }
        #expect(body == ByteBuffer(repeating: 7, count: 3000))
        guard case .ping(42, false) = frames[2] else {
            Issue.record("\(frames[2])")
            return
        }
    }

    @Test func paddingAndPriorityFieldsAreTakenOffAndPaddingCountsForFlowControl() throws {
        // HEADERS, PADDED | PRIORITY | END_HEADERS: pad length 3, 5 bytes of priority,
        // ":status: 200" (static index 8), 3 bytes of padding.
        var bytes = Self.frame(type: 0x1, flags: 0x8 | 0x20 | 0x4, streamID: 1, payload: [3, 0, 0, 0, 0, 16, 0x88, 0, 0, 0])
        // DATA, PADDED | END_STREAM: pad length 4, "ok", 4 bytes of padding.
        var data = Self.frame(type: 0x0, flags: 0x8 | 0x1, streamID: 1, payload: [4, 0x6f, 0x6b, 0, 0, 0, 0])
        bytes.writeBuffer(&data)
        let frames = try Self.frames(bytes)
        guard frames.count == 2 else {
            Issue.record("\(frames)")
            return
        }
        guard case .headers(1, let headers, false) = frames[0] else {
            Issue.record("\(frames[0])")
            return
        }
        #expect(headers.first(name: ":status") == "200")
        guard case .data(1, let body, true, 7) = frames[1] else {
            Issue.record("\(frames[1])")
            return
        }
        #expect(String(buffer: body) == "ok")
    }

    @Test func priorityAndUnknownFramesAreIgnored() throws {
        var bytes = Self.frame(type: 0x2, streamID: 1, payload: [0, 0, 0, 0, 16])
        var unknown = Self.frame(type: 0xfa, flags: 0xff, streamID: 7, payload: [1, 2, 3])
        bytes.writeBuffer(&unknown)
        let frames = try Self.frames(bytes)
        #expect(frames.count == 2)
        for frame in frames {
            guard case .ignored = frame else {
                Issue.record("\(frame)")
                continue
            }
        }
    }

    static let brokenFrames: [(String, ByteBuffer, HTTP2ErrorCode)] = {
        var interrupted = frame(type: 0x1, streamID: 1, payload: [0x88])  // HEADERS without END_HEADERS
        var ping = frame(type: 0x6, streamID: 0, payload: [0, 0, 0, 0, 0, 0, 0, 0])
        interrupted.writeBuffer(&ping)
        var oversized = ByteBuffer()
        oversized.writeMultipleIntegers(UInt32(16_385) << 8, UInt8(0), UInt32(1))
        return [
            ("a frame above SETTINGS_MAX_FRAME_SIZE", oversized, .frameSizeError),
            ("PUSH_PROMISE", frame(type: 0x5, flags: 0x4, streamID: 1, payload: [0, 0, 0, 2, 0x88]), .protocolError),
            ("padding longer than the frame", frame(type: 0x0, flags: 0x8, streamID: 1, payload: [9, 1, 2]), .protocolError),
            ("HEADERS on stream 0", frame(type: 0x1, flags: 0x4, streamID: 0, payload: [0x88]), .protocolError),
            ("DATA on stream 0", frame(type: 0x0, streamID: 0, payload: [1]), .protocolError),
            ("SETTINGS on a stream", frame(type: 0x4, streamID: 1, payload: []), .protocolError),
            ("SETTINGS of a bad length", frame(type: 0x4, streamID: 0, payload: [0, 3, 0, 0]), .frameSizeError),
            ("a SETTINGS acknowledgement with a payload", frame(type: 0x4, flags: 0x1, streamID: 0, payload: [0, 3, 0, 0, 0, 1]), .frameSizeError),
            ("PING of a bad length", frame(type: 0x6, streamID: 0, payload: [1, 2, 3]), .frameSizeError),
            ("RST_STREAM on stream 0", frame(type: 0x3, streamID: 0, payload: [0, 0, 0, 8]), .protocolError),
            ("a connection WINDOW_UPDATE of 0", frame(type: 0x8, streamID: 0, payload: [0, 0, 0, 0]), .protocolError),
            ("GOAWAY too short", frame(type: 0x7, streamID: 0, payload: [0, 0, 0, 1]), .frameSizeError),
            ("CONTINUATION out of place", frame(type: 0x9, flags: 0x4, streamID: 1, payload: [0x88]), .protocolError),
            ("a header block interrupted", interrupted, .protocolError),
            (
                "a header block HPACK cannot decode", frame(type: 0x1, flags: 0x4, streamID: 1, payload: [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]),
                .compressionError
            ),
            ("an index beyond the tables", frame(type: 0x1, flags: 0x4, streamID: 1, payload: [0xbf]), .compressionError),
        ]
    }()

    @Test(arguments: brokenFrames.indices) func aServerBreakingTheProtocolIsAConnectionError(index: Int) {
        let (what, bytes, code) = Self.brokenFrames[index]
        #expect(throws: HTTP2ProtocolError(code, ""), "\(what)") { try Self.frames(bytes) }
    }

    @Test func aHeaderListAboveTheLimitIsAConnectionError() throws {
        var encoder = HTTP2FrameEncoder()
        var headers = HPACKHeaders()
        headers.add(name: ":status", value: "200")
        headers.add(name: "x-large", value: String(repeating: "v", count: 2000))
        try encoder.writeHeaders(streamID: 1, headers: headers, endStream: true)
        #expect(throws: HTTP2ProtocolError(.compressionError, "")) { try Self.frames(encoder.output, maxHeaderListSize: 1024) }
        #expect(try Self.frames(encoder.output, maxHeaderListSize: 4096).count == 1)
    }

    @Test func bytesThatAreNotHTTP2FailTheFirstFrame() {
        // An HTTP/1.1 answer read as a frame header: a length far above the frame size.
        let answer = ByteBuffer(string: "HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
        #expect(throws: HTTP2ProtocolError(.frameSizeError, "")) { try Self.frames(answer) }
    }

    @Test func aSmallerHeaderTableFromTheServerIsSignalledAndHonoured() throws {
        var encoder = HTTP2FrameEncoder()
        encoder.setHeaderTableSize(0)
        try encoder.writeHeaders(streamID: 1, headers: Self.request, endStream: true)
        let first = encoder.output.readableBytes
        try encoder.writeHeaders(streamID: 3, headers: Self.request, endStream: true)
        // Nothing is indexed: the second block is as long as the first but for the size update.
        #expect(encoder.output.readableBytes - first == first - 1)
        let frames = try Self.frames(encoder.output)
        #expect(frames.count == 2)
        for frame in frames {
            guard case .headers(_, let headers, true) = frame else {
                Issue.record("\(frame)")
                continue
            }
            #expect(Self.pairs(headers) == Self.pairs(Self.request))
        }
    }
}
