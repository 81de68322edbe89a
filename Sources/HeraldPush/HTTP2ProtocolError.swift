import HeraldCore

/// A peer broke the HTTP/2 protocol in a way that ends the connection (a connection error,
/// RFC 9113, section 5.4.1): the ``code`` goes into the GOAWAY that closes it.
///
/// The message names the frame and the rule, never a header value.
struct HTTP2ProtocolError: CodedError {
    let code: HTTP2ErrorCode
    let message: String

    init(_ code: HTTP2ErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }
}
