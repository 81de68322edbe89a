import ArgumentParser
import HeraldHub

extension HubCommand {
    struct IdempotencyRetention: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "idempotency-retention",
            abstract: "Set how long the Idempotency-Key of a send to the hub is kept (24 hours unless set).",
            discussion: """
                A send repeated under its Idempotency-Key within this time is answered with the first notification \
                and sends nothing; after it, the key is forgotten and a send under it is a new notification. \
                1 second to 30 days (2592000 seconds).
                Examples:  herald hub idempotency-retention myhub 604800      herald hub idempotency-retention myhub --default
                """
        )

        @OptionGroup var common: CommonOptions

        @Argument(help: "The hub.")
        var name: String

        @Argument(help: "Seconds to keep keys: 1 to 2592000.")
        var seconds: Int64?

        @Flag(name: .customLong("default"), help: "Keep keys for the default 24 hours.")
        var useDefault = false

        func validate() throws {
            guard useDefault != (seconds != nil) else {
                throw ValidationError("give the seconds to keep keys, or --default for 24 hours")
            }
        }

        func run() async throws {
            let configuration = try common.load()
            try await HubCommand.withCatalog(configuration) { catalog in
                let hub = try await HubCommand.existingHub(name, in: catalog)
                let updated = try await catalog.setIdempotencyRetention(name: hub.name, seconds.map { .seconds($0) })
                let kept = updated.idempotencyRetention.map { "\($0.components.seconds) seconds" } ?? "24 hours (the default)"
                print("Hub \(updated.name) keeps the Idempotency-Key of a send for \(kept).")
            }
        }
    }
}
