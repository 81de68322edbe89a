import ArgumentParser
import Foundation
import HeraldCore
import HeraldHub
import HeraldHubWire

/// `herald hub …`: the hubs of a data directory, their keys and their push credentials.
struct HubCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hub",
        abstract: "Create, list and delete hubs; show and rotate their keys; set their push credentials.",
        discussion: """
            A data directory holds any number of hubs, each in <data-dir>/hubs/<name>/ with its own keys, push credentials and store. Clients of the cloud hub's SDKs reach a hub with one of its connection strings (`herald hub keys NAME`). Changes take effect at once in a running `herald serve` on the same data directory.

            Example:  herald hub create myhub && herald hub keys myhub
            """,
        subcommands: [
            Create.self, List.self, Delete.self, Keys.self, Rotate.self,
            SetCredentials.self, Credentials.self, AddRule.self, RemoveRule.self,
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
    /// The catalog of the configured data directory.
    static func catalog(_ configuration: HeraldConfiguration) -> HubCatalog {
        HubCatalog(dataDirectory: configuration.dataDirectory)
    }

    /// Runs a catalog operation, turning its ``HeraldError`` into a plain CLI error.
    @discardableResult
    static func perform<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as HeraldError {
            throw HubCommandError(error)
        }
    }

    /// The hub `name`, or an error saying there is none and how to see the hubs.
    static func existingHub(_ name: String, in catalog: HubCatalog) throws -> HubDefinition {
        guard let hub = try perform({ try catalog.hub(named: name) }) else {
            throw HubCommandError("there is no hub named '\(name)' in \(catalog.directory); `herald hub list` shows the hubs")
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
