import Foundation
import HeraldCore
import Hummingbird

extension Response {
    /// A JSON response encoded with JSONEncoder (ISO 8601 dates).
    static func json(_ value: some Encodable, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) throws -> Response {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var fields = headers
        fields[.contentType] = "application/json; charset=utf-8"
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: try encoder.encode(value))))
    }
}

extension Request {
    /// The body parsed as JSON; 400 with a clear message if it is not JSON.
    func decodeJSONBody(context: AppRequestContext) async throws -> JSONValue {
        let buffer = try await body.collect(upTo: context.maxUploadSize)
        guard buffer.readableBytes > 0 else { throw HeraldError.badRequest("the request body is empty; send JSON") }
        do {
            return try JSONValue(parsing: buffer.readableBytesView)
        } catch {
            throw HeraldError.badRequest("the request body is not valid JSON")
        }
    }
}

extension JSONValue {
    var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }
}
