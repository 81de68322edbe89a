import ArgumentParser
import HeraldHub
import HeraldStore

extension HubCommand {
    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a hub with the two default access rules and new keys.",
            discussion: """
                The new hub has DefaultListenSharedAccessSignature (Listen: for devices and apps) and DefaultFullSharedAccessSignature (Listen, Send, Manage: for your backend), each with a primary and a secondary key, and no push credentials yet (`herald hub set-credentials`).
                """
        )

        @OptionGroup var common: CommonOptions
        @OptionGroup var endpointOptions: HubEndpointOptions

        @Argument(help: "The hub's name: 1 to 50 letters, digits, '.', '-' or '_', starting and ending with a letter or digit.")
        var name: String

        func run() async throws {
            let configuration = try common.load(endpointOptions.overrides)
            try await HubCommand.withCatalog(configuration) { catalog in
                let hub = try await catalog.create(name: name)
                var lines = ["Created hub \(hub.name) in \(catalog.storage.location)."]
                if let endpoint = configuration.hubConnectionEndpoint {
                    lines.append("Connection strings (the Listen one for devices, the full one for your backend only):")
                    lines += HubCommand.connectionStringLines(hub, keys: [.primary], endpoint: endpoint)
                    lines.append("Secondary keys: herald hub keys \(hub.name). Push credentials: herald hub set-credentials \(hub.name) --help")
                } else {
                    lines.append("Set HERALD_HUB_ENDPOINT to print its connection strings (TLS is off): herald hub keys \(hub.name) --hub-endpoint sb://HOST/")
                }
                print(lines.joined(separator: "\n"))
            }
        }
    }
}
