import Foundation
import HeraldCore
public import Hummingbird

/// The answer to a caller when Herald has no room for its work right now (the queue of password
/// checks is full): 503 with `Retry-After`, as JSON on the app backend.
public struct Overloaded: Error, HTTPResponseError {
    public var retryAfterSeconds: Int
    public var message: String

    public var status: HTTPResponse.Status { .serviceUnavailable }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var response = try HeraldError(code: .unavailable, message: message).response(from: request, context: context)
        response.headers[.retryAfter] = "\(retryAfterSeconds)"
        return response
    }
}
