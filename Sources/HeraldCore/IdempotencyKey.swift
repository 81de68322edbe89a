public import Foundation

/// The `Idempotency-Key` a send was made under, and what makes a repeat of it the same send.
///
/// The first send with a key creates the notification; a repeat with the same key and the
/// same request, within the key's retention, answers what the first one did and sends nothing;
/// the same key with another request is refused. Keys are kept per ``scope``: the hub REST
/// API's keys are the hub's (``hubScope``), the app backend's each user's own
/// (``userScope(_:)``).
///
/// The key is not a secret, but the request it stands for may be (a secure send's payload):
/// only its ``digest`` is kept.
public struct IdempotencyKey: Sendable, Hashable, Codable {
    /// The request header that carries a key.
    public static let headerName = "Idempotency-Key"
    /// The answer header that marks a replayed answer (`true`).
    public static let replayedHeaderName = "Idempotent-Replayed"
    /// The longest key, in characters (printable ASCII, one byte each).
    public static let maxLength = 255
    /// How long a key is kept unless its hub says otherwise.
    public static let defaultRetention: Duration = .seconds(24 * 3600)
    /// The longest retention a hub may set.
    public static let maxRetention: Duration = .seconds(30 * 24 * 3600)

    /// The scope of the hub REST API's keys: the hub's own.
    public static let hubScope = "hub"
    /// The scope of a user's keys on the app backend.
    public static func userScope(_ user: String) -> String { "user:\(user)" }

    /// The key as the client sent it: 1 to ``maxLength`` printable ASCII characters.
    public let key: String
    /// Whose keys it is among: ``hubScope`` or ``userScope(_:)``.
    public var scope: String
    /// The lowercase hex SHA-256 of the canonical request (method, path, the headers that
    /// change the send, body): a repeat with another digest is another request.
    public var digest: String
    /// What the first answer carried that the notification does not (a secure send's content
    /// id), kept to answer a repeat with; `nil` for none.
    public var answer: String?
    /// How long the key is kept after the notification was accepted.
    public var retention: Duration

    /// - Throws: ``HeraldError/badRequest(_:)`` saying what is wrong with `key` (see
    ///   ``validate(_:)``), or with `retention`.
    public init(
        _ key: String, scope: String, digest: String, answer: String? = nil, retention: Duration = IdempotencyKey.defaultRetention
    ) throws(HeraldError) {
        try Self.validate(key)
        try Self.validate(retention: retention)
        self.key = key
        self.scope = scope
        self.digest = digest
        self.answer = answer
        self.retention = retention
    }

    /// Refuses a key that is empty, longer than ``maxLength`` or holds anything but printable
    /// ASCII (`!` to `~` and the space), naming what is wrong.
    public static func validate(_ key: String) throws(HeraldError) {
        guard !key.isEmpty else {
            throw .badRequest("the \(headerName) header is empty: send 1 to \(maxLength) printable ASCII characters, such as a UUID")
        }
        guard key.utf8.allSatisfy({ (0x20...0x7E).contains($0) }) else {
            throw .badRequest(
                "the \(headerName) header holds a character that is not printable ASCII: send 1 to \(maxLength) printable ASCII characters, such as a UUID")
        }
        guard key.utf8.count <= maxLength else {
            throw .badRequest("the \(headerName) header has \(key.utf8.count) characters; a key has at most \(maxLength)")
        }
    }

    /// Refuses a retention that is not between one second and ``maxRetention``.
    public static func validate(retention: Duration) throws(HeraldError) {
        guard retention >= .seconds(1), retention <= maxRetention else {
            throw .badRequest("idempotency keys are kept 1 second to 30 days (2592000 seconds), not \(retention.components.seconds) seconds")
        }
    }

    /// When a key accepted at `acceptedAt` is forgotten.
    public func expiry(acceptedAt: Date) -> Date {
        acceptedAt.addingTimeInterval(retention.seconds)
    }
}
