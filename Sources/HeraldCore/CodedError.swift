/// The one shape of Herald's errors: a struct with a nested `Code` and a message.
///
/// ```swift
/// public struct StoreError: CodedError {
///     public struct Code: Hashable, Sendable, CustomStringConvertible { … }
///     public let code: Code
///     public let message: String
/// }
/// ```
///
/// Conforming gives the rules every error follows, written once here:
/// - equality and hashing compare the ``code`` only, so `#expect(throws:)`, `catch` patterns
///   and sets match on what kind of error it is, not on its wording (compare ``message``
///   explicitly where the wording matters);
/// - the code's `description` is a short name, safe as a metric label;
/// - `description` is `"<code>: <message>"`.
///
/// A message says what is wrong (a field, a file, a host) and never holds a token, a key,
/// a secret or a payload.
public protocol CodedError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of error it is: a struct over a private enum or a raw value, with static
    /// members, so adding a kind breaks no caller.
    associatedtype Code: Hashable, Sendable, CustomStringConvertible

    var code: Code { get }
    /// What went wrong, safe to log and to show the caller.
    var message: String { get }
}

extension CodedError {
    /// Errors are equal when their codes are: the message is not compared.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }

    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// `"<code>: <message>"`.
    public var description: String { "\(code): \(message)" }

    /// The code's short name, safe as a metric label.
    public var metricLabel: String { code.description }
}
