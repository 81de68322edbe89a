import Foundation
public import HeraldCore
public import Hummingbird

/// The answer to a caller who must come back later, with `Retry-After`, the seconds until it
/// may try again: `429` for a caller over a limit (``HeraldError/Code/tooManyRequests``), `503`
/// when Herald has no room for the work right now, such as a full queue of password checks
/// (``HeraldError/Code/unavailable``). The app backend answers it as JSON, the hub API as the
/// hub's XML error document, the console as a page.
public struct Throttled: Error, HTTPResponseError {
    public var retryAfterSeconds: Int
    public var message: String
    public var code: HeraldError.Code

    public init(retryAfterSeconds: Int, message: String, code: HeraldError.Code = .tooManyRequests) {
        self.retryAfterSeconds = retryAfterSeconds
        self.message = message
        self.code = code
    }

    public var status: HTTPResponse.Status { .init(code: code.httpStatus) }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var response = try HeraldError(code: code, message: message).response(from: request, context: context)
        response.headers[.retryAfter] = "\(retryAfterSeconds)"
        return response
    }
}
