public import Foundation

/// Where a hub posts the events an app's backend asked for: an HTTPS URL, the event types it
/// wants, and the secret its events are signed with.
///
/// After a secret is rotated, the previous one keeps signing too (a second signature in
/// `webhook-signature`) until ``previousSecretExpiresAt``, so a receiver can move to the new
/// secret without refusing an event in between. An endpoint that failed every attempt at an
/// event for the whole retry window is disabled (``disabledReason`` says why) and gets no
/// events until an operator enables it again.
public struct WebhookEndpoint: Sendable, Hashable, SecretRedacting {
    public var id: String
    public var url: URL
    public var events: Set<WebhookEventType>
    public var secret: WebhookSecret
    /// The secret before the last rotation, still signing until ``previousSecretExpiresAt``.
    public var previousSecret: WebhookSecret?
    public var previousSecretExpiresAt: Date?
    public var enabled: Bool
    /// Why the endpoint was disabled, when it was disabled by failing.
    public var disabledReason: String?
    public var createdAt: Date
    public var updatedAt: Date

    public init(
        id: String, url: URL, events: Set<WebhookEventType>, secret: WebhookSecret, previousSecret: WebhookSecret? = nil,
        previousSecretExpiresAt: Date? = nil, enabled: Bool = true, disabledReason: String? = nil, createdAt: Date, updatedAt: Date? = nil
    ) {
        self.id = id
        self.url = url
        self.events = events
        self.secret = secret
        self.previousSecret = previousSecret
        self.previousSecretExpiresAt = previousSecretExpiresAt
        self.enabled = enabled
        self.disabledReason = disabledReason
        self.createdAt = createdAt
        self.updatedAt = updatedAt ?? createdAt
    }

    /// The secrets that sign an event at `now`: the current one, and the previous one while it
    /// is still valid.
    public func signingSecrets(at now: Date) -> [WebhookSecret] {
        guard let previousSecret, let until = previousSecretExpiresAt, now < until else { return [secret] }
        return [secret, previousSecret]
    }

    /// A new endpoint id: `we_` and 24 hex digits.
    public static func makeID() -> String {
        "we_" + UUID.random().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(24)
    }

    /// Checks what an operator gave for a new endpoint's URL: absolute `https` (or `http`,
    /// which the sender refuses unless the operator allowed it), a host, no user or password,
    /// no fragment, at most 2,048 characters.
    ///
    /// - Throws: ``HeraldError/badRequest(_:)`` saying what is wrong.
    public static func validURL(_ text: String) throws(HeraldError) -> URL {
        guard text.count <= 2048 else { throw .badRequest("a webhook URL has at most 2048 characters") }
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            let url = components.url
        else {
            throw .badRequest("the webhook URL is not a URL")
        }
        guard scheme == "https" || scheme == "http" else { throw .badRequest("a webhook URL is https (or http where allowed)") }
        guard let host = components.host, !host.isEmpty else { throw .badRequest("a webhook URL names a host") }
        guard components.user == nil, components.password == nil else {
            throw .badRequest("a webhook URL carries no user or password (the events are signed instead)")
        }
        guard components.fragment == nil else { throw .badRequest("a webhook URL has no fragment") }
        return url
    }

    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "id": id, "url": url.absoluteString, "events": events.sorted().map(\.rawValue), "secret": Self.redacted,
                "previousSecret": previousSecret.map { _ in Self.redacted } as Any, "enabled": enabled,
                "disabledReason": disabledReason as Any, "createdAt": createdAt,
            ],
            displayStyle: .struct
        )
    }
}
