import NIOCore
import NIOHPACK
import NIOHTTP1
import NIOSSL

/// One HTTP request as the emulators see it, whichever HTTP version carried it.
struct EmulatorRequest {
    enum Headers {
        case http2(HPACKHeaders)
        case http1(HTTPHeaders)

        /// The first value of `name` (lowercase), or `nil`.
        @inline(__always)
        func first(_ name: String) -> String? {
            switch self {
            case .http2(let headers): headers.first(name: name)
            case .http1(let headers): headers.first(name: name)
            }
        }

        /// How many times `name` (lowercase) occurs.
        func count(_ name: String) -> Int {
            switch self {
            case .http2(let headers): headers[name].count
            case .http1(let headers): headers[name].count
            }
        }

        /// Calls `body` with every header whose (lowercased) name starts with `prefix`.
        func forEach(withPrefix prefix: String, _ body: (_ name: String, _ value: String) -> Void) {
            switch self {
            case .http2(let headers):
                for (name, value, _) in headers where name.hasPrefix(prefix) { body(name, value) }
            case .http1(let headers):
                for (name, value) in headers {
                    let lower = name.lowercased()
                    if lower.hasPrefix(prefix) { body(lower, value) }
                }
            }
        }
    }

    var method: String
    /// The request target: path and query.
    var target: String
    var headers: Headers
    var body: ByteBuffer?

    /// The path without the query.
    var path: Substring {
        if let question = target.utf8.firstIndex(of: UInt8(ascii: "?")) {
            return target[..<question]
        }
        return target[...]
    }

    var bodyCount: Int { body?.readableBytes ?? 0 }
}

/// A response: status, headers and an optional body. Emulators build the body with an encoder.
struct EmulatorResponse {
    var status: Int
    var headers: [(name: String, value: String)]
    var body: ByteBuffer?

    init(status: Int, headers: [(name: String, value: String)] = [], body: ByteBuffer? = nil) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// What the HTTP/1 and HTTP/2 connection handlers call for every complete request.
///
/// `respond` runs on the connection's event loop and must not block: state lives behind short
/// `Mutex` sections, never held across I/O.
protocol EmulatorResponder: Sendable {
    /// Per-connection state (for example the last verified authorization header), owned by one
    /// connection handler and only touched on its event loop.
    associatedtype ConnectionState

    func makeConnectionState() -> ConnectionState
    /// The state of a connection whose TLS client presented `clientCertificate` (the leaf;
    /// `nil` for none). The default ignores the certificate.
    func makeConnectionState(clientCertificate: NIOSSLCertificate?) -> ConnectionState
    func respond(
        to request: EmulatorRequest, state: inout ConnectionState, allocator: ByteBufferAllocator
    )
        -> EmulatorResponse
}

extension EmulatorResponder {
    func makeConnectionState(clientCertificate: NIOSSLCertificate?) -> ConnectionState { makeConnectionState() }
}
