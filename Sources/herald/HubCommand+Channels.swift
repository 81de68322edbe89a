import ArgumentParser
import Foundation
import HeraldCore
import HeraldHub
import HeraldPush
import HeraldStore

extension HubCommand {
    /// `herald hub channels create|list|show|delete`: a hub's APNs broadcast channels.
    struct Channels: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "channels",
            abstract: "Create, list, show and delete a hub's APNs broadcast channels.",
            discussion: """
                Channels live at APNs: each request goes to the broadcast management endpoint \
                (HERALD_APNS_BROADCAST_ENDPOINT, default the environment's api-manage-broadcast host) with the hub's APNs \
                credentials (the server's, HERALD_APNS_*, for a hub without its own). A broadcast is a send to the hub with \
                the apns-channel-id header.
                Examples:  herald hub channels create games --storage-policy 1      herald hub channels list games
                """,
            subcommands: [Create.self, List.self, Show.self, Delete.self]
        )

        /// Runs `body` with the APNs provider of hub `name`, shut down afterwards. It signs with
        /// the provider token the nodes keep in the hubs' storage, as `herald serve` does: APNs
        /// refuses a key's new token within 20 minutes of the last (TooManyProviderTokenUpdates).
        static func withProvider<T>(
            _ common: CommonOptions, hub name: String, _ body: (APNsProvider) async throws(HeraldError) -> T
        ) async throws -> T {
            let configuration = try common.load()
            let logger = makeLogger("herald", level: configuration.logLevel, format: configuration.logFormat)
            let result: Result<T, HeraldError> = try await HubCommand.withStorage(configuration) { storage in
                let catalog = HubCatalog(storage: storage)
                let credentials = try await HubCommand.existingHub(name, in: catalog).credentials.apns
                guard let apns = try credentials ?? configuration.serverCredentials(vapidKeyPEM: "").apns else {
                    throw HubCommandError("hub \(name) has no APNs credentials, and the server none (HERALD_APNS_*): broadcast channels are APNs'")
                }
                let tokens = APNsTokenCache(storage: HubStorageProviderTokens(storage: storage), logger: logger)
                let factory = PushProviderFactory(settings: try configuration.pushServiceSettings(), logger: logger, apnsTokens: tokens)
                let provider = try factory.apnsProvider(apns)
                let result: Result<T, HeraldError>
                do throws(HeraldError) {
                    result = .success(try await body(provider))
                } catch {
                    result = .failure(error)
                }
                try? await provider.shutdown()
                return result
            }
            do {
                return try result.get()
            } catch {
                throw HubCommandError(error)
            }
        }

        /// What every channel command names: the storage and the hub.
        struct HubOptions: ParsableArguments {
            @OptionGroup var common: CommonOptions

            @Argument(help: "The hub.")
            var name: String

            /// ``Channels/withProvider(_:hub:_:)`` for this hub.
            func withProvider<T>(_ body: (APNsProvider) async throws(HeraldError) -> T) async throws -> T {
                try await Channels.withProvider(common, hub: name, body)
            }
        }

        /// What a command about one channel names: the storage, the hub and the channel.
        struct ChannelOptions: ParsableArguments {
            @OptionGroup var hub: HubOptions

            @Argument(help: "The channel id, as create printed it.")
            var id: String
        }

        struct Create: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Create a broadcast channel; prints its id.")

            @OptionGroup var hub: HubOptions

            @Option(help: "0: APNs stores no message for an offline device; 1: it stores the most recent one.")
            var storagePolicy = 0

            func validate() throws {
                guard storagePolicy == 0 || storagePolicy == 1 else {
                    throw ValidationError("--storage-policy is 0 (no storage) or 1 (the most recent message)")
                }
            }

            func run() async throws {
                let id = try await hub.withProvider { provider throws(HeraldError) in
                    try await provider.createChannel(messageStoragePolicy: storagePolicy)
                }
                print(id)
            }
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "List the ids of the hub's broadcast channels, one a line.")

            @OptionGroup var hub: HubOptions

            func run() async throws {
                let ids = try await hub.withProvider { provider throws(HeraldError) in
                    try await provider.channelIDs()
                }
                for id in ids { print(id) }
            }
        }

        struct Show: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Show a broadcast channel's message storage policy and the hub's last broadcasts to it, with APNs' answers.")

            @OptionGroup var channel: ChannelOptions

            @Option(help: "How many of the last broadcasts to show.")
            var sends = 10

            func validate() throws {
                guard (0...100).contains(sends) else { throw ValidationError("--sends is 0 to 100") }
            }

            func run() async throws {
                let policy = try await channel.hub.withProvider { provider throws(HeraldError) in
                    try await provider.channelStoragePolicy(id: channel.id)
                }
                print("channel \(channel.id): message storage policy \(policy) (\(policy == 1 ? "the most recent message is stored" : "no storage"))")
                guard sends > 0 else { return }
                let configuration = try channel.hub.common.load()
                let logger = makeLogger("herald", level: configuration.logLevel, format: configuration.logFormat)
                let recent = try await HubCommand.withStorage(configuration) { storage in
                    let store = try await storage.openStore(forHub: channel.hub.name, logger: logger)
                    do {
                        let recent = try await store.broadcasts(toChannel: channel.id, before: nil, limit: sends)
                        try await store.close()
                        return recent
                    } catch {
                        try? await store.close()
                        throw error
                    }
                }
                guard !recent.isEmpty else {
                    print("no broadcast from hub \(channel.hub.name) to it yet")
                    return
                }
                print("the last \(recent.count) broadcast\(recent.count == 1 ? "" : "s") to it, newest first:")
                for record in recent {
                    let outcome = record.broadcastOutcome?.rawValue ?? record.state.rawValue
                    print("  \(record.enqueuedAt.formatted(.iso8601))  \(record.id)  \(outcome)")
                }
            }
        }

        struct Delete: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Delete a broadcast channel.")

            @OptionGroup var channel: ChannelOptions

            func run() async throws {
                try await channel.hub.withProvider { provider throws(HeraldError) in
                    try await provider.deleteChannel(id: channel.id)
                }
                print("deleted channel \(channel.id)")
            }
        }
    }
}
