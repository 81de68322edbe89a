import Foundation
import HeraldCore
public import HeraldHub
public import HeraldStore
public import Hummingbird
import HummingbirdTLS
public import Logging
import NIOCore
public import NIOSSL
public import ServiceLifecycle

/// Builds the router of every Herald HTTP API. Tests and the `herald` binary use the same one.
///
/// - Parameters:
///   - hubs: the hubs of this server: the hub REST API's (`/{hub}/…`), the app backend's among them.
///   - devices: the hub the app backend registers its users' devices with and sends through:
///     a hub of `hubs` (``HubRegistryUserDevices``), or one reached through the hub REST API.
///   - appStore: where the app backend keeps its accounts, sessions and secure and rich
///     content: the store of its hub (``HubRegistry/appBackendStore(named:)``).
///   - scheme: `https` for the TLS listener: the scheme of the URLs the hub API hands out.
///   - limits: the limits on callers the server's listeners share; its hashing pool must run
///     as a service (``buildApplication(hubs:devices:appStore:configuration:services:connections:limits:console:onServerRunning:logger:)`` runs it).
public func buildRouter(
    hubs: HubRegistry,
    devices: any UserDevices,
    appStore: any AppBackendStore,
    configuration: ServerConfiguration,
    scheme: String = "http",
    limits: CallerLimits,
    console: Console? = nil,
    logger: Logger = Logger(label: "herald")
) -> Router<AppRequestContext> {
    let router = Router(context: AppRequestContext.self)
    // Outermost: a span for the whole request (a no-op without a tracer).
    router.add(middleware: HTTPTracingMiddleware())
    // Browsers that reached the TLS listener come back over TLS only.
    if scheme == "https" { router.add(middleware: StrictTransportSecurityMiddleware()) }
    // Next, so that it counts every answer, the errors RequestLogger turns into responses too.
    if let metrics = hubs.metrics { router.add(middleware: HTTPMetricsMiddleware(metrics: metrics)) }
    router.add(middleware: RequestLogger())
    // Liveness: the process answers.
    router.get("health") { _, _ -> Response in
        try .json(["status": "ok"])
    }
    // The app backend's OpenAPI 3.1 contract, as it is embedded in the binary.
    router.get("openapi.json") { _, _ -> Response in
        Response(
            status: .ok, headers: [.contentType: "application/json; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(bytes: PackageResources.openapi_json)))
    }
    // Readiness: every open hub's store answers and can write, and there is a push provider;
    // 503 otherwise. The hubs, stores' errors and providers only to a caller with the metrics
    // token: the status alone to anyone else. Checked at most once a second.
    let readiness = ReadinessCache(hubs: hubs, maximumAge: configuration.readinessMaximumAge)
    router.get("ready") { request, _ -> Response in
        let current = await readiness.current()
        let status: HTTPResponse.Status = current.isReady ? .ok : .serviceUnavailable
        if let token = configuration.metricsToken, MetricsController.request(request, bears: token) {
            return try .json(current, status: status)
        }
        return try .json(["status": current.status], status: status)
    }
    // Prometheus metrics, when the hubs record them (`HubRegistry(metrics:)`).
    if let metrics = hubs.metrics {
        MetricsController(hubs: hubs, metrics: metrics, token: configuration.metricsToken).addRoutes(to: router)
    }
    if let emulators = configuration.emulators {
        router.get("emulators") { _, _ -> Response in try .json(emulators) }
    }
    let accounts = Accounts(store: appStore, configuration: configuration, limits: limits)
    let api = router.group("api")
    AccountsController(accounts: accounts).addRoutes(to: api)
    let authenticated = api.group().add(middleware: UserAuthenticator(accounts: accounts))
    AppBackendController(devices: devices, configuration: configuration).addRoutes(to: authenticated)
    let secure = SecurePushController(store: appStore, devices: devices, configuration: configuration)
    let rich = RichPushController(store: appStore, devices: devices, configuration: configuration)
    secure.addRoutes(to: authenticated)
    rich.addRoutes(to: authenticated)
    ContentController(secure: secure, rich: rich).addRoutes(to: authenticated)
    HubAPIController(registry: hubs, scheme: scheme, limiter: limits.hubRequests, now: configuration.now).addRoutes(to: router)
    // The console (`console` is a reserved hub name, so it never shadows a hub's API).
    console?.addRoutes(to: router, hubs: hubs, configuration: configuration, secure: scheme == "https", logger: logger)
    return router
}

/// Builds the Herald application: the HTTP server, the hub registry (which runs every hub's
/// delivery worker), the sweeper of expired secure and rich content, and the pool that hashes
/// passwords (of `limits`, which a TLS listener beside it shares; a new one without).
///
/// `services` are what the hubs deliver through (push providers, emulators): they start
/// before the registry and stop after it, and the HTTP server stops first of all, so that a
/// graceful shutdown accepts nothing new, lets the workers end, closes the stores, and only
/// then the connections to the push services.
public func buildApplication(
    hubs: HubRegistry,
    devices: any UserDevices,
    appStore: any AppBackendStore,
    configuration: ServerConfiguration,
    services: [any Service] = [],
    connections: ConnectionLimiter? = nil,
    limits: CallerLimits? = nil,
    console: Console? = nil,
    onServerRunning: @escaping @Sendable (_ port: Int) async -> Void = { _ in },
    logger: Logger
) -> some ApplicationProtocol {
    let limits = limits ?? CallerLimits(configuration: configuration)
    // The hashing pool first: the group stops services in reverse order, so it stops after
    // the hubs and the server, once no request can hash.
    var own: [any Service] = [limits.hashing, hubs, ContentSweeper(store: appStore, configuration: configuration, logger: logger)]
    if let history = console?.history { own.append(history) }
    let limiter = connections ?? ConnectionLimiter(limits: configuration.connectionLimits, logger: logger)
    return Application(
        router: buildRouter(
            hubs: hubs, devices: devices, appStore: appStore, configuration: configuration, limits: limits, console: console, logger: logger
        ),
        server: .guardedHTTP1(limiter, logger: logger),
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "Herald"),
        services: services + own,
        onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? configuration.port) },
        logger: logger
    )
}

/// The same APIs over TLS on `configuration.tlsPort`, as the hub SDKs require (they turn
/// `sb://` into `https://`). Run it beside ``buildApplication``, with the same `connections`
/// and `limits`, so that the limits count both listeners together; it runs no services of its
/// own but the hashing pool of `limits` when it makes them.
public func buildTLSApplication(
    hubs: HubRegistry,
    devices: any UserDevices,
    appStore: any AppBackendStore,
    configuration: ServerConfiguration,
    tls: TLSConfiguration,
    connections: ConnectionLimiter? = nil,
    limits: CallerLimits? = nil,
    console: Console? = nil,
    onServerRunning: @escaping @Sendable (_ port: Int) async -> Void = { _ in },
    logger: Logger
) throws -> some ApplicationProtocol {
    let limiter = connections ?? ConnectionLimiter(limits: configuration.connectionLimits, logger: logger)
    let shared = limits ?? CallerLimits(configuration: configuration)
    return Application(
        router: buildRouter(
            hubs: hubs, devices: devices, appStore: appStore, configuration: configuration, scheme: "https", limits: shared, console: console,
            logger: logger
        ),
        server: try .tls(.guardedHTTP1(limiter, logger: logger), tlsConfiguration: tls),
        configuration: .init(address: .hostname(configuration.host, port: configuration.tlsPort), serverName: "Herald"),
        services: limits == nil ? [shared.hashing] : [],
        onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? configuration.tlsPort) },
        logger: logger
    )
}
