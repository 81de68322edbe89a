import ArgumentParser

@main
struct Herald: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald",
        abstract: "A self-hosted push notification hub.",
        discussion: """
            Start with `herald serve` (or `herald demo` to watch the whole flow once). With no push \
            credentials configured, Herald starts its built-in emulators of APNs, FCM, WNS and a Web Push service, and says so.
            """,
        version: Herald.version,
        subcommands: [
            Serve.self, Emulate.self, Demo.self, Device.self, Send.self, HubCommand.self, AdminCommand.self, StoreCommand.self, ConfigCommand.self, Bench.self,
            Completion.self,
        ]
    )

    /// What `herald --version` prints.
    static let version = "0.1.0"
}

/// Options every command that opens a data directory shares.
struct CommonOptions: ParsableArguments {
    @Option(name: .customLong("data-dir"), help: "Data directory (HERALD_DATA_DIR; default ./herald-data).")
    var dataDirectory: String?

    @Option(
        name: .customLong("database-url"),
        help: "postgres://user:password@host/database: keep the hubs in PostgreSQL, for several nodes (HERALD_DATABASE_URL; default: the data directory)."
    )
    var databaseURL: String?

    @Option(name: .customLong("config"), help: "JSON config file (HERALD_CONFIG).")
    var configFile: String?

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error (HERALD_LOG_LEVEL).")
    var logLevel: String?

    func load(_ more: [String: String] = [:]) throws -> HeraldConfiguration {
        var overrides = more
        if let dataDirectory { overrides["HERALD_DATA_DIR"] = dataDirectory }
        if let databaseURL { overrides["HERALD_DATABASE_URL"] = databaseURL }
        if let logLevel { overrides["HERALD_LOG_LEVEL"] = logLevel }
        do {
            return try HeraldConfiguration.load(configFile: configFile, overrides: overrides)
        } catch let error as ConfigurationError {
            throw ValidationError(error.description)
        }
    }
}
