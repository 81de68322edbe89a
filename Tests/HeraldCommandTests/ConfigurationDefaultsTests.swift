import Foundation
import Testing

@testable import herald

/// A setting's default is the field's initial value in `HeraldConfiguration`: a row of the one
/// table of settings made from the field (`.text(\.port, …)`, `.number`, `.flag`) shows it, and a
/// row that describes its default (`default:`) or parses its own value must agree with it.
/// Applying the documented default to a fresh configuration must change nothing.
@Suite("herald configuration defaults")
struct ConfigurationDefaultsTests {
    /// Settings whose field keeps `nil` for the default the row names, resolved where it is used
    /// (the service's own endpoint, the catalog's app hub).
    static let resolvedLater: Set<String> = ["HERALD_FCM_ENDPOINT", "HERALD_WNS_TOKEN_URI", "HERALD_APP_HUB_NAME"]

    /// The value of a default written as one literal (`` `8080` ``), or `nil` for a description
    /// ("any free port", "—") or a pattern (`` `sb://localhost:<tls port>/` ``).
    static func literal(_ documented: String) -> String? {
        guard documented.count > 2, documented.first == "`", documented.last == "`",
            !documented.dropFirst().dropLast().contains(where: { $0 == "`" || $0 == "<" })
        else { return nil }
        return String(documented.dropFirst().dropLast())
    }

    static func described(_ configuration: HeraldConfiguration) -> String {
        var text = ""
        dump(configuration, to: &text)
        return text
    }

    @Test func everyDocumentedDefaultIsTheFieldsInitialValue() throws {
        let fresh = Self.described(HeraldConfiguration())
        var checked = 0
        for setting in HeraldConfiguration.settings {
            guard let value = Self.literal(setting.defaultValue), !Self.resolvedLater.contains(setting.variable) else { continue }
            var configuration = HeraldConfiguration()
            try setting.apply(&configuration, value)
            #expect(Self.described(configuration) == fresh, "\(setting.variable): the table says \(value), the field starts otherwise")
            checked += 1
        }
        #expect(checked >= 30)
    }

    /// `--help` states the same default as the reference.
    @Test func theHelpSaysTheSameDefault() {
        for setting in HeraldConfiguration.settings {
            guard let value = Self.literal(setting.defaultValue), let range = setting.help.range(of: "(default ") else { continue }
            let stated = setting.help[range.upperBound...]
            #expect(stated.hasPrefix(value), "\(setting.variable): --help says \(stated.prefix(40)), the reference \(value)")
        }
    }
}
