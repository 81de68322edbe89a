import ArgumentParser
import HeraldHub

extension HubCommand {
    struct ReserveTags: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reserve-tags",
            abstract: "Reserve tag prefixes to keys with Send or Manage: a Listen key cannot claim them.",
            discussion: """
                A hub's Listen connection string ships inside apps, and with it anyone can register a device with any \
                tag, as on the cloud hub. If your backend sends to users by tags such as username:alice, reserve the \
                prefix: a registration or installation written with a Listen-only key that carries such a tag is then \
                refused (403), and only your backend, with a Send or Manage key, can set it.
                Examples:  herald hub reserve-tags myhub username:      herald hub reserve-tags myhub --none
                """
        )

        @OptionGroup var common: CommonOptions

        @Argument(help: "The hub.")
        var name: String

        @Argument(help: "The tag prefixes to reserve (they replace those reserved before).")
        var prefixes: [String] = []

        @Flag(help: "Reserve no prefix any more.")
        var none = false

        func validate() throws {
            guard none != !prefixes.isEmpty else {
                throw ValidationError("give the prefixes to reserve, such as username:, or --none to reserve none")
            }
        }

        func run() async throws {
            let configuration = try common.load()
            try await HubCommand.withCatalog(configuration) { catalog in
                let hub = try await HubCommand.existingHub(name, in: catalog)
                let updated = try await catalog.setReservedTagPrefixes(name: hub.name, none ? [] : prefixes)
                if updated.reservedTagPrefixes.isEmpty {
                    print("Hub \(updated.name) reserves no tag prefix: a Listen key may claim any tag.")
                } else {
                    print(
                        "Hub \(updated.name) reserves the tag prefixes \(updated.reservedTagPrefixes.joined(separator: ", ")) to keys with Send or Manage."
                    )
                }
            }
        }
    }
}
