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
    /// Registrations whose handle is of this kind (a send's own, to count what it reaches);
    /// `nil` for every kind.
    public var handleKind: HandleKind?

    public init(
        expression: TagExpression? = nil,
        platform: Platform? = nil,
        handlePrefix: String? = nil,
        includeInstallationRegistrations: Bool = true,
        handleKind: HandleKind? = nil
    ) {
        self.expression = expression
        self.platform = platform
        self.handlePrefix = handlePrefix
        self.includeInstallationRegistrations = includeInstallationRegistrations
        self.handleKind = handleKind
    }

    /// The least string above every handle that starts with ``handlePrefix``, in the stores'
    /// byte order (UTF-8 orders as code points): the prefix with its last character raised by
    /// one (trailing characters that cannot be raised are dropped); `nil` when there is none.
    /// With the prefix itself as the lower bound, a range of the handle index.
    package var handleUpperBound: String? {
        guard var scalars = handlePrefix.map({ Array($0.unicodeScalars) }), !scalars.isEmpty else { return nil }
        while let last = scalars.popLast() {
            var next = last.value + 1
            if (0xD800...0xDFFF).contains(next) { next = 0xE000 }
            if let raised = Unicode.Scalar(next) {
                var view = String.UnicodeScalarView()
                view.append(contentsOf: scalars)
                view.append(raised)
                return String(view)
            }
        }
        return nil
    }
}
