import AsyncHTTPClient
import NIOCore
import NIOHTTP1

extension HTTPClientPool: HTTPPushWire {
    /// Larger bodies are not read: the response keeps its status and headers, without a body.
    static let maxResponseBodySize = 256 * 1024

    /// Sends over the next client, round-robin.
    func send(_ request: HTTPClientRequest, authorization: String?, timeout: TimeAmount) async throws -> HTTPPushResponse {
        var authorized = request
        if let authorization { authorized.headers.replaceOrAdd(name: "authorization", value: authorization) }
        let response = try await next().execute(authorized, timeout: timeout)
        // A body that breaks off leaves the status to classify the answer by, as a missing one.
        let body = try? await response.body.collect(upTo: Self.maxResponseBodySize)
        return HTTPPushResponse(status: Int(response.status.code), headers: .http1(response.headers), body: body)
    }
}
