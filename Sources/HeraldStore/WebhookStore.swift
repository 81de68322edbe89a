public import Foundation
public import HeraldCore

/// A hub's webhook endpoints, its outbox of events waiting for them, and each endpoint's
/// delivery log.
///
/// The outbox holds one row per event and endpoint. Any node may send: it claims due rows
/// under a lease (on PostgreSQL, rows another node holds locked are skipped, not waited
/// for), posts them, and records each attempt under the same lease. A row leaves the outbox
/// when it was delivered or given up; a node that dies holding a lease leaves its rows to be
/// claimed again when the lease runs out, so a crash loses no event (and may send one twice:
/// receivers deduplicate by `webhook-id`).
public protocol WebhookStore: Sendable {
    /// Stores a new endpoint.
    ///
    /// - Throws: ``HeraldError/conflict(_:)`` when an endpoint has this id or the hub has
    ///   `limit` endpoints already; nothing changes then.
    func createWebhookEndpoint(_ endpoint: WebhookEndpoint, limit: Int) async throws

    func webhookEndpoint(id: String) async throws -> WebhookEndpoint?

    /// Every endpoint of the hub, oldest first.
    func webhookEndpoints() async throws -> [WebhookEndpoint]

    /// Enables or disables an endpoint; `nil` if there is none. Enabling clears
    /// ``WebhookEndpoint/disabledReason``. Disabling drops the events waiting for it (an
    /// enabled endpoint gets events recorded from then on).
    func setWebhookEndpointEnabled(id: String, enabled: Bool, now: Date) async throws -> WebhookEndpoint?

    /// Replaces an endpoint's secret; the one replaced keeps signing until
    /// `previousSecretExpiresAt`. `nil` if there is no such endpoint.
    func rotateWebhookSecret(id: String, to secret: WebhookSecret, previousSecretExpiresAt: Date, now: Date) async throws -> WebhookEndpoint?

    /// Deletes an endpoint, its waiting events and its delivery log; `false` if there was none.
    @discardableResult
    func deleteWebhookEndpoint(id: String) async throws -> Bool

    /// Records each of `events` in the outbox for every enabled endpoint that wants its type
    /// (or, with `endpointIDs`, for those of them only, whatever they want: a test event), due
    /// at once, in one transaction. An event already recorded for an endpoint (the same id) is
    /// not recorded again. Returns how many rows were added.
    @discardableResult
    func enqueueWebhookEvents(_ events: [WebhookEvent], endpointIDs: Set<String>?) async throws -> Int

    /// Claims up to `limit` due rows of enabled endpoints, oldest due first: those no one holds
    /// or whose lease ran out. Each is leased to `owner` until `now + lease`.
    func claimWebhookDeliveries(now: Date, lease: Duration, owner: String, limit: Int) async throws -> [WebhookDelivery]

    /// Records an attempt in the endpoint's log and acts on its outcome, in one transaction:
    /// `delivered` removes the row; `retrying` makes it due again at `retryAt`, one attempt
    /// more, unleased; `gaveUp` removes it, disables the endpoint with `attempt.error` as the
    /// reason, and drops the endpoint's other waiting events.
    ///
    /// - Throws: ``StoreError/Code/leaseLost`` when `owner` no longer holds the row; nothing
    ///   is written then.
    func recordWebhookAttempt(_ attempt: WebhookAttempt, owner: String, retryAt: Date?) async throws

    /// The latest attempts of an endpoint, newest first.
    func webhookAttempts(endpointID: String, limit: Int) async throws -> [WebhookAttempt]

    /// How many events wait for an endpoint.
    func pendingWebhookDeliveries(endpointID: String) async throws -> Int

    /// Deletes the delivery log's attempts made before `date`; returns how many.
    @discardableResult
    func purgeWebhookAttempts(before date: Date) async throws -> Int
}

extension WebhookStore {
    /// ``enqueueWebhookEvents(_:endpointIDs:)`` for one event.
    @discardableResult
    public func enqueueWebhookEvent(_ event: WebhookEvent, endpointIDs: Set<String>?) async throws -> Int {
        try await enqueueWebhookEvents([event], endpointIDs: endpointIDs)
    }
}
