import ArgumentParser
import Foundation
import HeraldCore
import HeraldHub
import HeraldServer

/// `herald admin …`: the console's operators.
struct AdminCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "admin",
        abstract: "Create, list and delete the operators who sign in to the console (/console).",
        discussion: """
            Operators run the server's hubs from the console. They are kept with the hubs (the data directory, or the database of --database-url), so every node knows them; they are not app users, and an app account signs in to nothing here. `create` and `reset-password` print a one-time password: the console asks for a new one at the first sign-in.

            Example:  herald admin create alice
            """,
        subcommands: [Create.self, List.self, ResetPassword.self, Delete.self]
    )

    /// Runs `body` with the operators of the configured storage, errors as plain CLI errors.
    static func withOperators<T>(_ configuration: HeraldConfiguration, _ body: (ConsoleOperators) async throws -> T) async throws -> T {
        try await HubCommand.withCatalog(configuration) { catalog in
            try await body(ConsoleOperators(storage: catalog.storage, bcryptCost: UInt8(configuration.bcryptCost)))
        }
    }

    /// Where operators open the console: the public URL behind a TLS proxy; the plain-HTTP
    /// listener on a loopback address; the TLS listener otherwise (the plain one refuses it,
    /// ``ServerConfiguration/servesConsoleOverPlainHTTP``).
    static func consoleURL(_ configuration: HeraldConfiguration) -> String {
        if let publicURL = configuration.publicURL, publicURL.lowercased().hasPrefix("https://") {
            return (publicURL.hasSuffix("/") ? String(publicURL.dropLast()) : publicURL) + "/console"
        }
        if ServerConfiguration.servesConsoleOverPlainHTTP(host: configuration.host, publicURL: configuration.publicURL)
            || configuration.tlsPort == 0
        {
            return "http://\(configuration.host):\(configuration.port)/console"
        }
        return "https://\(configuration.host):\(configuration.tlsPort)/console"
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create an operator and print their one-time password.")
        @OptionGroup var common: CommonOptions
        @Argument(help: "The operator's name: letters, digits and . _ - @ (1 to 64).") var name: String

        func run() async throws {
            let configuration = try common.load()
            let (created, password) = try await AdminCommand.withOperators(configuration) { try await $0.create(name: name) }
            print(
                """
                Created the operator \(created.name).
                One-time password: \(password)
                It is shown only now. Sign in at \(AdminCommand.consoleURL(configuration)) and choose your own password.
                """)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the operators.")
        @OptionGroup var common: CommonOptions

        func run() async throws {
            let configuration = try common.load()
            let operators = try await AdminCommand.withOperators(configuration) { try await $0.list() }
            guard !operators.isEmpty else {
                print("No operators yet. Create one: herald admin create NAME")
                return
            }
            let width = max(4, operators.map(\.name.count).max() ?? 0)
            print("NAME".padding(toLength: width, withPad: " ", startingAt: 0) + "  CREATED               PASSWORD")
            for found in operators {
                print(
                    found.name.padding(toLength: width, withPad: " ", startingAt: 0) + "  "
                        + found.createdAt.formatted(.iso8601).padding(toLength: 22, withPad: " ", startingAt: 0)
                        + (found.mustChangePassword ? "one-time (not signed in yet)" : "chosen")
                )
            }
        }
    }

    struct ResetPassword: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reset-password", abstract: "Give an operator a new one-time password and end their sessions."
        )
        @OptionGroup var common: CommonOptions
        @Argument(help: "The operator's name.") var name: String

        func run() async throws {
            let configuration = try common.load()
            let password = try await AdminCommand.withOperators(configuration) { try await $0.resetPassword(name: name) }
            print(
                """
                New one-time password for \(name): \(password)
                It is shown only now; their sessions have ended.
                """)
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete an operator and end their sessions.")
        @OptionGroup var common: CommonOptions
        @Argument(help: "The operator's name.") var name: String

        func run() async throws {
            let configuration = try common.load()
            try await AdminCommand.withOperators(configuration) { try await $0.delete(name: name) }
            print("Deleted the operator \(name).")
        }
    }
}
