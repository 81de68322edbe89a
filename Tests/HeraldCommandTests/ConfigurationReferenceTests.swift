import Foundation
import Testing

@testable import herald

/// docs/configuration.md holds the reference of every setting as `herald config reference`
/// prints it from the one table of settings in the code, so the page lists every variable the
/// code reads and none it does not.
@Suite("herald config reference")
struct ConfigurationReferenceTests {
    static let page = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/configuration.md")

    /// The text between the page's markers, or `nil` when they are missing.
    static func documentedTable() throws -> String? {
        let text = try String(contentsOf: page, encoding: .utf8)
        let (begin, end) = HeraldConfiguration.referenceMarkers
        guard let start = text.range(of: begin + "\n"), let stop = text.range(of: end, range: start.upperBound..<text.endIndex) else {
            return nil
        }
        return String(text[start.upperBound..<stop.lowerBound])
    }

    @Test func thePageHoldsTheGeneratedTable() async throws {
        let result = try await HeraldCommand.run(["config", "reference"], limit: .seconds(60))
        #expect(result.status == 0, "\(result.error)")
        let documented = try #require(
            try Self.documentedTable(),
            "docs/configuration.md has no table between \(HeraldConfiguration.referenceMarkers.begin) and \(HeraldConfiguration.referenceMarkers.end)"
        )
        #expect(
            documented == result.output,
            """
            The settings table of docs/configuration.md differs from what the code accepts. Regenerate it: \
            swift run herald config reference --write docs/configuration.md
            """
        )
    }

    /// Every variable the configuration reads is a row of the table, and every row names one.
    @Test func everyVariableIsARow() {
        let rows = HeraldConfiguration.reference.split(separator: "\n").dropFirst(2).map { row in
            String(row.dropFirst(3).prefix { $0 != "`" })
        }
        let read =
            [HeraldConfiguration.configFileVariable.variable] + HeraldConfiguration.settings.map(\.variable)
            + HeraldConfiguration.tracingVariables.map(\.variable)
        #expect(rows == read)
        #expect(Set(rows).count == rows.count, "a variable is listed twice")
    }

    /// The flags the table names are options of the commands: `herald serve`'s, or those of
    /// the `hub` commands that print connection strings.
    @Test func everyFlagIsAnOption() async throws {
        let serve = try await HeraldCommand.run(["serve", "--help"], environment: ["COLUMNS": "200"], limit: .seconds(60))
        let keys = try await HeraldCommand.run(["hub", "keys", "--help"], environment: ["COLUMNS": "200"], limit: .seconds(60))
        let flags = HeraldConfiguration.settings.compactMap(\.flag) + [HeraldConfiguration.configFileVariable.flag].compactMap { $0 }
        #expect(flags.count >= 9)
        for flag in flags {
            #expect(serve.output.contains(flag + " ") || keys.output.contains(flag + " "), "\(flag) is no option of herald serve or herald hub keys")
        }
    }

    /// `--write` replaces the table between the markers and leaves the rest of the page as it is.
    @Test func writeReplacesTheTableBetweenTheMarkers() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("herald-reference-\(UUID().uuidString).md")
        defer { try? FileManager.default.removeItem(at: file) }
        let (begin, end) = HeraldConfiguration.referenceMarkers
        try "# Settings\n\nBefore.\n\n\(begin)\n| stale | table |\n\(end)\n\nAfter.\n".write(to: file, atomically: true, encoding: .utf8)
        let written = try await HeraldCommand.run(["config", "reference", "--write", file.path], limit: .seconds(60))
        #expect(written.status == 0, "\(written.error)")
        let text = try String(contentsOf: file, encoding: .utf8)
        #expect(text == "# Settings\n\nBefore.\n\n\(begin)\n\(HeraldConfiguration.reference)\(end)\n\nAfter.\n")
        let again = try await HeraldCommand.run(["config", "reference", "--write", file.path], limit: .seconds(60))
        #expect(again.output.contains("up to date"), "\(again.output)")

        try "# No markers\n".write(to: file, atomically: true, encoding: .utf8)
        let refused = try await HeraldCommand.run(["config", "reference", "--write", file.path], limit: .seconds(60))
        #expect(refused.status != 0)
        #expect(refused.error.contains(begin), "\(refused.error)")
    }
}
