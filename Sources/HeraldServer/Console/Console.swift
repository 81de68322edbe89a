public import HeraldHub
import Hummingbird
import Logging

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

    func addRoutes(to router: Router<AppRequestContext>, hubs: HubRegistry, configuration: ServerConfiguration, secure: Bool, logger: Logger) {
        ConsoleController(
            hubs: hubs, operators: operators, pages: pages, history: history, hubEndpoint: configuration.hubEndpoint,
            // Secure on the TLS port, and behind a proxy that terminates TLS (an https public URL).
            secure: secure || (configuration.publicURL?.lowercased().hasPrefix("https://") ?? false), logger: logger
        ).addRoutes(to: router)
    }
}
