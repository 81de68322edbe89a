import HeraldCore

/// Why an ``HTTP2Client`` request got no complete response.
///
/// Every case means the push service did not (knowingly) answer, so a caller may send again.
/// Messages name the peer and what went wrong, never a header value or a body.
/// Equality compares the code only (``CodedError``).
package struct HTTP2ClientError: CodedError {
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case connectFailed, connectionClosed, goAway, streamReset, timeout, cancelled, shutDown
            case invalidRequest, invalidResponse
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The connection could not be set up (refused, TLS, no HTTP/2), or failed recently and
        /// is in its reconnect backoff.
        static let connectFailed = Code(.connectFailed)
        /// The connection closed before the response was complete.
        static let connectionClosed = Code(.connectionClosed)
        /// The server's GOAWAY said the request was not processed.
        static let goAway = Code(.goAway)
        /// The server reset the stream (RST_STREAM).
        static let streamReset = Code(.streamReset)
        /// The deadline passed before the response was complete.
        static let timeout = Code(.timeout)
        /// The caller's task was cancelled; the stream, if open, was reset.
        static let cancelled = Code(.cancelled)
        /// The client was shut down.
        static let shutDown = Code(.shutDown)
        /// The request could not be written (a header field HTTP/2 does not allow).
        static let invalidRequest = Code(.invalidRequest)
        /// The response broke the protocol (no `:status`) or its body was too large.
        static let invalidResponse = Code(.invalidResponse)

        /// A short name, safe as a metric label.
        package var description: String { base.rawValue }
    }

    package let code: Code
    package let message: String

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
}
