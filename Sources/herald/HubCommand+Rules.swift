import ArgumentParser
import Foundation
import HeraldCore
import HeraldHub

extension HubCommand {
    struct AddRule: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add-rule",
            abstract: "Add an access rule with new keys to a hub.",
            discussion: "Example:  herald hub add-rule myhub SendOnly --rights send"
        )

        @OptionGroup var common: CommonOptions
        @OptionGroup var endpointOptions: HubEndpointOptions

        @Argument(help: "The hub.")
        var name: String

        @Argument(help: "The rule's name: letters, digits, '.', '-' or '_'.")
        var rule: String

        @Option(help: "Comma-separated rights: listen, send, manage (manage needs the other two).")
        var rights: String

        func parsedRights() throws -> Set<AccessRight> {
            var parsed: Set<AccessRight> = []
            for text in rights.split(separator: ",").map({ $0.trimmingSpaces() }) where !text.isEmpty {
                guard let right = AccessRight(parsing: text) else {
                    throw ValidationError("unknown right '\(text)'; use listen, send or manage, separated by commas")
                }
                parsed.insert(right)
            }
            return parsed
        }

        func validate() throws {
            _ = try parsedRights()
        }

        func run() async throws {
            let configuration = try common.load(endpointOptions.overrides)
            let parsed = try parsedRights()
            try await HubCommand.withCatalog(configuration) { catalog in
                let hub = try await HubCommand.existingHub(name, in: catalog)
                let updated = try await catalog.addRule(name: hub.name, rule: rule, rights: parsed)
                var lines = ["Added rule \(rule) to hub \(hub.name)."]
                if let endpoint = configuration.hubConnectionEndpoint, let added = updated.rule(named: rule) {
                    lines += HubCommand.connectionStringLines(updated, rules: [added], keys: [.primary], endpoint: endpoint)
                }
                print(lines.joined(separator: "\n"))
            }
        }
    }

    struct RemoveRule: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "remove-rule",
            abstract: "Remove an access rule from a hub: tokens signed with its keys stop working at once."
        )

        @OptionGroup var common: CommonOptions

        @Argument(help: "The hub.")
        var name: String

        @Argument(help: "The rule to remove.")
        var rule: String

        func run() async throws {
            let configuration = try common.load()
            try await HubCommand.withCatalog(configuration) { catalog in
                let hub = try await HubCommand.existingHub(name, in: catalog)
                try await catalog.removeRule(name: hub.name, rule: rule)
                print("Removed rule \(hub.rule(named: rule)?.name ?? rule) from hub \(hub.name); its keys no longer work.")
            }
        }
    }
}
