import NIOCore
import NIOHPACK

/// A request for ``HTTP2Client`` as ``HTTPPushTransport`` sends it: its header block is built
/// once per attempt, right before the send, with the attempt's `authorization`.
struct HTTP2PushRequest: Sendable {
    var method: String
    var path: String
    /// Whether `:path` goes into HPACK's dynamic table: when every request has the same one.
    var indexingPath: Bool
    /// The regular header fields after `authorization`, names in lowercase and values valid
    /// (HTTP/2's own checks are off on the client's connections).
    var fields: [(name: String, value: String)]
    var body: ByteBuffer?

    init(
        method: String = "POST", path: String, indexingPath: Bool = false, fields: [(name: String, value: String)],
        body: ByteBuffer?
    ) {
        self.method = method
        self.path = path
        self.indexingPath = indexingPath
        self.fields = fields
        self.body = body
    }
}

extension HTTP2Client: HTTPPushWire {
    func send(_ request: HTTP2PushRequest, authorization: String?, timeout: TimeAmount) async throws -> HTTPPushResponse {
        var headers = headerBlock(
            method: request.method, path: request.path, indexingPath: request.indexingPath,
            reservingCapacity: request.fields.count + 1)
        if let authorization { headers.add(name: "authorization", value: authorization) }
        for field in request.fields { headers.add(name: field.name, value: field.value) }
        let response = try await send(headerBlock: headers, body: request.body, deadline: .now() + timeout)
        return HTTPPushResponse(status: response.status, headers: .http2(response.headers), body: response.body)
    }
}
