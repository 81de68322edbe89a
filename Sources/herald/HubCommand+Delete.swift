import ArgumentParser
import HeraldHub

extension HubCommand {
    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete a hub: its keys, credentials, registrations, installations and notifications.",
            discussion: "There is no undo; --yes confirms."
        )

        @OptionGroup var common: CommonOptions

        @Argument(help: "The hub to delete.")
        var name: String

        @Flag(help: "Confirm: delete the hub and everything in it for good.")
        var yes = false

        func run() async throws {
            let configuration = try common.load()
            try await HubCommand.withCatalog(configuration) { catalog in
                let hub = try await HubCommand.existingHub(name, in: catalog)
                guard yes else {
                    throw HubCommandError(
                        "deleting hub \(hub.name) removes its keys, credentials, registrations, installations and notifications for good; run `herald hub delete \(hub.name) --yes` to confirm"
                    )
                }
                try await catalog.delete(name: hub.name)
                print("Deleted hub \(hub.name). Clients using its connection strings now get 401.")
            }
        }
    }
}
