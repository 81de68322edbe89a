public import HeraldCore

/// Which registrations an operator browses (``RegistrationStore/browseRegistrations(_:after:limit:)``)
/// or counts (``RegistrationStore/countRegistrations(_:)``): those every given condition holds
/// for; all of them when none is given. Expired registrations are included.
public struct RegistrationQuery: Sendable, Hashable {
    /// Registrations whose tags match; `nil` for any tags. A user's devices are those with the
    /// tag `username:NAME`.
    public var expression: TagExpression?
    /// Registrations of this platform; `nil` for every platform.
    public var platform: Platform?
    /// Registrations whose handle starts with these characters, compared exactly (no pattern:
    /// `%` and `_` are characters like any other); `nil` or empty for any handle.
    public var handlePrefix: String?
    /// Whether the registrations derived from installations are included, so that every
    /// device shows; `false` for the hub API's own registrations only.
    public var includeInstallationRegistrations: Bool

    public init(
        expression: TagExpression? = nil,
        platform: Platform? = nil,
        handlePrefix: String? = nil,
        includeInstallationRegistrations: Bool = true
    ) {
        self.expression = expression
        self.platform = platform
        self.handlePrefix = handlePrefix
        self.includeInstallationRegistrations = includeInstallationRegistrations
    }
}
