import Foundation
import Testing

/// Every command's `--help`, as a terminal of 80 columns shows it: paragraphs that read as
/// paragraphs (a description hard-wrapped in the source comes out re-wrapped in ragged
/// pieces: "With\nno push\ncredentials"), and each option's default said once.
@Suite("herald --help reads well")
struct HelpTextTests {
    /// Every command's help, from `herald --help` down through each SUBCOMMANDS list.
    static func everyCommandsHelp() async throws -> [(command: String, help: String)] {
        var found: [(String, String)] = []
        var waiting: [[String]] = [[]]
        while let path = waiting.popLast() {
            let result = try await HeraldCommand.run(path + ["--help"], environment: ["COLUMNS": "80"], limit: .seconds(60))
            #expect(result.status == 0, "herald \(path.joined(separator: " ")) --help: \(result.error)")
            found.append(((["herald"] + path).joined(separator: " "), result.output))
            waiting += subcommands(in: result.output).map { path + [$0] }
        }
        return found
    }

    /// The names a help's SUBCOMMANDS section lists (each on a line of its own, indented two
    /// spaces), without `help`.
    static func subcommands(in help: String) -> [String] {
        guard let start = help.range(of: "SUBCOMMANDS:\n") else { return [] }
        var names: [String] = []
        for line in help[start.upperBound...].split(separator: "\n", omittingEmptySubsequences: false) {
            if line.trimmingCharacters(in: .whitespaces).isEmpty { break }
            guard line.hasPrefix("  "), !line.hasPrefix("   "), let name = line.split(separator: " ").first else { continue }
            if name != "help" { names.append(String(name)) }
        }
        return names
    }

    /// Pairs of lines of the overview and discussion where a short line is followed by one
    /// that goes on with its sentence: a paragraph wrapped twice. Only lines that start at the
    /// margin count: the help's own wrapping puts every piece there.
    static func raggedLines(in help: String) -> [String] {
        let text = help.components(separatedBy: "\nUSAGE:").first ?? help
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var ragged: [String] = []
        // Text laid out in columns of its own (a table, an indented example) is left as it is.
        for (line, next) in zip(lines, lines.dropFirst()) where !line.hasPrefix(" ") && !next.hasPrefix(" ") {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            let following = next.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty, trimmed.count < 50, let first = following.first else { continue }
            // An example (a command line) may follow anything.
            if first.isLowercase, !following.hasPrefix("herald ") { ragged.append("\(trimmed) ⏎ \(next.trimmingCharacters(in: .whitespaces))") }
        }
        return ragged
    }

    @Test func everyHelpReadsAsParagraphsAndSaysEachDefaultOnce() async throws {
        let helps = try await Self.everyCommandsHelp()
        #expect(helps.count >= 20, "\(helps.map(\.command))")
        for (command, help) in helps {
            let ragged = Self.raggedLines(in: help)
            #expect(ragged.isEmpty, "\(command) --help wraps its text twice: \(ragged)")
            let flat = help.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            #expect(flat.range(of: #"\(default: [^)]*\)\.? \(default:"#, options: .regularExpression) == nil, "\(command) --help says a default twice")
        }
    }

    @Test func theRaggedCheckFindsATextWrappedTwice() {
        let twice = "OVERVIEW: Run the server.\n\nStart with `herald serve`. With\nno push\ncredentials configured, Herald starts emulators.\n\nUSAGE: herald\n"
        #expect(Self.raggedLines(in: twice) == ["Start with `herald serve`. With ⏎ no push", "no push ⏎ credentials configured, Herald starts emulators."])
        #expect(Self.raggedLines(in: "OVERVIEW: One line.\n\nA paragraph.\nExample: herald x\n\nUSAGE: herald\n").isEmpty)
        #expect(Self.raggedLines(in: "OVERVIEW: A table.\n\n  NAME   what it is,\n         continued\n\nUSAGE: herald\n").isEmpty)
    }
}
