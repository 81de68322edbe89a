import Foundation
public import HTTPTypes
import HeraldCore
import Hummingbird
import Logging

extension HTTPField.Name {
    /// The request's id: the caller's own, or one Herald made; every response carries it.
    public static let requestID = Self("X-Request-Id")!
}

/// Gives every request an id, puts it in the request's log metadata (`herald.request.id`)
/// and in the response (`X-Request-Id`), and logs each request's method, path (never the
/// query, which can hold a device token), status and duration at debug level; server
/// errors at error level.
///
/// An `X-Request-Id` the caller sends (a proxy's, say) is kept when it is a plain token of
/// at most 64 letters, digits and `-_.:`; otherwise Herald makes one (16 random bytes, hex).
struct RequestLogger: RouterMiddleware {
    typealias Context = AppRequestContext

    func handle(
        _ request: Request,
        context: AppRequestContext,
        next: (Request, AppRequestContext) async throws -> Response
    ) async throws -> Response {
        let start = ContinuousClock.now
        let id = Self.requestID(request.headers[.requestID])
        var context = context
        context.logger[metadataKey: "herald.request.id"] = "\(id)"
        var response: Response
        do {
            response = try await next(request, context)
        } catch {
            if let error = HeraldError.answering(error) {
                response = try error.response(from: request, context: context)
            } else {
                context.logger.error("Request failed", metadata: ["error": "\(String(reflecting: type(of: error)))"])
                // Herald's error document, as every other error of the APIs: JSON with the request
                // id to quote, never the error's text (which can hold what the store or a peer said).
                response = try HeraldError(code: .internalError, message: "the server failed; quote request id \(id) to its operator")
                    .response(from: request, context: context)
            }
        }
        response.headers[.requestID] = id
        context.logger.debug(
            "Request",
            metadata: [
                "hb.request.method": "\(request.method)",
                "hb.request.path": "\(request.uri.path)",
                "hb.response.status": "\(response.status.code)",
                "herald.duration_ms": "\((ContinuousClock.now - start).wholeMilliseconds)",
            ]
        )
        return response
    }

    /// The caller's id if it is a plain token, a new one otherwise.
    static func requestID(_ given: String?) -> String {
        if let given, (1...64).contains(given.utf8.count),
            given.utf8.allSatisfy({ byte in
                (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                    || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || "-_.:".utf8.contains(byte)
            })
        {
            return given
        }
        // 128 random bits in hex, without Foundation's formatting (a cost on every request).
        var generator = SystemRandomNumberGenerator()
        let digits = Array("0123456789abcdef".utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        for _ in 0..<2 {
            var word = generator.next() as UInt64
            for _ in 0..<16 {
                bytes.append(digits[Int(word & 0xF)])
                word >>= 4
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
