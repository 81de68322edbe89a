import Foundation
import HeraldCore
public import Hummingbird

/// The answer to a caller over a limit: 429 with `Retry-After`, the seconds until it may try
/// again. The app backend answers it as JSON, the hub API as the hub's XML error document.
public struct Throttled: Error, HTTPResponseError {
    public var retryAfterSeconds: Int
    public var message: String

    public var status: HTTPResponse.Status { .tooManyRequests }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var response = try HeraldError(code: .tooManyRequests, message: message).response(from: request, context: context)
        response.headers[.retryAfter] = "\(retryAfterSeconds)"
        return response
    }
}
