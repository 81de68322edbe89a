public import HeraldCore

extension HubDefinition {
    /// The longest hub name.
    public static let maximumNameLength = 50

    /// Names that would collide with Herald's own routes (`/api/…`, `/health`, …), compared
    /// case-insensitively.
    public static let reservedNames: Set<String> = ["api", "_emulator", "health", "ready", "metrics", "admin", "console", "emulators"]

    /// Checks a hub name: 1 to 50 ASCII letters, digits, `.`, `-` and `_`, starting and ending
    /// with a letter or digit, and not one of ``reservedNames``. The name is both a path
    /// segment of the REST API and a directory name, so nothing else is allowed.
    public static func validateName(_ name: String) throws(HeraldError) {
        let expectation = "a hub name has 1 to \(maximumNameLength) letters, digits, '.', '-' or '_', and starts and ends with a letter or digit"
        guard !name.isEmpty else { throw .badRequest("the hub name is empty: \(expectation)") }
        guard name.count <= maximumNameLength else {
            throw .badRequest("the hub name '\(name.prefix(maximumNameLength))…' is \(name.count) characters long: \(expectation)")
        }
        guard name.unicodeScalars.allSatisfy({ isAlphanumeric($0) || $0 == "." || $0 == "-" || $0 == "_" }) else {
            throw .badRequest("'\(name)' is not a valid hub name: \(expectation)")
        }
        guard let first = name.unicodeScalars.first, let last = name.unicodeScalars.last,
            isAlphanumeric(first), isAlphanumeric(last)
        else {
            throw .badRequest("'\(name)' is not a valid hub name: \(expectation)")
        }
        guard !reservedNames.contains(name.lowercased()) else {
            throw .badRequest(
                "'\(name)' is reserved for Herald's own routes; choose another hub name (reserved: \(reservedNames.sorted().joined(separator: ", ")))")
        }
    }

    /// Whether `name` passes ``validateName(_:)``.
    public static func isValidName(_ name: String) -> Bool {
        (try? validateName(name)) != nil
    }

    private static func isAlphanumeric(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "a"..."z", "A"..."Z", "0"..."9": true
        default: false
        }
    }
}
