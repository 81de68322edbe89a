import Foundation
import HTTPTypes
import HeraldCore
import HeraldHub
import Hummingbird
import Logging

/// A hub's webhook endpoints, with the Manage right: JSON under `/{hub}/webhooks`.
///
/// - `POST /{hub}/webhooks` `{"url": …, "events": […], "secret"?: "whsec_…"}` adds one and
///   answers `201` with its secret, the only answer that shows it;
/// - `GET /{hub}/webhooks` lists them (no secrets); `GET /{hub}/webhooks/{id}` shows one with
///   its delivery log; `DELETE /{hub}/webhooks/{id}` removes one;
/// - `POST /{hub}/webhooks/{id}/enable` and `…/disable`;
/// - `POST /{hub}/webhooks/{id}/rotate-secret` `{"previousSecretValidFor"?: seconds}` answers
///   the new secret; the previous one keeps signing for that long (24 hours by default);
/// - `POST /{hub}/webhooks/{id}/test` records a `webhook.test` event for it (`202`).
extension HubAPIController {
    func addWebhookRoutes(to hub: RouterGroup<AppRequestContext>) {
        hub.post("webhooks", use: addWebhook)
        hub.get("webhooks", use: listWebhooks)
        hub.get("webhooks/{id}", use: getWebhook)
        hub.delete("webhooks/{id}", use: removeWebhook)
        hub.post("webhooks/{id}/enable", use: enableWebhook)
        hub.post("webhooks/{id}/disable", use: disableWebhook)
        hub.post("webhooks/{id}/rotate-secret", use: rotateWebhookSecret)
        hub.post("webhooks/{id}/test", use: testWebhook)
    }

    private struct AddWebhookBody: Decodable {
        var url: String
        var events: [String]
        var secret: String?
    }

    private struct RotateSecretBody: Decodable {
        var previousSecretValidFor: Int?
    }

    private static func decodeBody<Body: Decodable>(_ type: Body.Type, _ request: Request, shape: String, emptyIsDefault: Body? = nil) async throws -> Body {
        let data = try await request.bodyData(limit: 16 * 1024)
        if data.isEmpty, let emptyIsDefault { return emptyIsDefault }
        do {
            return try JSONDecoder().decode(Body.self, from: data)
        } catch {
            throw HeraldError.badRequest("the body is not JSON of the form \(shape)")
        }
    }

    @Sendable func addWebhook(request: Request, context: AppRequestContext) async throws -> Response {
        let (name, engine) = try await authorize(request, context: context, right: .manage)
        let body = try await Self.decodeBody(
            AddWebhookBody.self, request, shape: #"{"url": "https://…", "events": ["notification.completed", …], "secret"?: "whsec_…"}"#
        )
        let endpoint = try await engine.addWebhookEndpoint(url: body.url, events: body.events, secret: body.secret, now: now())
        context.logger.info("Added a webhook endpoint", metadata: ["herald.webhook.endpoint": "\(endpoint.id)"])
        var headers = HTTPFields()
        headers[.location] = "\(hubURL(request, hub: name))/webhooks/\(endpoint.id)"
        return try .json(WebhookEndpointDocument(endpoint, showingSecret: true), status: .created, headers: headers)
    }

    @Sendable func listWebhooks(request: Request, context: AppRequestContext) async throws -> Response {
        let (_, engine) = try await authorize(request, context: context, right: .manage)
        var documents: [WebhookEndpointDocument] = []
        for endpoint in try await engine.webhookEndpoints() {
            var document = WebhookEndpointDocument(endpoint)
            document.pending = try await engine.pendingWebhookDeliveries(endpointID: endpoint.id)
            documents.append(document)
        }
        return try .json(["endpoints": documents])
    }

    @Sendable func getWebhook(request: Request, context: AppRequestContext) async throws -> Response {
        let (_, engine) = try await authorize(request, context: context, right: .manage)
        let id = try Self.pathParameter("id", context)
        var document = WebhookEndpointDocument(try await engine.webhookEndpoint(id: id))
        document.pending = try await engine.pendingWebhookDeliveries(endpointID: id)
        document.attempts = try await engine.webhookAttempts(endpointID: id).map(WebhookAttemptDocument.init)
        return try .json(document)
    }

    @Sendable func removeWebhook(request: Request, context: AppRequestContext) async throws -> Response {
        let (_, engine) = try await authorize(request, context: context, right: .manage)
        let id = try Self.pathParameter("id", context)
        try await engine.removeWebhookEndpoint(id: id)
        context.logger.info("Removed a webhook endpoint", metadata: ["herald.webhook.endpoint": "\(id)"])
        return Response(status: .noContent)
    }

    @Sendable func enableWebhook(request: Request, context: AppRequestContext) async throws -> Response {
        try await setWebhookEnabled(true, request: request, context: context)
    }

    @Sendable func disableWebhook(request: Request, context: AppRequestContext) async throws -> Response {
        try await setWebhookEnabled(false, request: request, context: context)
    }

    private func setWebhookEnabled(_ enabled: Bool, request: Request, context: AppRequestContext) async throws -> Response {
        let (_, engine) = try await authorize(request, context: context, right: .manage)
        let id = try Self.pathParameter("id", context)
        let endpoint = try await engine.setWebhookEndpointEnabled(id: id, enabled: enabled, now: now())
        context.logger.info(enabled ? "Enabled a webhook endpoint" : "Disabled a webhook endpoint", metadata: ["herald.webhook.endpoint": "\(id)"])
        return try .json(WebhookEndpointDocument(endpoint))
    }

    @Sendable func rotateWebhookSecret(request: Request, context: AppRequestContext) async throws -> Response {
        let (_, engine) = try await authorize(request, context: context, right: .manage)
        let id = try Self.pathParameter("id", context)
        let body = try await Self.decodeBody(
            RotateSecretBody.self, request, shape: #"{"previousSecretValidFor"?: seconds}"#, emptyIsDefault: RotateSecretBody()
        )
        let validity = body.previousSecretValidFor.map { Duration.seconds($0) } ?? HubEngine.defaultPreviousSecretValidity
        let endpoint = try await engine.rotateWebhookSecret(id: id, previousValidFor: validity, now: now())
        context.logger.info("Rotated a webhook endpoint's secret", metadata: ["herald.webhook.endpoint": "\(id)"])
        return try .json(WebhookEndpointDocument(endpoint, showingSecret: true))
    }

    @Sendable func testWebhook(request: Request, context: AppRequestContext) async throws -> Response {
        let (_, engine) = try await authorize(request, context: context, right: .manage)
        let id = try Self.pathParameter("id", context)
        let event = try await engine.sendTestWebhookEvent(endpointID: id, now: now())
        return try .json(["eventId": event.id, "type": event.type.rawValue], status: .accepted)
    }
}

/// An endpoint as the hub API and the console show it: its secret only when it was just made
/// (or rotated).
struct WebhookEndpointDocument: Encodable {
    var id: String
    var url: String
    var events: [String]
    var enabled: Bool
    var disabledReason: String?
    var createdAt: Date
    var updatedAt: Date
    /// Until when the secret before the last rotation signs too.
    var previousSecretExpiresAt: Date?
    var secret: String?
    var pending: Int?
    var attempts: [WebhookAttemptDocument]?

    init(_ endpoint: WebhookEndpoint, showingSecret: Bool = false) {
        id = endpoint.id
        url = endpoint.url.absoluteString
        events = endpoint.events.sorted().map(\.rawValue)
        enabled = endpoint.enabled
        disabledReason = endpoint.disabledReason
        createdAt = endpoint.createdAt
        updatedAt = endpoint.updatedAt
        previousSecretExpiresAt = endpoint.previousSecretExpiresAt
        secret = showingSecret ? endpoint.secret.text : nil
    }
}

/// One line of an endpoint's delivery log.
struct WebhookAttemptDocument: Encodable {
    var eventId: String
    var type: String
    var attempt: Int
    var at: Date
    var statusCode: Int?
    var error: String?
    var durationMilliseconds: Int
    var outcome: String

    init(_ attempt: WebhookAttempt) {
        eventId = attempt.eventID
        type = attempt.type.rawValue
        self.attempt = attempt.attempt
        at = attempt.at
        statusCode = attempt.statusCode
        error = attempt.error
        durationMilliseconds = attempt.durationMilliseconds
        outcome = attempt.outcome.rawValue
    }
}
