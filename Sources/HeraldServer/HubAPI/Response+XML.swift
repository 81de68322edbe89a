import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

extension Response {
    /// An XML document with its content type.
    static func xml(
        _ data: Data, status: HTTPResponse.Status = .ok, contentType: String = "application/xml; charset=utf-8", headers: HTTPFields = [:]
    ) -> Response {
        var headers = headers
        headers[.contentType] = contentType
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
