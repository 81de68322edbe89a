import ArgumentParser
import Foundation

/// `herald config …`: about the settings themselves.
struct ConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Show the reference of every setting: its variable, its flag, its default and what it does.",
        subcommands: [Reference.self]
    )

    /// `herald config reference [--write FILE]`: the settings as a Markdown table.
    struct Reference: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print every setting as a Markdown table: variable and flag, default, meaning.",
            discussion: """
                The table of docs/configuration.md is this output, between the lines \
                <!-- BEGIN generated: herald config reference --> and <!-- END generated -->. \
                After a change to the settings, regenerate it:

                  swift run herald config reference --write docs/configuration.md
                """
        )

        @Option(
            name: .customLong("write"),
            help: ArgumentHelp("Replace the table between the markers in this Markdown file instead of printing it.", valueName: "file")
        )
        var file: String?

        func run() throws {
            guard let file else {
                print(HeraldConfiguration.reference, terminator: "")
                return
            }
            guard let page = FileManager.default.contents(atPath: file).map({ String(decoding: $0, as: UTF8.self) }) else {
                throw ValidationError("cannot read \(file)")
            }
            do {
                let updated = try HeraldConfiguration.replacingReference(in: page)
                guard updated != page else {
                    print("\(file): the reference is up to date")
                    return
                }
                try updated.write(toFile: file, atomically: true, encoding: .utf8)
                print("\(file): the reference is written")
            } catch let error as ConfigurationError {
                throw ValidationError("\(file): \(error.description)")
            }
        }
    }
}
