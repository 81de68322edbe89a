import ArgumentParser
import Foundation
import HeraldCore
import HeraldHub
import HeraldStore

extension HubCommand {
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the hubs of the data directory (or of the database of --database-url).")

        @OptionGroup var common: CommonOptions

        func run() async throws {
            let configuration = try common.load()
            try await HubCommand.withCatalog(configuration) { catalog in
                let hubs = try await catalog.list()
                guard !hubs.isEmpty else {
                    print("No hubs in \(catalog.storage.location). Create one: herald hub create NAME")
                    return
                }
                let width = max(4, hubs.map(\.name.count).max() ?? 0)
                var lines = ["NAME".padding(toLength: width, withPad: " ", startingAt: 0) + "  CREATED               RULES  CREDENTIALS"]
                for hub in hubs {
                    let platforms = Platform.allCases.filter(hub.credentials.isConfigured).map(\.rawValue)
                    lines.append(
                        hub.name.padding(toLength: width, withPad: " ", startingAt: 0) + "  "
                            + hub.createdAt.formatted(.iso8601).padding(toLength: 22, withPad: " ", startingAt: 0)
                            + String(hub.rules.count).padding(toLength: 7, withPad: " ", startingAt: 0)
                            + (platforms.isEmpty ? "none" : platforms.joined(separator: ", "))
                    )
                }
                print(lines.joined(separator: "\n"))
            }
        }
    }
}
