import Foundation

/// What a webhook event tells an app's backend: an open value over the type's name (a
/// receiver ignores types it does not know), with the types Herald sends as static members.
public struct WebhookEventType: Sendable, Hashable, Codable, Comparable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// A notification's delivery run ended: every target was tried (the outcome counts).
    public static let notificationCompleted = WebhookEventType(rawValue: "notification.completed")
    /// A notification's delivery run stopped before every target was tried (the outcome
    /// counts so far, and why).
    public static let notificationAbandoned = WebhookEventType(rawValue: "notification.abandoned")
    /// Devices confirmed a notification (receipts): its `Confirmed` counts so far, per platform.
    /// At most one per notification, node and report interval (10 s, the engine's), never one
    /// per device.
    public static let notificationConfirmed = WebhookEventType(rawValue: "notification.confirmed")
    /// A push service reported a channel gone: the registration (or installation) and its
    /// platform.
    public static let registrationExpired = WebhookEventType(rawValue: "registration.expired")
    /// A push credential of the hub was refused by its push service.
    public static let credentialFailing = WebhookEventType(rawValue: "credential.failing")
    /// A push credential that was refused is accepted again.
    public static let credentialRecovered = WebhookEventType(rawValue: "credential.recovered")
    /// Sent by an operator to check an endpoint ("send a test event"); never subscribed to.
    public static let test = WebhookEventType(rawValue: "webhook.test")

    /// The types an endpoint may subscribe to, in the order documented.
    public static let subscribable: [WebhookEventType] = [
        .notificationCompleted, .notificationAbandoned, .notificationConfirmed, .registrationExpired, .credentialFailing,
        .credentialRecovered,
    ]

    /// The types named in `list` (comma-separated, `*` for all), each one Herald sends.
    ///
    /// - Throws: ``HeraldError/badRequest(_:)`` naming an unknown type, or for an empty list.
    public static func parseList(_ list: String) throws(HeraldError) -> Set<WebhookEventType> {
        let names = list.split(separator: ",").map { $0.trimmingSpaces() }.filter { !$0.isEmpty }
        return try parse(names)
    }

    /// The types named, each one Herald sends (`*` for all).
    ///
    /// - Throws: ``HeraldError/badRequest(_:)`` naming an unknown type, or for no types.
    public static func parse(_ names: [String]) throws(HeraldError) -> Set<WebhookEventType> {
        guard !names.isEmpty else { throw .badRequest("a webhook endpoint needs at least one event type (or '*' for all)") }
        var types = Set<WebhookEventType>()
        for name in names {
            if name == "*" {
                types.formUnion(subscribable)
                continue
            }
            let type = WebhookEventType(rawValue: name)
            guard subscribable.contains(type) else {
                throw .badRequest(
                    "unknown webhook event type '\(name.prefix(64))'; the types are \(subscribable.map(\.rawValue).joined(separator: ", "))"
                )
            }
            types.insert(type)
        }
        return types
    }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public static func < (lhs: WebhookEventType, rhs: WebhookEventType) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String { rawValue }
}
