import NIOCore
import NIOHPACK

/// Writes the frames of a client's side of an HTTP/2 connection (RFC 9113) into one buffer,
/// ``output``, which the connection hands to the socket (or TLS) in one write per burst.
///
/// Header blocks are HPACK-encoded straight into ``output``, without Huffman coding: the values
/// that repeat on every request of a connection (authority, authorization, topic) go into the
/// dynamic table once and are then an index of a byte or two, and Huffman-coding what changes
/// per request (a path naming a device) would cost more CPU than the few bytes it saves. A
/// block larger than the server's SETTINGS_MAX_FRAME_SIZE is split into HEADERS and
/// CONTINUATION frames. DATA frames are written as given: splitting a body by frame size and
/// flow-control windows is the connection's work.
struct HTTP2FrameEncoder {
    typealias FrameType = HTTP2FrameDecoder.FrameType
    typealias Flags = HTTP2FrameDecoder.Flags

    /// The client connection preface.
    static let preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

    /// The frames written since the connection last took them.
    var output: ByteBuffer
    private var hpack: HPACKEncoder
    /// The server's SETTINGS_MAX_FRAME_SIZE: no frame written is larger.
    var maxFrameSize = 16_384

    init(allocator: ByteBufferAllocator = ByteBufferAllocator()) {
        output = allocator.buffer(capacity: 4096)
        hpack = HPACKEncoder(allocator: allocator, useHuffmanEncoding: false)
    }

    /// Applies the server's SETTINGS_HEADER_TABLE_SIZE: the dynamic table this encoder uses
    /// is never larger than the server's decoder allows, nor than the default of 4,096 bytes.
    mutating func setHeaderTableSize(_ size: Int) {
        // Throws only while a block is being encoded, which is never the case between calls.
        try? hpack.setDynamicTableSize(min(size, HPACKEncoder.defaultDynamicTableSize))
    }

    mutating func writePreface() {
        output.writeString(Self.preface)
    }

    mutating func writeSettings(_ parameters: [HTTP2SettingsParameter]) {
        writeFrameHeader(length: parameters.count * 6, type: FrameType.settings, flags: 0, streamID: 0)
        for parameter in parameters {
            output.writeMultipleIntegers(parameter.identifier, parameter.value)
        }
    }

    mutating func writeSettingsAck() {
        writeFrameHeader(length: 0, type: FrameType.settings, flags: Flags.ack, streamID: 0)
    }

    /// A header block (pseudo-header fields first) as HEADERS, and CONTINUATION frames if it
    /// does not fit in one frame.
    ///
    /// - Throws: when HPACK cannot encode the block; ``output`` is then as it was, but the
    ///   connection's compression state may not be, so the connection must end.
    mutating func writeHeaders(streamID: UInt32, headers: HPACKHeaders, endStream: Bool) throws(HTTP2ProtocolError) {
        let frameStart = output.writerIndex
        output.writeRepeatingByte(0, count: 9)
        do {
            try hpack.encode(headers: headers, to: &output)
        } catch {
            output.moveWriterIndex(to: frameStart)
            throw HTTP2ProtocolError(.internalError, "a header block cannot be encoded (\(type(of: error)))")
        }
        let blockLength = output.writerIndex - frameStart - 9
        let endStreamFlag = endStream ? Flags.endStream : 0
        if blockLength <= maxFrameSize {
            setFrameHeader(
                at: frameStart, length: blockLength, type: FrameType.headers, flags: endStreamFlag | Flags.endHeaders,
                streamID: streamID)
            return
        }
        // Rare (a block over 16 KiB): copied out, then written again in frame-size pieces.
        let block = output.getBytes(at: frameStart + 9, length: blockLength)!
        output.moveWriterIndex(to: frameStart)
        var offset = 0
        while offset < blockLength {
            let size = min(maxFrameSize, blockLength - offset)
            let last = offset + size == blockLength
            let type = offset == 0 ? FrameType.headers : FrameType.continuation
            let flags = (offset == 0 ? endStreamFlag : 0) | (last ? Flags.endHeaders : 0)
            writeFrameHeader(length: size, type: type, flags: flags, streamID: streamID)
            output.writeBytes(block[offset..<(offset + size)])
            offset += size
        }
    }

    /// One DATA frame; `payload` must fit in one frame.
    mutating func writeData(streamID: UInt32, payload: ByteBuffer, endStream: Bool) {
        writeFrameHeader(
            length: payload.readableBytes, type: FrameType.data, flags: endStream ? Flags.endStream : 0, streamID: streamID)
        output.writeImmutableBuffer(payload)
    }

    mutating func writeWindowUpdate(streamID: UInt32, increment: Int) {
        writeFrameHeader(length: 4, type: FrameType.windowUpdate, flags: 0, streamID: streamID)
        output.writeInteger(UInt32(increment))
    }

    mutating func writeRstStream(streamID: UInt32, errorCode: HTTP2ErrorCode) {
        writeFrameHeader(length: 4, type: FrameType.rstStream, flags: 0, streamID: streamID)
        output.writeInteger(errorCode.rawValue)
    }

    mutating func writePing(opaqueData: UInt64, ack: Bool) {
        writeFrameHeader(length: 8, type: FrameType.ping, flags: ack ? Flags.ack : 0, streamID: 0)
        output.writeInteger(opaqueData)
    }

    /// A GOAWAY naming `lastStreamID` (this client accepts no streams from the server, so 0)
    /// and `debugData`, which must name no secret.
    mutating func writeGoAway(lastStreamID: UInt32 = 0, errorCode: HTTP2ErrorCode, debugData: String = "") {
        let debug = debugData.utf8.prefix(256)
        writeFrameHeader(length: 8 + debug.count, type: FrameType.goAway, flags: 0, streamID: 0)
        output.writeMultipleIntegers(lastStreamID, errorCode.rawValue)
        output.writeBytes(debug)
    }

    private mutating func writeFrameHeader(length: Int, type: UInt8, flags: UInt8, streamID: UInt32) {
        output.writeMultipleIntegers(UInt32(length) << 8 | UInt32(type), flags, streamID)
    }

    private mutating func setFrameHeader(at index: Int, length: Int, type: UInt8, flags: UInt8, streamID: UInt32) {
        output.setInteger(UInt32(length) << 8 | UInt32(type), at: index)
        output.setInteger(flags, at: index + 4)
        output.setInteger(streamID, at: index + 5)
    }
}
