import NIOCore
import NIOHPACK
import NIOHTTP1

/// How ``HTTPPushTransport`` reaches a push service: one request out, the whole response
/// back. ``HTTP2Client`` is one (FCM); the AsyncHTTPClient pool, HTTP/1.1 or 2, is the other
/// (WNS, Web Push, token endpoints).
///
/// A wire never retries and never classifies: any error it throws means the service gave no
/// complete answer.
protocol HTTPPushWire: Sendable {
    /// A request as this wire takes it, everything but its `authorization` header.
    associatedtype PushRequest: Sendable

    /// Whether the wire was shut down: no request goes out any more.
    var isShutDown: Bool { get }

    /// Sends `request` with `authorization` (none if `nil`) and reads the whole response,
    /// body included, within `timeout`.
    func send(_ request: PushRequest, authorization: String?, timeout: TimeAmount) async throws -> HTTPPushResponse

    /// Sends every request of `batch` with the same `authorization`, each within `timeout`;
    /// the answers come in the order of `batch`. By default each goes on its own, all at once.
    func send(batch: [PushRequest], authorization: String?, timeout: TimeAmount) async -> [HTTPPushAnswer]
}

extension HTTPPushWire {
    func send(batch: [PushRequest], authorization: String?, timeout: TimeAmount) async -> [HTTPPushAnswer] {
        await withTaskGroup(of: (Int, HTTPPushAnswer).self) { group in
            for (index, request) in batch.enumerated() {
                group.addTask {
                    let result: Result<HTTPPushResponse, any Error>
                    do {
                        result = .success(try await send(request, authorization: authorization, timeout: timeout))
                    } catch {
                        result = .failure(error)
                    }
                    return (index, HTTPPushAnswer(result: result, completedAt: .now))
                }
            }
            var answers = [HTTPPushAnswer?](repeating: nil, count: batch.count)
            for await (index, answer) in group { answers[index] = answer }
            return answers.map { $0! }
        }
    }
}

/// One request's answer in a batch: the response or why there is none, and when it came.
struct HTTPPushAnswer: Sendable {
    var result: Result<HTTPPushResponse, any Error>
    var completedAt: ContinuousClock.Instant
}

/// A push service's response, whichever wire carried it: status, header fields, body.
struct HTTPPushResponse: Sendable {
    enum Headers: Sendable {
        case http1(HTTPHeaders)
        case http2(HPACKHeaders)
    }

    var status: Int
    var headers: Headers
    /// The body, `nil` if there was none (or it could not be read).
    var body: ByteBuffer?

    init(status: Int, headers: Headers, body: ByteBuffer?) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first value of a header field; `name` in lowercase.
    func header(_ name: String) -> String? {
        switch headers {
        case .http1(let headers): headers.first(name: name)
        case .http2(let headers): headers.first(name: name)
        }
    }
}
