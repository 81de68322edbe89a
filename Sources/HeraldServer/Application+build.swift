import Foundation
import HeraldCore
public import HeraldHub
public import HeraldStore
public import Hummingbird
public import Logging
public import ServiceLifecycle
import NIOCore
public import NIOSSL
import HummingbirdTLS

/// Builds the router of every Herald HTTP API. Tests and the `herald` binary use the same one.
///
/// - Parameters:
///   - hubs: the hubs of this server: the hub REST API's (`/{hub}/…`), the app backend's among them.
///   - devices: the hub the app backend registers its users' devices with and sends through:
///     a hub of `hubs` (``RegistryUserDevices``), or one reached through the hub REST API.
///   - appStore: where the app backend keeps its accounts, sessions and secure and rich
///     content: the store of its hub.
///   - scheme: `https` for the TLS listener: the scheme of the URLs the hub API hands out.
public func buildRouter(
    hubs: HubRegistry,
    devices: any UserDevices,
    appStore: any AccountStore & ContentStore,
    configuration: ServerConfiguration,
    scheme: String = "http"
) -> Router<AppRequestContext> {
    let router = Router(context: AppRequestContext.self)
    router.add(middleware: RequestLogger())
    router.get("health") { _, _ -> Response in
        try .json(["status": "ok"])
    }
    if let emulators = configuration.emulators {
        router.get("emulators") { _, _ -> Response in try .json(emulators) }
    }
    let accounts = Accounts(store: appStore, configuration: configuration)
    let api = router.group("api")
    AccountsController(accounts: accounts).addRoutes(to: api)
    let authenticated = api.group().add(middleware: UserAuthenticator(accounts: accounts))
    AppBackendController(devices: devices, configuration: configuration).addRoutes(to: authenticated)
    SecurePushController(store: appStore, devices: devices, configuration: configuration).addRoutes(to: authenticated)
    RichPushController(store: appStore, devices: devices, configuration: configuration).addRoutes(to: authenticated)
    HubAPIController(
        registry: hubs,
        scheme: scheme,
        requestsPerSecond: configuration.hubRequestsPerSecond,
        now: configuration.now
    ).addRoutes(to: router)
    return router
}

/// Builds the Herald application: the HTTP server, the hub registry (which runs every hub's
/// delivery worker), and the sweeper of expired secure and rich content.
///
/// `services` are what the hubs deliver through (push providers, emulators): they start
/// before the registry and stop after it, and the HTTP server stops first of all, so that a
/// graceful shutdown accepts nothing new, lets the workers end, closes the stores, and only
/// then the connections to the push services.
public func buildApplication(
    hubs: HubRegistry,
    devices: any UserDevices,
    appStore: any AccountStore & ContentStore,
    configuration: ServerConfiguration,
    services: [any Service] = [],
    onServerRunning: @escaping @Sendable (_ port: Int) async -> Void = { _ in },
    logger: Logger
) -> some ApplicationProtocol {
    let own: [any Service] = [hubs, ContentSweeper(store: appStore, configuration: configuration, logger: logger)]
    return Application(
        router: buildRouter(hubs: hubs, devices: devices, appStore: appStore, configuration: configuration),
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "Herald"),
        services: services + own,
        onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? configuration.port) },
        logger: logger
    )
}

/// The same APIs over TLS on `configuration.tlsPort`, as the hub SDKs require (they turn
/// `sb://` into `https://`). Runs no services of its own: run it beside ``buildApplication``.
public func buildTLSApplication(
    hubs: HubRegistry,
    devices: any UserDevices,
    appStore: any AccountStore & ContentStore,
    configuration: ServerConfiguration,
    tls: TLSConfiguration,
    onServerRunning: @escaping @Sendable (_ port: Int) async -> Void = { _ in },
    logger: Logger
) throws -> some ApplicationProtocol {
    Application(
        router: buildRouter(hubs: hubs, devices: devices, appStore: appStore, configuration: configuration, scheme: "https"),
        server: try .tls(.http1(), tlsConfiguration: tls),
        configuration: .init(address: .hostname(configuration.host, port: configuration.tlsPort), serverName: "Herald"),
        onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? configuration.tlsPort) },
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
        (ContinuousClock.now - start).wholeMilliseconds
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
