import ArgumentParser
import Foundation
import HeraldHub

extension HubCommand {
    struct Keys: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the connection strings of every access rule of a hub.",
            discussion: """
                Each connection string is on a line of its own, below a '#' line naming its rule, rights and key. They contain the keys: treat them as passwords.
                """
        )

        @OptionGroup var common: CommonOptions
        @OptionGroup var endpointOptions: HubEndpointOptions

        @Argument(help: "The hub.")
        var name: String

        @Option(help: "Only this rule.")
        var rule: String?

        func run() async throws {
            let configuration = try common.load(endpointOptions.overrides)
            try await HubCommand.withCatalog(configuration) { catalog in
                let hub = try await HubCommand.existingHub(name, in: catalog)
                let endpoint = try HubCommand.endpoint(configuration)
                var rules = hub.rules
                if let rule {
                    guard let match = hub.rule(named: rule) else {
                        throw HubCommandError("hub \(hub.name) has no rule named '\(rule)' (its rules: \(hub.rules.map(\.name).joined(separator: ", ")))")
                    }
                    rules = [match]
                }
                let lines = HubCommand.connectionStringLines(hub, rules: rules, keys: SharedAccessRule.KeySlot.allCases, endpoint: endpoint)
                print((["# hub \(hub.name), endpoint \(endpoint)"] + lines).joined(separator: "\n"))
            }
        }
    }

    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Replace a key of a hub's access rules with a new random key.",
            discussion: """
                The replaced key stops working at once, also in a running `herald serve`; the other key of each rule keeps working. To rotate without downtime, move clients to the secondary key, rotate the primary, move them back, then rotate the secondary.

                Example:  herald hub rotate myhub --rule DefaultFullSharedAccessSignature --key secondary
                """
        )

        @OptionGroup var common: CommonOptions
        @OptionGroup var endpointOptions: HubEndpointOptions

        @Argument(help: "The hub.")
        var name: String

        @Option(help: "The rule whose key to replace (default: every rule of the hub).")
        var rule: String?

        @Option(help: "primary or secondary (default primary).")
        var key: String = "primary"

        func validate() throws {
            guard SharedAccessRule.KeySlot(rawValue: key.lowercased()) != nil else {
                throw ValidationError("--key must be primary or secondary, not '\(key)'")
            }
        }

        func run() async throws {
            let configuration = try common.load(endpointOptions.overrides)
            try await HubCommand.withCatalog(configuration) { catalog in
                let hub = try await HubCommand.existingHub(name, in: catalog)
                let key = SharedAccessRule.KeySlot(rawValue: self.key.lowercased()) ?? .primary
                let ruleNames = rule.map { [$0] } ?? hub.rules.map(\.name)
                var rotated = hub
                for ruleName in ruleNames {
                    rotated = try await catalog.rotate(name: hub.name, rule: ruleName, key: key)
                }
                let rules = rotated.rules.filter { rule in ruleNames.contains { $0.caseInsensitiveCompare(rule.name) == .orderedSame } }
                let replaced = rules.count == 1 ? "key of \(rules[0].name)" : "keys of \(rules.map(\.name).joined(separator: ", "))"
                let old = rules.count == 1 ? "the old key no longer works" : "the old keys no longer work"
                var lines = ["Replaced the \(key.rawValue) \(replaced) of hub \(hub.name); \(old)."]
                if let endpoint = configuration.hubConnectionEndpoint {
                    lines.append("New connection strings:")
                    lines += HubCommand.connectionStringLines(rotated, rules: rules, keys: [key], endpoint: endpoint)
                }
                print(lines.joined(separator: "\n"))
            }
        }
    }
}
