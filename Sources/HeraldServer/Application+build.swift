import Foundation
public import HeraldHub
import HeraldStore
public import Hummingbird
public import Logging
public import ServiceLifecycle
import NIOCore

/// Builds the router of every Herald HTTP API. Tests and the `herald` binary use the same one.
public func buildRouter(hub: Hub, configuration: ServerConfiguration) -> Router<AppRequestContext> {
    let router = Router(context: AppRequestContext.self)
    router.add(middleware: RequestLogger())
    router.get("health") { _, _ -> Response in
        try .json(["status": "ok"])
    }
    if let emulators = configuration.emulators {
        router.get("emulators") { _, _ -> Response in try .json(emulators) }
    }
    let accounts = Accounts(store: hub.store, configuration: configuration)
    let api = router.group("api")
    AccountsController(accounts: accounts).addRoutes(to: api)
    let authenticated = api.group().add(middleware: UserAuthenticator(accounts: accounts))
    AppBackendController(hub: hub, configuration: configuration).addRoutes(to: authenticated)
    SecurePushController(hub: hub, configuration: configuration).addRoutes(to: authenticated)
    RichPushController(hub: hub, configuration: configuration).addRoutes(to: authenticated)
    return router
}

/// Builds the Herald application: the HTTP server, the delivery worker and the sweeper of
/// expired secure and rich content.
public func buildApplication(
    hub: Hub,
    configuration: ServerConfiguration,
    services: [any Service] = [],
    onServerRunning: @escaping @Sendable (_ port: Int) async -> Void = { _ in },
    logger: Logger
) -> some ApplicationProtocol {
    Application(
        router: buildRouter(hub: hub, configuration: configuration),
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "Herald"),
        services: [DeliveryWorker(hub: hub), ContentSweeper(store: hub.store, configuration: configuration, logger: logger)]
            + services,
        onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? configuration.port) },
        logger: logger
    )
}

/// Logs each request's method, path (never the query, which can hold a device token),
/// status and duration at debug level; server errors at error level.
struct RequestLogger: RouterMiddleware {
    typealias Context = AppRequestContext

    func handle(
        _ request: Request,
        context: AppRequestContext,
        next: (Request, AppRequestContext) async throws -> Response
    ) async throws -> Response {
        let start = ContinuousClock.now
        do {
            let response = try await next(request, context)
            log(request, context: context, status: response.status.code, start: start)
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status.code ?? 500
            log(request, context: context, status: status, start: start)
            if status >= 500, !(error is any HTTPResponseError) {
                context.logger.error("Request failed", metadata: ["error": "\(String(reflecting: type(of: error)))"])
            }
            throw error
        }
    }

    private func milliseconds(since start: ContinuousClock.Instant) -> Int64 {
        let elapsed = ContinuousClock.now - start
        return elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000
    }

    private func log(_ request: Request, context: AppRequestContext, status: Int, start: ContinuousClock.Instant) {
        context.logger.debug(
            "Request",
            metadata: [
                "hb.request.method": "\(request.method)",
                "hb.request.path": "\(request.uri.path)",
                "hb.response.status": "\(status)",
                "herald.duration_ms": "\(milliseconds(since: start))",
            ]
        )
    }
}
