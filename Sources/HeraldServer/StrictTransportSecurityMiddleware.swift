import Hummingbird

/// `Strict-Transport-Security` on every answer of the TLS listener: a browser that opened the
/// console there never sends its session over plain HTTP to this host again (for a year).
struct StrictTransportSecurityMiddleware<Context: RequestContext>: RouterMiddleware {
    static var value: String { "max-age=31536000" }

    /// Errors reach it as responses already: `RequestLogger`, inside it, turns every error into one.
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        response.headers[.strictTransportSecurity] = Self.value
        return response
    }
}
