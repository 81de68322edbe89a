public import HeraldCore

/// The rule for a hub's name, which every ``HubStorage`` keeps its hubs under: 1 to 50 ASCII
/// letters, digits, `.`, `-` and `_`, starting and ending with a letter or digit, and not one of
/// ``reserved``. The name is both a path segment of the REST API and a directory name, so
/// nothing else is allowed. (`HubDefinition.validateName(_:)` is this rule.)
public enum HubName {
    /// The longest hub name.
    public static let maximumLength = 50

    /// Names that would collide with Herald's own routes (`/api/…`, `/health`, …), compared
    /// case-insensitively.
    public static let reserved: Set<String> = ["api", "_emulator", "health", "ready", "metrics", "admin", "console", "emulators"]

    /// Checks a hub name (see ``HubName``); the error says what is wrong.
    public static func validate(_ name: String) throws(HeraldError) {
        let expectation = "a hub name has 1 to \(maximumLength) letters, digits, '.', '-' or '_', and starts and ends with a letter or digit"
        guard !name.isEmpty else { throw .badRequest("the hub name is empty: \(expectation)") }
        guard name.count <= maximumLength else {
            throw .badRequest("the hub name '\(name.prefix(maximumLength))…' is \(name.count) characters long: \(expectation)")
        }
        guard name.unicodeScalars.allSatisfy({ isAlphanumeric($0) || $0 == "." || $0 == "-" || $0 == "_" }) else {
            throw .badRequest("'\(name)' is not a valid hub name: \(expectation)")
        }
        guard let first = name.unicodeScalars.first, let last = name.unicodeScalars.last,
            isAlphanumeric(first), isAlphanumeric(last)
        else {
            throw .badRequest("'\(name)' is not a valid hub name: \(expectation)")
        }
        guard !reserved.contains(name.lowercased()) else {
            throw .badRequest(
                "'\(name)' is reserved for Herald's own routes; choose another hub name (reserved: \(reserved.sorted().joined(separator: ", ")))")
        }
    }

    /// Whether `name` passes ``validate(_:)``.
    public static func isValid(_ name: String) -> Bool {
        (try? validate(name)) != nil
    }

    private static func isAlphanumeric(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "a"..."z", "A"..."Z", "0"..."9": true
        default: false
        }
    }
}
