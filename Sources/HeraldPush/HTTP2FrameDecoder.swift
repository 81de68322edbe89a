import NIOCore
import NIOHPACK

/// Reads the frames a server sends on a client's HTTP/2 connection (RFC 9113) from the bytes
/// as they arrive, and decodes header blocks with HPACK.
///
/// A frame's payload is a slice of the bytes received, never a copy. Header blocks split over
/// CONTINUATION frames come out whole, as one ``Frame/headers(streamID:headers:endStream:)``;
/// padding and priority fields are taken off. Every header block is decoded, whatever stream it
/// is on, since each changes the connection's HPACK table.
///
/// What breaks the protocol for the whole connection throws an ``HTTP2ProtocolError`` whose
/// code goes into the GOAWAY that ends it: a frame larger than SETTINGS_MAX_FRAME_SIZE, a
/// frame of the wrong size or on the wrong stream, a PUSH_PROMISE (this client disables push),
/// a CONTINUATION out of place, a header block HPACK cannot decode. What concerns one stream
/// (a frame on a stream that is closed, a WINDOW_UPDATE of 0 on a stream) is left to the
/// connection. PRIORITY frames and frame types this client does not know are skipped.
struct HTTP2FrameDecoder {
    enum Frame {
        /// `flowControlledLength`: the frame's whole payload, padding included, which counts
        /// against the flow-control windows.
        case data(streamID: UInt32, payload: ByteBuffer, endStream: Bool, flowControlledLength: Int)
        case headers(streamID: UInt32, headers: HPACKHeaders, endStream: Bool)
        case rstStream(streamID: UInt32, errorCode: HTTP2ErrorCode)
        case settings([HTTP2SettingsParameter])
        case settingsAck
        case ping(opaqueData: UInt64, ack: Bool)
        case goAway(lastStreamID: UInt32, errorCode: HTTP2ErrorCode)
        case windowUpdate(streamID: UInt32, increment: Int)
        /// PRIORITY, or a frame type this client does not know.
        case ignored
    }

    enum FrameType {
        static let data: UInt8 = 0x0
        static let headers: UInt8 = 0x1
        static let priority: UInt8 = 0x2
        static let rstStream: UInt8 = 0x3
        static let settings: UInt8 = 0x4
        static let pushPromise: UInt8 = 0x5
        static let ping: UInt8 = 0x6
        static let goAway: UInt8 = 0x7
        static let windowUpdate: UInt8 = 0x8
        static let continuation: UInt8 = 0x9
    }

    enum Flags {
        static let endStream: UInt8 = 0x1
        static let ack: UInt8 = 0x1
        static let endHeaders: UInt8 = 0x4
        static let padded: UInt8 = 0x8
        static let priority: UInt8 = 0x20
    }

    /// The largest frame payload accepted: the default SETTINGS_MAX_FRAME_SIZE, which this
    /// client does not change.
    static let maxFrameSize = 16_384

    /// The bytes received and not yet read as whole frames.
    private var buffer: ByteBuffer?
    private var hpack: HPACKDecoder
    /// A header block waiting for its CONTINUATION frames.
    private var pendingBlock: (streamID: UInt32, endStream: Bool, block: ByteBuffer)?
    /// The largest header block (its HPACK bytes, over all its frames) accepted.
    let maxHeaderBlockSize: Int

    /// - Parameter maxHeaderListSize: the SETTINGS_MAX_HEADER_LIST_SIZE this client advertises;
    ///   a decoded block larger than that fails the connection.
    init(allocator: ByteBufferAllocator = ByteBufferAllocator(), maxHeaderListSize: Int) {
        hpack = HPACKDecoder(
            allocator: allocator, maxDynamicTableSize: HPACKDecoder.maxDynamicTableSize, maxHeaderListSize: maxHeaderListSize)
        // HPACK never needs more bytes than the list it encodes, plus a little per field.
        maxHeaderBlockSize = maxHeaderListSize + 16 * 1024
    }

    /// Adds bytes received from the server.
    mutating func append(_ bytes: ByteBuffer) {
        if buffer == nil {
            buffer = bytes
        } else {
            var bytes = bytes
            buffer!.writeBuffer(&bytes)
        }
    }

    /// The next whole frame, `nil` until more bytes arrive.
    mutating func nextFrame() throws(HTTP2ProtocolError) -> Frame? {
        while true {
            guard let start = buffer?.readerIndex, buffer!.readableBytes >= 9 else { return nil }
            let lengthAndType = buffer!.getInteger(at: start, as: UInt32.self)!
            let length = Int(lengthAndType >> 8)
            let type = UInt8(truncatingIfNeeded: lengthAndType)
            guard length <= Self.maxFrameSize else {
                throw HTTP2ProtocolError(
                    .frameSizeError, "a frame of \(length) bytes exceeds SETTINGS_MAX_FRAME_SIZE (\(Self.maxFrameSize))")
            }
            guard buffer!.readableBytes >= 9 + length else {
                if start > 0 { buffer!.discardReadBytes() }
                return nil
            }
            let flags = buffer!.getInteger(at: start + 4, as: UInt8.self)!
            let streamID = buffer!.getInteger(at: start + 5, as: UInt32.self)! & 0x7fff_ffff
            buffer!.moveReaderIndex(forwardBy: 9)
            var payload = buffer!.readSlice(length: length)!
            // Let go of the bytes once all are read: the slices handed out then own them alone.
            if buffer!.readableBytes == 0 { buffer = nil }
            if let frame = try decode(type: type, flags: flags, streamID: streamID, payload: &payload) {
                return frame
            }
        }
    }

    /// The frame, or `nil` for a header block still waiting for a CONTINUATION.
    private mutating func decode(
        type: UInt8, flags: UInt8, streamID: UInt32, payload: inout ByteBuffer
    ) throws(HTTP2ProtocolError) -> Frame? {
        if let pending = pendingBlock, type != FrameType.continuation || streamID != pending.streamID {
            throw HTTP2ProtocolError(.protocolError, "a header block on stream \(pending.streamID) was interrupted by another frame")
        }
        let length = payload.readableBytes
        switch type {
        case FrameType.data:
            guard streamID != 0 else { throw HTTP2ProtocolError(.protocolError, "DATA on stream 0") }
            try Self.removePadding(flags: flags, from: &payload, frame: "DATA")
            return .data(streamID: streamID, payload: payload, endStream: flags & Flags.endStream != 0, flowControlledLength: length)

        case FrameType.headers:
            guard streamID != 0 else { throw HTTP2ProtocolError(.protocolError, "HEADERS on stream 0") }
            try Self.removePadding(flags: flags, from: &payload, frame: "HEADERS")
            if flags & Flags.priority != 0 {
                guard payload.readableBytes >= 5 else {
                    throw HTTP2ProtocolError(.frameSizeError, "a HEADERS frame too short for its priority fields")
                }
                payload.moveReaderIndex(forwardBy: 5)
            }
            let endStream = flags & Flags.endStream != 0
            if flags & Flags.endHeaders != 0 {
                return .headers(streamID: streamID, headers: try decodeBlock(&payload, streamID: streamID), endStream: endStream)
            }
            try checkBlockSize(payload.readableBytes)
            pendingBlock = (streamID, endStream, payload)
            return nil

        case FrameType.continuation:
            guard var pending = pendingBlock else {
                throw HTTP2ProtocolError(.protocolError, "CONTINUATION without a header block to continue")
            }
            pendingBlock = nil
            try checkBlockSize(pending.block.readableBytes + payload.readableBytes)
            pending.block.writeBuffer(&payload)
            guard flags & Flags.endHeaders != 0 else {
                pendingBlock = pending
                return nil
            }
            return .headers(
                streamID: streamID, headers: try decodeBlock(&pending.block, streamID: streamID), endStream: pending.endStream)

        case FrameType.priority:
            guard streamID != 0 else { throw HTTP2ProtocolError(.protocolError, "PRIORITY on stream 0") }
            return .ignored

        case FrameType.rstStream:
            guard streamID != 0 else { throw HTTP2ProtocolError(.protocolError, "RST_STREAM on stream 0") }
            guard length == 4 else { throw HTTP2ProtocolError(.frameSizeError, "an RST_STREAM frame of \(length) bytes") }
            return .rstStream(streamID: streamID, errorCode: HTTP2ErrorCode(payload.readInteger(as: UInt32.self)!))

        case FrameType.settings:
            guard streamID == 0 else { throw HTTP2ProtocolError(.protocolError, "SETTINGS on stream \(streamID)") }
            if flags & Flags.ack != 0 {
                guard length == 0 else { throw HTTP2ProtocolError(.frameSizeError, "a SETTINGS acknowledgement with a payload") }
                return .settingsAck
            }
            guard length % 6 == 0 else { throw HTTP2ProtocolError(.frameSizeError, "a SETTINGS frame of \(length) bytes") }
            var parameters: [HTTP2SettingsParameter] = []
            parameters.reserveCapacity(length / 6)
            while let (identifier, value) = payload.readMultipleIntegers(as: (UInt16, UInt32).self) {
                parameters.append(HTTP2SettingsParameter(identifier, value))
            }
            return .settings(parameters)

        case FrameType.pushPromise:
            throw HTTP2ProtocolError(.protocolError, "PUSH_PROMISE, though this client disabled server push")

        case FrameType.ping:
            guard streamID == 0 else { throw HTTP2ProtocolError(.protocolError, "PING on stream \(streamID)") }
            guard length == 8 else { throw HTTP2ProtocolError(.frameSizeError, "a PING frame of \(length) bytes") }
            return .ping(opaqueData: payload.readInteger(as: UInt64.self)!, ack: flags & Flags.ack != 0)

        case FrameType.goAway:
            guard streamID == 0 else { throw HTTP2ProtocolError(.protocolError, "GOAWAY on stream \(streamID)") }
            guard length >= 8 else { throw HTTP2ProtocolError(.frameSizeError, "a GOAWAY frame of \(length) bytes") }
            let (lastStreamID, errorCode) = payload.readMultipleIntegers(as: (UInt32, UInt32).self)!
            return .goAway(lastStreamID: lastStreamID & 0x7fff_ffff, errorCode: HTTP2ErrorCode(errorCode))

        case FrameType.windowUpdate:
            guard length == 4 else { throw HTTP2ProtocolError(.frameSizeError, "a WINDOW_UPDATE frame of \(length) bytes") }
            let increment = Int(payload.readInteger(as: UInt32.self)! & 0x7fff_ffff)
            guard increment > 0 || streamID != 0 else {
                throw HTTP2ProtocolError(.protocolError, "a WINDOW_UPDATE of 0 for the connection")
            }
            return .windowUpdate(streamID: streamID, increment: increment)

        default:
            return .ignored
        }
    }

    /// Takes the pad length field and the padding off a PADDED frame's payload.
    private static func removePadding(flags: UInt8, from payload: inout ByteBuffer, frame: String) throws(HTTP2ProtocolError) {
        guard flags & Flags.padded != 0 else { return }
        guard let padLength = payload.readInteger(as: UInt8.self), Int(padLength) <= payload.readableBytes else {
            throw HTTP2ProtocolError(.protocolError, "a \(frame) frame whose padding is longer than the frame")
        }
        payload.moveWriterIndex(to: payload.writerIndex - Int(padLength))
    }

    private func checkBlockSize(_ size: Int) throws(HTTP2ProtocolError) {
        guard size <= maxHeaderBlockSize else {
            throw HTTP2ProtocolError(.enhanceYourCalm, "a header block larger than \(maxHeaderBlockSize) bytes")
        }
    }

    private mutating func decodeBlock(_ block: inout ByteBuffer, streamID: UInt32) throws(HTTP2ProtocolError) -> HPACKHeaders {
        do {
            return try hpack.decodeHeaders(from: &block)
        } catch {
            throw HTTP2ProtocolError(.compressionError, "the header block on stream \(streamID) cannot be decoded (\(type(of: error)))")
        }
    }
}
