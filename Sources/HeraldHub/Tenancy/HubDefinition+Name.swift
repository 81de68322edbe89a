public import HeraldCore
import HeraldStore

extension HubDefinition {
    /// The longest hub name.
    public static let maximumNameLength = HubName.maximumLength

    /// Names that would collide with Herald's own routes (`/api/…`, `/health`, …), compared
    /// case-insensitively.
    public static let reservedNames: Set<String> = HubName.reserved

    /// Checks a hub name: 1 to 50 ASCII letters, digits, `.`, `-` and `_`, starting and ending
    /// with a letter or digit, and not one of ``reservedNames``. The name is both a path
    /// segment of the REST API and a directory name, so nothing else is allowed. The rule is
    /// the storages' (`HubName`).
    public static func validateName(_ name: String) throws(HeraldError) {
        try HubName.validate(name)
    }

    /// Whether `name` passes ``validateName(_:)``.
    public static func isValidName(_ name: String) -> Bool {
        HubName.isValid(name)
    }
}
