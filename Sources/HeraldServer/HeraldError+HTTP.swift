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
        let data = try JSONEncoder().encode(body)
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
