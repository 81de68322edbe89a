import HTTPTypes
import Hummingbird
import Instrumentation
import ServiceContextModule
import Tracing

/// A server span for every request, named after the pattern of the route it matched
/// (`/{hub}/messages`, `/api/register/{id}`; `HTTP POST` when none matched), a child of the
/// caller's `traceparent` when it sends one. The handlers' spans (`notification.accept`) are
/// its children.
///
/// Herald's own rather than Hummingbird's `TracingMiddleware`, which records the path and the
/// query string (`POST /api/register?handle=<a device token>`, `to_tag=username:alice`): this
/// one records the method, the route pattern and the status only, and never a header. Without
/// a tracer set up it costs a no-op span per request.
struct HTTPTracingMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext

    func handle(
        _ request: Request,
        context: AppRequestContext,
        next: (Request, AppRequestContext) async throws -> Response
    ) async throws -> Response {
        var parent = ServiceContext.current ?? .topLevel
        InstrumentationSystem.instrument.extract(request.headers, into: &parent, using: HTTPFieldsExtractor())
        let method = HTTPMetricsMiddleware.knownMethods.contains(request.method) ? request.method.rawValue : "other"
        let span = startSpan("HTTP \(method)", context: parent, ofKind: .server)
        defer { span.end() }
        span.attributes["http.request.method"] = method
        do {
            let response = try await ServiceContext.withValue(span.context) {
                try await next(request, context)
            }
            Self.finish(span, route: context.endpointPath, status: Int(response.status.code))
            return response
        } catch {
            let status = (error as? any HTTPResponseError).map { Int($0.status.code) } ?? 500
            Self.finish(span, route: context.endpointPath, status: status)
            throw error
        }
    }

    private static func finish(_ span: any Span, route: String?, status: Int) {
        if let route { span.operationName = route }
        span.updateAttributes { attributes in
            attributes["http.route"] = route
            attributes["http.response.status_code"] = status
        }
        if status >= 500 { span.setStatus(SpanStatus(code: .error)) }
    }
}

/// Reads a caller's trace headers (`traceparent`, `tracestate`).
private struct HTTPFieldsExtractor: Extractor {
    func extract(key: String, from headers: HTTPFields) -> String? {
        HTTPField.Name(key).flatMap { headers[$0] }
    }
}
