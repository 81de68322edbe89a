import HTTPTypes
import HeraldCore
import Hummingbird

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
