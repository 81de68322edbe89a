import ArgumentParser
import Foundation
import HeraldClient
import HeraldCore
import HeraldHub
import HeraldHubAPIUserDevices
import HeraldServer
import HeraldStore
import HeraldTLS
import Hummingbird
import Logging
import NIOCore
import NIOSSL
import ServiceLifecycle
import Synchronization
import UnixSignals

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the hub: the app backend API, the delivery worker, and emulators where no credentials are set.",
        discussion: HeraldConfiguration.helpText
    )

    @OptionGroup var common: CommonOptions

    @Option(help: "Address to listen on (HERALD_HOST; default 127.0.0.1).")
    var host: String?

    @Option(help: "HTTP port (HERALD_PORT; default 8080).")
    var port: Int?

    @Option(name: .customLong("tls-port"), help: "HTTPS port of every API, the hub REST API's SDKs need it (HERALD_TLS_PORT; default 8443; 0 turns TLS off).")
    var tlsPort: Int?

    @Flag(
        name: .customLong("insecure-demo-auth"),
        help: "INSECURE: accept HTTP Basic with user name = password and no account, as the notify-users tutorial does. For demos only.")
    var insecureDemoAuth = false

    func run() async throws {
        var overrides: [String: String] = [:]
        if let host { overrides["HERALD_HOST"] = host }
        if let port { overrides["HERALD_PORT"] = String(port) }
        if let tlsPort { overrides["HERALD_TLS_PORT"] = String(tlsPort) }
        if insecureDemoAuth { overrides["HERALD_INSECURE_DEMO_AUTH"] = "true" }
        let configuration = try common.load(overrides)
        let logger = makeLogger("herald", level: configuration.logLevel, format: configuration.logFormat)
        // The database, if any, stays connected until the services below have stopped.
        try await configuration.withHubStorage(logger: logger) { storage in
            try await serve(configuration, storage: storage, logger: logger)
        }
    }

    private func serve(_ configuration: HeraldConfiguration, storage: any HubStorage, logger: Logger) async throws {
        // A secure-payload key file that cannot be used stops the node before it starts anything.
        if configuration.securePayloadKeyFile != nil { _ = try HeraldRuntime.securePayloadKey(configuration) }
        // Before anything makes a span: the workers start with the runtime.
        let tracing = try TracingBackend.bootstrap(logger: logger)
        try await HeraldRuntime.checkSharedSecureKey(configuration, storage: storage)
        let runtime = try await HeraldRuntime.start(configuration, storage: storage, logger: logger)
        let server = try runtime.serverConfiguration()
        let catalog = runtime.catalog
        var devices: any UserDevices = runtime.userDevices
        var remoteAppHub: String?
        if let connectionString = configuration.appHubConnectionString {
            guard let name = configuration.appHubName else {
                throw ConfigurationError("HERALD_APP_HUB_CONNECTION_STRING needs HERALD_APP_HUB_NAME: the hub's name")
            }
            let client = try NotificationHubClient(connectionString: connectionString, hubName: name)
            devices = HubAPIUserDevices(client: client)
            remoteAppHub = name
        }

        let registrations = try await runtime.appHubEngine.registrationCount()
        var banner = [
            "Herald is listening on http://\(configuration.host):\(configuration.port)",
            configuration.databaseURL.map { "  data     \($0) (PostgreSQL, shared by every node on it); files in \(configuration.dataDirectory)" }
                ?? "  data     \(configuration.dataDirectory) (SQLite, one store per hub)",
            "  app hub  '\(runtime.appHubName)' keeps the app backend's accounts and content\(remoteAppHub == nil ? " and its \(registrations) registrations" : "")",
            configuration.securePayloadKeyFile == nil
                ? "  secure   payloads sealed with the key \(server.secureKey?.fingerprint ?? "-") (keys/secure-payload.key: back it up apart from the data)"
                : "  secure   payloads sealed with the key \(server.secureKey?.fingerprint ?? "-") (from HERALD_SECURE_PAYLOAD_KEY_FILE)",
        ]
        banner += runtime.platformLines.map { "  \($0)" }
        let hubs = (try? await catalog.list()) ?? []
        var tls: (configuration: TLSConfiguration, description: String)?
        if configuration.tlsPort != 0 {
            tls = try runtime.tlsIdentity()
            banner.append(
                "  hub API  https://\(configuration.host):\(configuration.tlsPort)/{hub} and http://\(configuration.host):\(configuration.port)/{hub}")
            banner.append("  TLS      \(tls?.description ?? "")")
        } else {
            banner.append("  hub API  http://\(configuration.host):\(configuration.port)/{hub} (TLS off: hub SDKs need HERALD_TLS_PORT)")
        }
        // One set of limits on callers for both listeners and the console.
        let limits = CallerLimits(configuration: server)
        let console = server.consoleEnabled ? try Console(hubs: runtime.registry, configuration: server, limits: limits) : nil
        if let console {
            banner += try await Self.consoleLines(console, configuration, logger: logger)
        } else {
            banner.append("  console  off (HERALD_CONSOLE=off)")
        }
        banner.append(
            hubs.isEmpty
                ? "  hubs     none yet: herald hub create NAME prints its connection strings"
                : "  hubs     \(hubs.map(\.name).joined(separator: ", ")) (herald hub keys NAME prints connection strings)"
        )
        if let name = remoteAppHub {
            banner.append("  devices  the app backend registers devices with hub '\(name)' through the hub API")
            banner.append(
                "  WARNING  if hub '\(name)''s Listen connection string ships in your apps, any device can claim username: tags and get another user's notifications, unless the hub reserves that prefix (on a Herald hub: herald hub reserve-tags \(name) username:)"
            )
            logger.warning(
                "A Listen key of the app backend's hub can claim username: tags unless the hub reserves them",
                metadata: ["herald.hub": "\(name)"]
            )
        }
        if configuration.insecureDemoAuth {
            banner.append("  WARNING  --insecure-demo-auth is on: anyone can act as any user (Basic with user name = password)")
        }
        if runtime.emulatorDirectory != nil {
            banner.append(
                "  Simulate a device: herald device --server http://\(configuration.host):\(configuration.port) --user alice --password <password> --sign-up")
        }
        // The banner says "listening" once every listener is bound, and not at all if one is not.
        let text = banner.joined(separator: "\n")
        let listeners = Listeners(count: tls == nil ? 1 : 2) {
            print(text)
            fflush(nil)  // the banner shows before the first log line, also when stdout is a file
        }
        // One limit over both listeners.
        let connections = ConnectionLimiter(limits: server.connectionLimits, logger: logger)
        let app = buildApplication(
            hubs: runtime.registry,
            devices: devices,
            appStore: runtime.appStore,
            configuration: server,
            services: runtime.services,
            connections: connections,
            limits: limits,
            console: console,
            onServerRunning: { _ in listeners.bound(.http) },
            logger: logger
        )
        // The exporter first: the group stops its services in reverse order, so it sends the
        // spans of the others after they have stopped.
        var services: [any Service] = tracing.map { [$0] } ?? []
        services.append(app)
        if let tls {
            services.append(
                try buildTLSApplication(
                    hubs: runtime.registry,
                    devices: devices,
                    appStore: runtime.appStore,
                    configuration: server,
                    tls: tls.configuration,
                    connections: connections,
                    limits: limits,
                    console: console,
                    onServerRunning: { _ in listeners.bound(.https) },
                    logger: logger
                )
            )
        }
        let group = ServiceGroup(
            configuration: .init(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        )
        do {
            try await group.run()
        } catch {
            await runtime.shutdown()
            if let error = error as? IOError, error.errnoCode == EADDRINUSE || error.errnoCode == EACCES {
                let (name, port) = listeners.isBound(.http) ? ("TLS port", configuration.tlsPort) : ("port", configuration.port)
                let reason =
                    error.errnoCode == EADDRINUSE
                    ? "the address is in use (another Herald, or another server, listens there)"
                    : "permission denied (ports below 1024 need privileges)"
                throw ConfigurationError(
                    "cannot listen on \(configuration.host):\(port): \(reason); choose another \(name) with --\(name == "port" ? "port" : "tls-port") or HERALD_\(name == "port" ? "PORT" : "TLS_PORT")"
                )
            }
            throw error
        }
        await runtime.shutdown()
    }
}

/// The server's listeners, which report once they are bound; `whenAllBound` runs once, when
/// the last of them has.
private final class Listeners: Sendable {
    enum Listener: Sendable { case http, https }

    private let count: Int
    private let bound = Mutex<Set<Listener>>([])
    private let whenAllBound: @Sendable () -> Void

    init(count: Int, whenAllBound: @escaping @Sendable () -> Void) {
        self.count = count
        self.whenAllBound = whenAllBound
    }

    func bound(_ listener: Listener) {
        let all = bound.withLock { bound in
            bound.insert(listener).inserted && bound.count == count
        }
        if all { whenAllBound() }
    }

    func isBound(_ listener: Listener) -> Bool {
        bound.withLock { $0.contains(listener) }
    }
}

/// Whether the logging system was set up (it can be, once per process).
private let loggingBootstrapped = Mutex(false)

/// A logger; the first call sets up the process's logging: human-readable lines on standard
/// error, or with `format` `json` one JSON object per line.
func makeLogger(_ label: String, level: Logger.Level, format: String = "text") -> Logger {
    loggingBootstrapped.withLock { done in
        guard !done else { return }
        done = true
        let lines: LineLogHandler.Format = format == "json" ? .json : .text
        LoggingSystem.bootstrap { label in LineLogHandler(label: label, format: lines) }
    }
    var logger = Logger(label: label)
    logger.logLevel = level
    return logger
}

extension Serve {
    /// The banner's lines about the console. On first start (no operator anywhere in this
    /// storage) the operator `admin` is created with a one-time password, so that the console
    /// can be opened without another command: on a terminal the banner shows the password;
    /// otherwise (a service's log) it goes to `<data-dir>/console-admin-password`, private to
    /// the service's user, and the banner names the file. The password works once, until its
    /// owner chooses their own.
    static func consoleLines(_ console: Console, _ configuration: HeraldConfiguration, logger: Logger) async throws -> [String] {
        guard
            ServerConfiguration.servesConsoleOverPlainHTTP(host: configuration.host, publicURL: configuration.publicURL)
                || configuration.tlsPort != 0
        else {
            return [
                "  console  not served: plain HTTP on \(configuration.host) only (turn TLS on with HERALD_TLS_PORT, or set HERALD_PUBLIC_URL=https://… behind a TLS proxy)"
            ]
        }
        let url = AdminCommand.consoleURL(configuration)
        guard try await console.operators.list().isEmpty else {
            return ["  console  \(url) (operators: herald admin create NAME)"]
        }
        let password: String
        do {
            password = try await console.operators.create(name: "admin").password
        } catch let error as HeraldError where error.code == .conflict {
            // Another node made it at the same moment.
            return ["  console  \(url) (operators: herald admin create NAME)"]
        }
        logger.notice("Created the console's first operator, admin, with a one-time password")
        if isatty(STDOUT_FILENO) == 1 {
            return [
                "  console  \(url): sign in as admin with the one-time password \(password)",
                "           (shown only now; you then choose your own; more operators: herald admin create NAME)",
            ]
        }
        let path = "\(configuration.dataDirectory)/console-admin-password"
        try SecureFile.write(password + "\n", to: path, mode: 0o600)
        return ["  console  \(url): sign in as admin with the one-time password in \(path)"]
    }
}
