import ArgumentParser
import Foundation
import HeraldCore
import HeraldHub
import HeraldHubWire
import HeraldStore
import HeraldTLS
import Logging

extension HubCommand {
    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "export",
            abstract: "Write a hub's registrations to a file, one registration description a line.",
            discussion: """
                The file is in the cloud hub's export format (the same as the hub API's ExportRegistrations job writes), \
                which `herald hub import` and the cloud hub's import read back. Registrations that installations \
                expand into are not written: they are kept through their installation.
                Examples:  herald hub export myhub registrations.txt      herald hub export myhub > registrations.txt
                """
        )

        @OptionGroup var common: CommonOptions

        @Argument(help: "The hub.")
        var name: String

        @Argument(help: "The file to write, created new with mode 0600 (default: standard output).")
        var file: String?

        func run() async throws {
            let configuration = try common.load()
            let path = file
            try await HubCommand.withHub(name, configuration) { engine, definition in
                let output: FileHandle
                if let path {
                    // Every device handle of the hub: readable by this user only, and never
                    // written through a link someone left at that path.
                    do {
                        output = try SecureFile.createNew(path)
                    } catch let error as HeraldTLSError {
                        throw HubCommandError(error.message)
                    }
                } else {
                    output = FileHandle.standardOutput
                }
                defer { if path != nil { try? output.close() } }
                let total = try await engine.registrationCount()
                let progress = ProgressReporter(title: "registrations exported", total: total)
                var cursor: String?
                var written = 0
                while true {
                    let page = try await engine.exportPage(after: cursor, limit: 1000)
                    var text = ""
                    for registration in page { text += RegistrationDescription.line(registration) + "\n" }
                    try output.write(contentsOf: Data(text.utf8))
                    written += page.count
                    progress.update(done: written)
                    guard page.count == 1000, let last = page.last else { break }
                    cursor = last.id
                }
                progress.finish()
                HubCommand.printErr(
                    "Exported \(written.formatted()) registrations of hub \(definition.name)\(path.map { " to \($0)" } ?? "")."
                )
            }
        }
    }

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import",
            abstract: "Create, update, upsert or delete a hub's registrations from a file, one registration description a line.",
            discussion: """
                The file is in the cloud hub's import format: each line a registration description in XML (such as \
                <AppleRegistrationDescription …><Tags>a,b</Tags><DeviceToken>…</DeviceToken></AppleRegistrationDescription>), \
                as `herald hub export` and the cloud hub's export write it. A line that cannot be applied is reported \
                with its number and changes nothing; the others are applied. Running the same import again changes \
                nothing more. The exit status is 1 when a line failed.

                Modes: create (new registrations; one the hub has as it is is left alone), update (RegistrationId \
                required, must exist), upsert (create or replace by RegistrationId), delete (by RegistrationId).
                Example:  herald hub import myhub registrations.txt --mode upsert
                """
        )

        @OptionGroup var common: CommonOptions

        @Argument(help: "The hub.")
        var name: String

        @Argument(help: "The file to read.")
        var file: String

        @Option(help: "create, update, upsert or delete.")
        var mode: String = "upsert"

        func run() async throws {
            guard let mode = RegistrationImportMode(rawValue: mode.lowercased()) else {
                throw ValidationError("--mode is create, update, upsert or delete; '\(mode)' is none of them")
            }
            guard let data = FileManager.default.contents(atPath: file) else {
                throw HubCommandError("cannot read \(file)")
            }
            let configuration = try common.load()
            let file = self.file
            let failed = try await HubCommand.withHub(name, configuration) { engine, definition in
                let lines = HubEngine.importLines(data)
                let progress = ProgressReporter(title: "lines imported", total: lines.count)
                var actions: [String: Int] = [:]
                var failed = 0
                for (index, line) in lines.enumerated() {
                    if let outcome = try await engine.importRegistration(line: line, number: index + 1, mode: mode) {
                        if outcome.succeeded {
                            actions[outcome.action ?? "done", default: 0] += 1
                        } else {
                            failed += 1
                            progress.note("\(file): \(outcome.report)")
                        }
                    }
                    progress.update(done: index + 1)
                }
                progress.finish()
                let succeeded = actions.values.reduce(0, +)
                await engine.importFinished(changed: succeeded - actions["unchanged", default: 0])
                let details = actions.sorted { $0.key < $1.key }.map { "\($0.value.formatted()) \($0.key)" }.joined(separator: ", ")
                HubCommand.printErr(
                    "Imported \(file) into hub \(definition.name) (\(mode.rawValue)): \(succeeded.formatted()) succeeded"
                        + (details.isEmpty ? "" : " (\(details))") + ", \(failed.formatted()) failed."
                )
                return failed
            }
            if failed > 0 { throw ExitCode(1) }
        }
    }

    /// Runs `body` with an engine on the hub `name`'s store (no push providers: nothing is sent).
    static func withHub<T>(
        _ name: String, _ configuration: HeraldConfiguration, _ body: (HubEngine, HubDefinition) async throws -> T
    ) async throws -> T {
        let logger = makeLogger("herald", level: configuration.logLevel, format: configuration.logFormat)
        return try await withCatalog(configuration) { catalog in
            let definition = try await existingHub(name, in: catalog)
            let store = try await catalog.storage.openStore(forHub: definition.name, logger: logger)
            do {
                let result = try await body(HubEngine(store: store, providers: [], logger: logger), definition)
                try await store.close()
                return result
            } catch {
                try? await store.close()
                throw error
            }
        }
    }

    static func printErr(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}
