import Foundation
import HTTPTypes
import HeraldCore
import HeraldHub
import HeraldHubWire
import Hummingbird
import Logging
import NIOCore
import Synchronization

/// Turns every error of a hub API route into the hub's error document
/// (`<Error><Code>…</Code><Detail>…</Detail></Error>`), and stamps each response with a
/// `TrackingId`, as the SDKs expect.
struct HubErrorMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext

    static let trackingID = HTTPField.Name("TrackingId")!
    static let correlationID = HTTPField.Name("x-ms-correlation-request-id")!

    func handle(
        _ request: Request,
        context: AppRequestContext,
        next: (Request, AppRequestContext) async throws -> Response
    ) async throws -> Response {
        let trackingID = UUID.random().uuidString.lowercased()
        do {
            var response = try await next(request, context)
            response.headers[Self.trackingID] = trackingID
            response.headers[Self.correlationID] = trackingID
            return response
        } catch {
            let status: Int
            let detail: String
            var headers = HTTPFields()
            switch (HeraldError(reporting: error), error) {
            case (let reported?, _):
                status = reported.code.httpStatus
                detail = reported.message
            case (nil, let error as Throttled):
                status = error.code.httpStatus
                detail = error.message
                headers[.retryAfter] = "\(error.retryAfterSeconds)"
            case (nil, let error as any HTTPResponseError) where HeraldError.answering(error) != nil:
                status = Int(error.status.code)
                detail =
                    error.status == .contentTooLarge
                    ? "the request body is larger than the hub accepts (64 KB)"
                    : error.status.reasonPhrase
            default:
                status = 500
                detail = "internal error"
                context.logger.error("Hub API request failed", metadata: ["error": "\(String(reflecting: type(of: error)))"])
            }
            let timestamp = ISO8601DateFormatter().string(from: Date())
            let document = HubErrorDocument(status: status, detail: "\(detail). TrackingId:\(trackingID),TimeStamp:\(timestamp)")
            headers[.contentType] = "application/xml; charset=utf-8"
            headers[Self.trackingID] = trackingID
            headers[Self.correlationID] = trackingID
            return Response(
                status: .init(code: status),
                headers: headers,
                body: .init(byteBuffer: ByteBuffer(bytes: document.xml()))
            )
        }
    }
}
