import Foundation
import Logging
import HeraldCore
import HeraldHub
import HTTPTypes
import Hummingbird
import NIOCore
import Synchronization

/// The hub API's answer to a throttled caller: 429 with `Retry-After`.
struct HubThrottled: Error {
    var retryAfterSeconds: Int
}

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
        let trackingID = UUID().uuidString.lowercased()
        do {
            var response = try await next(request, context)
            response.headers[Self.trackingID] = trackingID
            response.headers[Self.correlationID] = trackingID
            return response
        } catch {
            let status: Int
            let detail: String
            var headers = HTTPFields()
            switch error {
            case let error as HeraldError:
                status = error.code.httpStatus
                detail = error.message
            case let error as HubThrottled:
                status = 429
                detail = "the hub is receiving more requests than it accepts; retry after \(error.retryAfterSeconds) s"
                headers[.retryAfter] = "\(error.retryAfterSeconds)"
            case let error as any HTTPResponseError:
                status = Int(error.status.code)
                detail = error.status == .contentTooLarge
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

/// Answers a request for the hub API that matches none of its routes with the hub's error
/// document (404), as the service does, rather than the router's empty 404. A request is
/// the hub API's when it carries `api-version`, which every SDK sends; other unknown paths
/// keep the plain 404.
struct HubNotFoundMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext

    func handle(
        _ request: Request,
        context: AppRequestContext,
        next: (Request, AppRequestContext) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound && request.uri.queryParameters["api-version"] != nil {
            let operation = "\(request.method) \(request.uri.path.prefix(200))"
            return try await HubErrorMiddleware().handle(request, context: context) { _, _ in
                throw HeraldError.notFound("the hub API has no operation \(operation)")
            }
        }
    }
}

/// A token bucket per hub: the hub API's requests per second, with bursts of up to twice
/// that. A caller over the limit gets 429 with the seconds until a token is free.
final class HubRateLimiter: Sendable {
    let rate: Double
    let burst: Double
    private let buckets = Mutex<[String: (tokens: Double, at: ContinuousClock.Instant)]>([:])

    init(requestsPerSecond: Int) {
        self.rate = Double(max(1, requestsPerSecond))
        self.burst = Double(max(1, requestsPerSecond)) * 2
    }

    func admit(_ hub: String) throws {
        let now = ContinuousClock.now
        let wait: Double? = buckets.withLock { buckets in
            var bucket = buckets[hub] ?? (burst, now)
            let elapsed = now - bucket.at
            bucket.tokens = min(burst, bucket.tokens + elapsed.seconds * rate)
            bucket.at = now
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                buckets[hub] = bucket
                return nil
            }
            buckets[hub] = bucket
            return (1 - bucket.tokens) / rate
        }
        if let wait { throw HubThrottled(retryAfterSeconds: max(1, Int(wait.rounded(.up)))) }
    }
}

extension Request {
    /// Whether the query has this flag (`?direct`, `&test`), with or without a value.
    func hasQueryFlag(_ name: String) -> Bool {
        guard let query = uri.query else { return false }
        return query.split(separator: "&").contains { item in
            let key = item.split(separator: "=", maxSplits: 1).first.map(String.init) ?? ""
            return key.caseInsensitiveCompare(name) == .orderedSame
        }
    }

    /// A query parameter read as HTML forms encode it, as the SDKs write their queries: the
    /// key and the value percent-decoded, `+` a space (`$filter=ChannelUri+eq+%27…%27`,
    /// `%24top=10`).
    func formQuery(_ name: String) -> String? {
        guard let query = uri.query else { return nil }
        func decode(_ part: Substring) -> String {
            let spaced = part.replacingOccurrences(of: "+", with: " ")
            return spaced.removingPercentEncoding ?? spaced
        }
        for item in query.split(separator: "&") {
            let pair = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if decode(pair[0]) == name { return pair.count == 2 ? decode(pair[1]) : "" }
        }
        return nil
    }

    /// A header by name, case-insensitively.
    func header(_ name: String) -> String? {
        guard let field = HTTPField.Name(name) else { return nil }
        return headers[field]
    }

    /// The whole body, refusing more than `limit` bytes with 413.
    func bodyData(limit: Int) async throws -> Data {
        let buffer: ByteBuffer
        do {
            buffer = try await body.collect(upTo: limit)
        } catch is NIOTooManyBytesError {
            // Only an oversized body is a 413; a connection that breaks is not the client's payload.
            throw HeraldError.payloadTooLarge("the request body is larger than the hub accepts (\(limit / 1024) KB)")
        }
        return Data(buffer.readableBytesView)
    }
}

extension Response {
    /// An XML document with its content type.
    static func xml(_ data: Data, status: HTTPResponse.Status = .ok, contentType: String = "application/xml; charset=utf-8", headers: HTTPFields = [:]) -> Response {
        var headers = headers
        headers[.contentType] = contentType
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
