public import HeraldHub
import Hummingbird
import Logging
import NIOCore

/// What the console of one server keeps across its listeners: the operators (and their
/// sign-in limits) and the charts' history, which runs as a service. Make one and give it to
/// ``buildApplication(hubs:devices:appStore:configuration:services:connections:limits:console:onServerRunning:logger:)``
/// and ``buildTLSApplication(hubs:devices:appStore:configuration:tls:connections:limits:console:onServerRunning:logger:)`` alike.
public final class Console: Sendable {
    public let operators: ConsoleOperators
    /// The charts' samples; `nil` when the server records no metrics.
    public let history: ConsoleHistory?
    let pages: ConsolePages

    /// - Parameter limits: the server's (``CallerLimits``), whose pool hashes the operators'
    ///   passwords; without, they are hashed on `NIOThreadPool.singleton`.
    public init(hubs: HubRegistry, configuration: ServerConfiguration, limits: CallerLimits? = nil) throws {
        self.operators = ConsoleOperators(
            storage: hubs.catalog.storage, bcryptCost: configuration.bcryptCost, hashing: limits?.hashing ?? .unmanaged,
            idleTimeout: configuration.consoleIdleTimeout, now: configuration.now
        )
        self.history = hubs.metrics.map { ConsoleHistory(metrics: $0, interval: configuration.consoleSampleInterval) }
        self.pages = try ConsolePages(version: configuration.version, node: configuration.nodeName)
    }

    /// Adds the console's routes: on the TLS listener (`secure`), and on the plain-HTTP one
    /// only where ``ServerConfiguration/servesConsoleOverPlainHTTP`` says so. Elsewhere every
    /// console URL answers `403` with where the console is.
    func addRoutes(to router: Router<AppRequestContext>, hubs: HubRegistry, configuration: ServerConfiguration, secure: Bool, logger: Logger) {
        guard secure || configuration.servesConsoleOverPlainHTTP else {
            let refusal = Self.plainHTTPRefusal(configuration)
            for path in ["console", "console/**"] {
                router.get(RouterPath(path)) { _, _ in refusal }
                router.post(RouterPath(path)) { _, _ in refusal }
            }
            return
        }
        ConsoleController(
            hubs: hubs, operators: operators, pages: pages, history: history, hubEndpoint: configuration.hubEndpoint,
            // Secure on the TLS port, and behind a proxy that terminates TLS (an https public URL).
            secure: secure || ServerConfiguration.isBehindTLSProxy(publicURL: configuration.publicURL), logger: logger
        ).addRoutes(to: router)
    }

    /// The answer on a plain-HTTP listener that does not serve the console: where it is.
    static func plainHTTPRefusal(_ configuration: ServerConfiguration) -> Response {
        let text = """
            The console is not served over plain HTTP on \(configuration.host): an operator's password and session \
            would cross the network in clear. Open it over HTTPS (port \(configuration.tlsPort)), or behind a proxy \
            that terminates TLS with HERALD_PUBLIC_URL=https://…, or bind HERALD_HOST to a loopback address.

            """
        var headers = ConsolePages.securityHeaders
        headers[.contentType] = "text/plain; charset=utf-8"
        return Response(status: .forbidden, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}
