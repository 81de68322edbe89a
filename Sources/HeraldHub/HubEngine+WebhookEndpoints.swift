public import Foundation
public import HeraldCore
import HeraldPush
import HeraldStore

/// What operators do with a hub's webhook endpoints, whether through the hub REST API, the
/// console or `herald hub webhooks`: each change checked here once, then stored.
extension HubEngine {
    /// The most webhook endpoints a hub may have.
    public static let maxWebhookEndpoints = 20
    /// How long a secret replaced by a rotation keeps signing, unless the operator says.
    public static let defaultPreviousSecretValidity: Duration = .seconds(24 * 3600)
    /// The longest a replaced secret may keep signing.
    public static let maxPreviousSecretValidity: Duration = .seconds(7 * 24 * 3600)

    /// Adds an endpoint for the event types named (`*` for all), signed with `secret` or a new
    /// random one.
    ///
    /// - Throws: ``HeraldError/badRequest(_:)`` for a URL that is not https (or plain http to a
    ///   host the node allows), a host not allowed, an unknown event type or a malformed
    ///   secret; ``HeraldError/conflict(_:)`` when the hub has ``maxWebhookEndpoints``.
    public func addWebhookEndpoint(
        url text: String, events names: [String], secret secretText: String? = nil, now: Date = Date()
    ) async throws
        -> WebhookEndpoint
    {
        let url = try WebhookEndpoint.validURL(text)
        if let poster = configuration.webhookPoster, let refusal = poster.refusal(of: url) {
            throw HeraldError.badRequest(refusal)
        } else if configuration.webhookPoster == nil, url.scheme?.lowercased() != "https" {
            throw HeraldError.badRequest("a webhook URL is https")
        }
        let events = try WebhookEventType.parse(names)
        let secret = try secretText.map { text throws(HeraldError) in try WebhookSecret(text) } ?? .random()
        let endpoint = WebhookEndpoint(id: WebhookEndpoint.makeID(), url: url, events: events, secret: secret, createdAt: now)
        try await store.createWebhookEndpoint(endpoint, limit: Self.maxWebhookEndpoints)
        webhookEndpointsChanged()
        return endpoint
    }

    public func webhookEndpoints() async throws -> [WebhookEndpoint] {
        try await store.webhookEndpoints()
    }

    /// - Throws: ``HeraldError/notFound(_:)`` when there is no such endpoint.
    public func webhookEndpoint(id: String) async throws -> WebhookEndpoint {
        guard let endpoint = try await store.webhookEndpoint(id: id) else { throw Self.noWebhookEndpoint(id) }
        return endpoint
    }

    /// - Throws: ``HeraldError/notFound(_:)`` when there is no such endpoint.
    public func removeWebhookEndpoint(id: String) async throws {
        guard try await store.deleteWebhookEndpoint(id: id) else { throw Self.noWebhookEndpoint(id) }
        webhookEndpointsChanged()
    }

    /// Enables an endpoint (one disabled by failing, or by hand) or disables it.
    ///
    /// - Throws: ``HeraldError/notFound(_:)`` when there is no such endpoint.
    public func setWebhookEndpointEnabled(id: String, enabled: Bool, now: Date = Date()) async throws -> WebhookEndpoint {
        guard let endpoint = try await store.setWebhookEndpointEnabled(id: id, enabled: enabled, now: now) else { throw Self.noWebhookEndpoint(id) }
        webhookEndpointsChanged()
        return endpoint
    }

    /// Gives an endpoint a new random secret; the one it replaces keeps signing for
    /// `previousValidFor` (0 s: stops at once).
    ///
    /// - Throws: ``HeraldError/notFound(_:)`` when there is no such endpoint;
    ///   ``HeraldError/badRequest(_:)`` for a validity outside 0 s to 7 days.
    public func rotateWebhookSecret(
        id: String, previousValidFor: Duration = HubEngine.defaultPreviousSecretValidity, now: Date = Date()
    ) async throws
        -> WebhookEndpoint
    {
        guard previousValidFor >= .zero, previousValidFor <= Self.maxPreviousSecretValidity else {
            throw HeraldError.badRequest("the previous secret keeps signing for 0 seconds to 7 days")
        }
        guard
            let endpoint = try await store.rotateWebhookSecret(
                id: id, to: .random(), previousSecretExpiresAt: now.addingTimeInterval(previousValidFor.seconds), now: now
            )
        else { throw Self.noWebhookEndpoint(id) }
        return endpoint
    }

    /// The latest attempts at posting to an endpoint, newest first.
    ///
    /// - Throws: ``HeraldError/notFound(_:)`` when there is no such endpoint.
    public func webhookAttempts(endpointID: String, limit: Int = 50) async throws -> [WebhookAttempt] {
        _ = try await webhookEndpoint(id: endpointID)
        return try await store.webhookAttempts(endpointID: endpointID, limit: limit)
    }

    /// How many events wait for an endpoint.
    public func pendingWebhookDeliveries(endpointID: String) async throws -> Int {
        try await store.pendingWebhookDeliveries(endpointID: endpointID)
    }

    static func noWebhookEndpoint(_ id: String) -> HeraldError {
        .notFound("no webhook endpoint with id '\(id.prefix(64))'")
    }
}
