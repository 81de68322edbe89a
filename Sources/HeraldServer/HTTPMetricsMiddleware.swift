import HTTPTypes
import HeraldMetrics
import Hummingbird

/// Counts every request by the pattern of the route it matched (`/{hub}/messages`, never the
/// path, which can hold a registration id or a hub's name), its method and status, and times
/// it. Requests that match no route count under the route `NotFound`, methods other than the
/// usual ones as `other`.
///
/// Herald's own middleware rather than Hummingbird's `MetricsMiddleware`: that one records
/// through the process-wide swift-metrics system, without the help texts `promtool` asks
/// for, where Herald's families are all declared in ``HeraldMetrics`` on a registry handed to
/// the server (so that tests count exact changes on a registry of their own).
struct HTTPMetricsMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext
    let metrics: HeraldMetrics

    func handle(
        _ request: Request,
        context: AppRequestContext,
        next: (Request, AppRequestContext) async throws -> Response
    ) async throws -> Response {
        let start = ContinuousClock.now
        let status: Int
        do {
            let response = try await next(request, context)
            status = Int(response.status.code)
            record(request, context: context, status: status, start: start)
            return response
        } catch let error as any HTTPResponseError {
            record(request, context: context, status: Int(error.status.code), start: start)
            throw error
        } catch {
            record(request, context: context, status: 500, start: start)
            throw error
        }
    }

    private func record(_ request: Request, context: AppRequestContext, status: Int, start: ContinuousClock.Instant) {
        metrics.httpRequest(
            route: context.endpointPath ?? "NotFound",
            method: Self.knownMethods.contains(request.method) ? request.method.rawValue : "other",
            status: status,
            duration: .now - start
        )
    }

    /// The methods counted by name; any other (a client may send any token) counts as
    /// `other`, so that no caller can add series.
    static let knownMethods: Set<HTTPRequest.Method> = [.get, .head, .post, .put, .patch, .delete, .options]
}
