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
///
/// A fan-out sends block after block that differ only in fields kept out of the dynamic table
/// (`:path`, naming a device). Once a block's indexable fields were all found in the table, so
/// that encoding it changed nothing, its bytes are kept (``BlockMemo``): the next block with
/// the same indexable fields, in the same order, is those bytes with the other fields' values
/// written in, exactly what HPACK would write, without its table lookups (which hash every
/// field name). Any other block goes through HPACK and becomes the kept one if it too changed
/// nothing.
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
    /// The last block that HPACK encoded without changing its table, to repeat.
    private var memo: BlockMemo?
    /// The table's size changed since the last block: the next block starts with the update,
    /// which must not be repeated.
    private var tableResized = false

    /// A header block's encoding, field by field.
    private struct BlockMemo {
        var fields: HPACKHeaders
        var bytes: [UInt8]
        /// Where each field's encoding ends in ``bytes``.
        var ends: [Int]
        /// Where each field's name part ends: for a field kept out of the table, what comes
        /// after is its value's length and the value, written anew for each block.
        var nameEnds: [Int]

        /// Whether `headers` has the same fields as ``fields``, but for the values of those
        /// kept out of the table. (Strings that share storage compare at once.)
        func matches(_ headers: HPACKHeaders) -> Bool {
            guard headers.count == fields.count else { return false }
            for (kept, field) in zip(fields, headers) {
                guard kept.indexable == field.indexable, kept.name == field.name else { return false }
                if field.indexable == .indexable, kept.value != field.value { return false }
            }
            return true
        }
    }

    init(allocator: ByteBufferAllocator = ByteBufferAllocator()) {
        output = allocator.buffer(capacity: 4096)
        hpack = HPACKEncoder(allocator: allocator, useHuffmanEncoding: false)
    }

    /// Applies the server's SETTINGS_HEADER_TABLE_SIZE: the dynamic table this encoder uses
    /// is never larger than the server's decoder allows, nor than the default of 4,096 bytes.
    mutating func setHeaderTableSize(_ size: Int) {
        let size = min(size, HPACKEncoder.defaultDynamicTableSize)
        guard size != hpack.allowedDynamicTableSize else { return }
        // Throws only while a block is being encoded, which is never the case between calls.
        try? hpack.setDynamicTableSize(size)
        memo = nil
        tableResized = true
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
        if let memo, memo.matches(headers) {
            write(headers, like: memo)
        } else {
            do {
                try encode(headers)
            } catch {
                output.moveWriterIndex(to: frameStart)
                memo = nil
                throw HTTP2ProtocolError(.internalError, "a header block cannot be encoded (\(type(of: error)))")
            }
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

    /// Encodes `headers` with HPACK, field by field, and keeps the encoding as ``memo`` if it
    /// changed nothing in the table.
    private mutating func encode(_ headers: HPACKHeaders) throws {
        let blockStart = output.writerIndex
        var ends: [Int] = []
        var nameEnds: [Int] = []
        ends.reserveCapacity(headers.count)
        nameEnds.reserveCapacity(headers.count)
        var repeatable = !tableResized
        tableResized = false
        for field in headers {
            let fieldStart = output.writerIndex
            var one = HPACKHeaders()
            one.add(name: field.name, value: field.value, indexing: field.indexable)
            try hpack.encode(headers: one, to: &output)
            let end = output.writerIndex - blockStart
            ends.append(end)
            if field.indexable == .indexable {
                // Found in a table: an index (1xxxxxxx). Otherwise the field was added to the
                // dynamic table, and the next block's indexes differ.
                if output.getInteger(at: fieldStart, as: UInt8.self)! & 0x80 == 0 { repeatable = false }
                nameEnds.append(end)
            } else {
                let length = field.value.utf8.count
                nameEnds.append(end - length - Self.integerSize(length, prefix: 7))
            }
        }
        memo =
            repeatable
            ? BlockMemo(
                fields: headers, bytes: output.getBytes(at: blockStart, length: output.writerIndex - blockStart)!, ends: ends,
                nameEnds: nameEnds)
            : nil
    }

    /// Writes `headers` as `memo` was written, with the values of the fields kept out of the
    /// table written in: a string literal without Huffman coding (RFC 7541, 5.2).
    private mutating func write(_ headers: HPACKHeaders, like memo: BlockMemo) {
        var copied = 0
        for (ordinal, field) in headers.enumerated() where field.indexable != .indexable {
            output.writeBytes(memo.bytes[copied..<memo.nameEnds[ordinal]])
            let value = field.value.utf8
            writeInteger(value.count, prefix: 7, prefixBits: 0)
            output.writeBytes(value)
            copied = memo.ends[ordinal]
        }
        output.writeBytes(memo.bytes[copied...])
    }

    /// An HPACK integer (RFC 7541, 5.1).
    private mutating func writeInteger(_ value: Int, prefix: Int, prefixBits: UInt8) {
        let limit = (1 << prefix) - 1
        guard value >= limit else {
            output.writeInteger(prefixBits | UInt8(value))
            return
        }
        output.writeInteger(prefixBits | UInt8(limit))
        var rest = value - limit
        while rest >= 128 {
            output.writeInteger(UInt8(rest & 0x7f | 0x80))
            rest >>= 7
        }
        output.writeInteger(UInt8(rest))
    }

    /// The bytes of an HPACK integer.
    private static func integerSize(_ value: Int, prefix: Int) -> Int {
        let limit = (1 << prefix) - 1
        guard value >= limit else { return 1 }
        var size = 2
        var rest = value - limit
        while rest >= 128 {
            size += 1
            rest >>= 7
        }
        return size
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
