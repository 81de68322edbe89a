import ArgumentParser
import Foundation
import HeraldCore
import HeraldHub
import HeraldHubWire
import HeraldPostgres
import HeraldStore

/// `herald hub …`: the hubs of a data directory, their keys and their push credentials.
struct HubCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hub",
        abstract: "Create, list and delete hubs; show and rotate their keys; set their push credentials; export and import registrations.",
        discussion: """
            A data directory holds any number of hubs, each in <data-dir>/hubs/<name>/ with its own keys, push credentials and store; with --database-url (HERALD_DATABASE_URL) the hubs are kept in that PostgreSQL database instead, shared by every node on it. Clients of the cloud hub's SDKs reach a hub with one of its connection strings (`herald hub keys NAME`). Changes take effect at once in every running `herald serve` on the same data directory or database.

            Example:  herald hub create myhub && herald hub keys myhub
            """,
        subcommands: [
            Create.self, List.self, Delete.self, Keys.self, Rotate.self,
            SetCredentials.self, Credentials.self, AddRule.self, RemoveRule.self, ReserveTags.self, IdempotencyRetention.self, Webhooks.self,
            Export.self, Import.self, Channels.self,
        ]
    )
}

/// Options of the `hub` subcommands that print connection strings.
struct HubEndpointOptions: ParsableArguments {
    @Option(
        name: .customLong("hub-endpoint"),
        help: "Endpoint in the connection strings, e.g. sb://push.example.com/ (HERALD_HUB_ENDPOINT; default sb://localhost:<HERALD_TLS_PORT>/)."
    )
    var hubEndpoint: String?

    var overrides: [String: String] {
        hubEndpoint.map { ["HERALD_HUB_ENDPOINT": $0] } ?? [:]
    }
}

/// A `herald hub` failure: printed as `Error: <message>`, exit status 1.
struct HubCommandError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
    init(_ error: HeraldError) { self.description = error.message }
}

extension HubCommand {
    /// Runs `body` with the catalog of the configured hubs (the data directory, or the
    /// database of HERALD_DATABASE_URL), turning catalog and database errors into plain CLI
    /// errors.
    static func withCatalog<T>(_ configuration: HeraldConfiguration, _ body: (HubCatalog) async throws -> T) async throws -> T {
        try await withStorage(configuration) { storage in try await body(HubCatalog(storage: storage)) }
    }

    /// Runs `body` with the hubs' storage (see ``withCatalog(_:_:)``), its errors as clear
    /// command-line errors.
    static func withStorage<T>(_ configuration: HeraldConfiguration, _ body: (any HubStorage) async throws -> T) async throws -> T {
        let logger = makeLogger("herald", level: configuration.logLevel, format: configuration.logFormat)
        do {
            return try await configuration.withHubStorage(logger: logger, body)
        } catch let error as HeraldError {
            throw HubCommandError(error)
        } catch let error as StoreError {
            throw HubCommandError(error.message)
        }
    }

    /// The hub `name`, or an error saying there is none and how to see the hubs.
    static func existingHub(_ name: String, in catalog: HubCatalog) async throws -> HubDefinition {
        guard let hub = try await catalog.hub(named: name) else {
            throw HubCommandError("there is no hub named '\(name)' in \(catalog.storage.location); `herald hub list` shows the hubs")
        }
        return hub
    }

    /// The endpoint of connection strings, or an error explaining how to set one.
    static func endpoint(_ configuration: HeraldConfiguration) throws -> String {
        guard let endpoint = configuration.hubConnectionEndpoint else {
            throw HubCommandError(
                "TLS is off (HERALD_TLS_PORT=0) and the hub SDKs connect over HTTPS only: set HERALD_HUB_ENDPOINT (or --hub-endpoint) to the address of the proxy that terminates TLS, e.g. sb://push.example.com/"
            )
        }
        return endpoint
    }

    /// The connection strings of `rules` of `hub`, each under a comment line naming the rule,
    /// its rights and the key, so the strings themselves stand alone on their lines.
    static func connectionStringLines(
        _ hub: HubDefinition,
        rules: [SharedAccessRule]? = nil,
        keys: [SharedAccessRule.KeySlot],
        endpoint: String
    ) -> [String] {
        var lines: [String] = []
        for rule in rules ?? hub.rules {
            let rights = rule.sortedRights.map(\.rawValue).joined(separator: ", ")
            for key in keys {
                lines.append("# \(rule.name) (\(rights)), \(key.rawValue) key")
                lines.append(ConnectionString(endpoint: endpoint, keyName: rule.name, key: rule.key(key)).description)
            }
        }
        return lines
    }
}
