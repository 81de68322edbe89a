/// An HTTP/2 error code (RFC 9113, section 7), as carried by RST_STREAM and GOAWAY.
///
/// An open set: a peer may send a code this type has no name for, which keeps its number.
struct HTTP2ErrorCode: Hashable, Sendable, CustomStringConvertible {
    let rawValue: UInt32

    init(_ rawValue: UInt32) {
        self.rawValue = rawValue
    }

    static let noError = HTTP2ErrorCode(0x0)
    static let protocolError = HTTP2ErrorCode(0x1)
    static let internalError = HTTP2ErrorCode(0x2)
    static let flowControlError = HTTP2ErrorCode(0x3)
    static let settingsTimeout = HTTP2ErrorCode(0x4)
    static let streamClosed = HTTP2ErrorCode(0x5)
    static let frameSizeError = HTTP2ErrorCode(0x6)
    static let refusedStream = HTTP2ErrorCode(0x7)
    static let cancel = HTTP2ErrorCode(0x8)
    static let compressionError = HTTP2ErrorCode(0x9)
    static let connectError = HTTP2ErrorCode(0xa)
    static let enhanceYourCalm = HTTP2ErrorCode(0xb)
    static let inadequateSecurity = HTTP2ErrorCode(0xc)
    static let http11Required = HTTP2ErrorCode(0xd)

    private static let names = [
        "NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR", "SETTINGS_TIMEOUT", "STREAM_CLOSED",
        "FRAME_SIZE_ERROR", "REFUSED_STREAM", "CANCEL", "COMPRESSION_ERROR", "CONNECT_ERROR", "ENHANCE_YOUR_CALM",
        "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED",
    ]

    /// The RFC's name (`PROTOCOL_ERROR`), or the number for a code without one.
    var description: String {
        rawValue < Self.names.count ? Self.names[Int(rawValue)] : "error code \(rawValue)"
    }
}
