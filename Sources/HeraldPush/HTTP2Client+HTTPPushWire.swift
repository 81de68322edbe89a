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
    /// (the client's connections send header blocks unchecked).
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
        let response = try await send(headerBlock: headerBlock(of: request, authorization: authorization), body: request.body, deadline: .now() + timeout)
        return HTTPPushResponse(response)
    }

    /// The whole batch in one burst per connection, and one wait.
    func send(batch: [HTTP2PushRequest], authorization: String?, timeout: TimeAmount) async -> [HTTPPushAnswer] {
        let requests = batch.map { BatchRequest(headers: headerBlock(of: $0, authorization: authorization), body: $0.body) }
        return await send(batch: requests, deadline: .now() + timeout).map { answer in
            HTTPPushAnswer(result: answer.result.map(HTTPPushResponse.init).mapError { $0 }, completedAt: answer.completedAt)
        }
    }

    private func headerBlock(of request: HTTP2PushRequest, authorization: String?) -> HPACKHeaders {
        var headers = headerBlock(
            method: request.method, path: request.path, indexingPath: request.indexingPath,
            reservingCapacity: request.fields.count + 1)
        if let authorization { headers.add(name: "authorization", value: authorization) }
        for field in request.fields { headers.add(name: field.name, value: field.value) }
        return headers
    }
}

extension HTTPPushResponse {
    init(_ response: HTTP2Client.Response) {
        self.init(status: response.status, headers: .http2(response.headers), body: response.body)
    }
}
