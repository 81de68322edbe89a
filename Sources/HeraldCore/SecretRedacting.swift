/// A value that holds a secret (a private key, a client secret) and never prints it.
///
/// A conforming type lists its fields in `customMirror`, with each secret replaced by
/// ``redacted``; `description` and `debugDescription` are written from that mirror, so
/// `"\(value)"`, `String(reflecting:)` and `dump` all show the fields without the secret.
public protocol SecretRedacting: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {}

extension SecretRedacting {
    /// What a mirror shows in place of a secret.
    public static var redacted: String { "<redacted>" }

    /// `TypeName(field: value, …)`, from `customMirror`.
    public var description: String {
        let fields = customMirror.children.map { child in "\(child.label ?? "_"): \(Self.shown(child.value))" }
        return "\(Self.self)(" + fields.joined(separator: ", ") + ")"
    }

    public var debugDescription: String { description }

    /// An optional as its value or `nil`; anything else as `String(describing:)`.
    private static func shown(_ value: Any) -> String {
        let mirror = Mirror(reflecting: value)
        guard mirror.displayStyle == .optional else { return String(describing: value) }
        return mirror.children.first.map { shown($0.value) } ?? "nil"
    }
}
