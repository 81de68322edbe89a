import Foundation
public import HeraldCore
public import Hummingbird

extension HeraldError: HTTPResponseError {
    public var status: HTTPResponse.Status { .init(code: code.httpStatus) }

    /// `{"error": {"code": "badRequest", "message": "…"}}`, the body of every Herald error.
    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers: HTTPFields = [.contentType: "application/json; charset=utf-8"]
        if code == .unauthorized {
            headers[.wwwAuthenticate] = #"Bearer realm="herald", Basic realm="herald""#
        }
        let body = ErrorBody(error: .init(code: code.description, message: message))
        // Sorted keys: equal errors are equal bytes (a 404 for someone else's content is
        // indistinguishable from a 404 for no content).
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = try encoder.encode(body)
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    private struct ErrorBody: Encodable {
        struct Detail: Encodable {
            var code: String
            var message: String
        }
        var error: Detail
    }
}
