public import Foundation
public import HeraldCore
import HeraldStore
import PostgresNIO

extension PostgresStore {
    private static func decodeEndpoint(_ row: PostgresRow) throws(StoreError) -> WebhookEndpoint {
        try WebhookEndpoint(stored: row.byName)
    }

    public func createWebhookEndpoint(_ endpoint: WebhookEndpoint, limit: Int) async throws {
        var statement = SQLStatement()
        statement.sql = """
            INSERT INTO herald.webhook_endpoints (hub, \(WebhookEndpoint.storedColumns)) VALUES (\(statement.bind(hub)), \
            \(statement.bind(endpoint.id)), \(statement.bind(endpoint.url.absoluteString)), \(statement.bind(endpoint.storedEvents)), \
            \(statement.bind(endpoint.secret.text)), \(statement.bind(endpoint.previousSecret?.text)), \
            \(statement.bind(endpoint.previousSecretExpiresAt)), \(statement.bind(endpoint.enabled)), \
            \(statement.bind(endpoint.disabledReason)), \(statement.bind(endpoint.createdAt)), \(statement.bind(endpoint.updatedAt))) \
            ON CONFLICT (hub, id) DO NOTHING RETURNING id
            """
        // The hub's endpoint writes take turns on an advisory lock, so that two nodes cannot
        // both add the last one allowed.
        let refusal: HeraldError? = try await transaction { [self, statement] connection in
            try await lock(["#webhooks"], on: connection)
            var count = SQLStatement()
            count.sql = "SELECT count(*)::bigint AS n FROM herald.webhook_endpoints WHERE hub = \(count.bind(hub))"
            let existing = try await query(count, on: connection).first?.byName.int("n") ?? 0
            if existing >= limit { return .conflict("the hub has \(existing) webhook endpoints, the most it may have") }
            let inserted = try await !query(statement, on: connection).isEmpty
            return inserted ? nil : .conflict("a webhook endpoint with id '\(endpoint.id)' exists")
        }
        if let refusal { throw refusal }
    }

    public func webhookEndpoint(id: String) async throws -> WebhookEndpoint? {
        var statement = SQLStatement()
        statement.sql = """
            SELECT \(WebhookEndpoint.storedColumns) FROM herald.webhook_endpoints \
            WHERE hub = \(statement.bind(hub)) AND id = \(statement.bind(id))
            """
        return try await query(statement).first.map(Self.decodeEndpoint)
    }

    public func webhookEndpoints() async throws -> [WebhookEndpoint] {
        var statement = SQLStatement()
        statement.sql = """
            SELECT \(WebhookEndpoint.storedColumns) FROM herald.webhook_endpoints WHERE hub = \(statement.bind(hub)) \
            ORDER BY created_at, id
            """
        return try await query(statement).map(Self.decodeEndpoint)
    }

    public func setWebhookEndpointEnabled(id: String, enabled: Bool, now: Date) async throws -> WebhookEndpoint? {
        var statement = SQLStatement()
        let hub = statement.bind(hub), id = statement.bind(id)
        // Disabling drops the endpoint's waiting events in the same statement.
        let drop = enabled ? "" : ", dropped AS (DELETE FROM herald.webhook_outbox WHERE hub = \(hub) AND endpoint_id = \(id))"
        statement.sql = """
            WITH updated AS (UPDATE herald.webhook_endpoints SET enabled = \(statement.bind(enabled)), disabled_reason = NULL, \
            updated_at = \(statement.bind(now)) WHERE hub = \(hub) AND id = \(id) RETURNING \(WebhookEndpoint.storedColumns))\(drop) \
            SELECT * FROM updated
            """
        return try await query(statement).first.map(Self.decodeEndpoint)
    }

    public func rotateWebhookSecret(id: String, to secret: WebhookSecret, previousSecretExpiresAt: Date, now: Date) async throws -> WebhookEndpoint? {
        var statement = SQLStatement()
        statement.sql = """
            UPDATE herald.webhook_endpoints SET previous_secret = secret, \
            previous_secret_expires_at = \(statement.bind(previousSecretExpiresAt)), secret = \(statement.bind(secret.text)), \
            updated_at = \(statement.bind(now)) WHERE hub = \(statement.bind(hub)) AND id = \(statement.bind(id)) \
            RETURNING \(WebhookEndpoint.storedColumns)
            """
        return try await query(statement).first.map(Self.decodeEndpoint)
    }

    public func deleteWebhookEndpoint(id: String) async throws -> Bool {
        var statement = SQLStatement()
        let hub = statement.bind(hub), id = statement.bind(id)
        statement.sql = """
            WITH outbox AS (DELETE FROM herald.webhook_outbox WHERE hub = \(hub) AND endpoint_id = \(id)), \
            attempts AS (DELETE FROM herald.webhook_attempts WHERE hub = \(hub) AND endpoint_id = \(id)) \
            DELETE FROM herald.webhook_endpoints WHERE hub = \(hub) AND id = \(id) RETURNING id
            """
        return try await !query(statement).isEmpty
    }

    public func enqueueWebhookEvents(_ events: [WebhookEvent], endpointIDs: Set<String>?) async throws -> Int {
        guard !events.isEmpty else { return 0 }
        var statement = SQLStatement()
        let hub = statement.bind(hub), now = statement.bind(now())
        let which =
            if let endpointIDs {
                "e.id = ANY(\(statement.bind(endpointIDs.sorted())))"
            } else {
                "position(',' || ev.type || ',' IN ',' || e.events || ',') > 0"
            }
        let ids = statement.bind(events.map(\.id)), types = statement.bind(events.map(\.type.rawValue))
        let bodies = statement.bind(events.map(\.body))
        statement.sql = """
            INSERT INTO herald.webhook_outbox (hub, endpoint_id, event_id, type, body, created_at, due_at, attempts) \
            SELECT \(hub), e.id, ev.id, ev.type, ev.body, \(now), \(now), 0 \
            FROM herald.webhook_endpoints e, unnest(\(ids)::text[], \(types)::text[], \(bodies)::text[]) AS ev(id, type, body) \
            WHERE e.hub = \(hub) AND e.enabled AND \(which) \
            ON CONFLICT (hub, endpoint_id, event_id) DO NOTHING RETURNING event_id
            """
        return try await query(statement).count
    }

    public func claimWebhookDeliveries(now: Date, lease: Duration, owner: String, limit: Int) async throws -> [WebhookDelivery] {
        let nowMs = now.storeMilliseconds
        let leaseUntil = nowMs.addingReportingOverflow(max(0, lease.storeMilliseconds)).partialValue
        var statement = SQLStatement()
        let hub = statement.bind(hub), now = statement.bind(nowMs)
        // Rows another node is claiming are skipped, not waited for. The rows are chosen in a
        // CTE, evaluated once: as a subquery joined in FROM, a plan could scan it again, and
        // each scan past the rows it had locked itself claimed more than `limit`.
        statement.sql = """
            WITH due AS MATERIALIZED (SELECT c.endpoint_id, c.event_id FROM herald.webhook_outbox c \
            WHERE c.hub = \(hub) AND c.due_at <= \(now) AND (c.lease_until IS NULL OR c.lease_until < \(now)) \
            AND EXISTS (SELECT 1 FROM herald.webhook_endpoints e WHERE e.hub = \(hub) AND e.id = c.endpoint_id AND e.enabled) \
            ORDER BY c.due_at, c.created_at, c.event_id LIMIT \(statement.bind(max(0, limit))) FOR UPDATE OF c SKIP LOCKED) \
            UPDATE herald.webhook_outbox o SET lease_owner = \(statement.bind(owner)), lease_until = \(statement.bind(leaseUntil)) \
            FROM due WHERE o.hub = \(hub) AND o.endpoint_id = due.endpoint_id AND o.event_id = due.event_id \
            RETURNING o.event_id, o.endpoint_id, o.type, o.body, o.created_at, o.due_at, o.attempts
            """
        let deliveries = try await query(statement).map { row throws(StoreError) in try WebhookDelivery(stored: row.byName) }
        return deliveries.sorted { ($0.dueAt, $0.createdAt, $0.eventID) < ($1.dueAt, $1.createdAt, $1.eventID) }
    }

    public func recordWebhookAttempt(_ attempt: WebhookAttempt, owner: String, retryAt: Date?) async throws {
        try await transaction { [self] connection in
            var held = SQLStatement()
            held.sql = """
                SELECT 1 FROM herald.webhook_outbox WHERE hub = \(held.bind(hub)) AND endpoint_id = \(held.bind(attempt.endpointID)) \
                AND event_id = \(held.bind(attempt.eventID)) AND lease_owner = \(held.bind(owner)) FOR UPDATE
                """
            guard try await !query(held, on: connection).isEmpty else {
                throw StoreError(code: .leaseLost, message: "the webhook event '\(attempt.eventID)' is no longer leased by this worker")
            }
            var log = SQLStatement()
            log.sql = """
                INSERT INTO herald.webhook_attempts (hub, \(WebhookAttempt.storedColumns)) VALUES (\(log.bind(hub)), \
                \(log.bind(attempt.eventID)), \(log.bind(attempt.endpointID)), \(log.bind(attempt.type.rawValue)), \
                \(log.bind(attempt.attempt)), \(log.bind(attempt.at)), \(log.bind(attempt.statusCode)), \(log.bind(attempt.error)), \
                \(log.bind(attempt.durationMilliseconds)), \(log.bind(attempt.outcome.rawValue)))
                """
            try await query(log, on: connection)
            var change = SQLStatement()
            let hub = change.bind(hub), endpoint = change.bind(attempt.endpointID)
            switch attempt.outcome {
            case .delivered:
                change.sql = """
                    DELETE FROM herald.webhook_outbox WHERE hub = \(hub) AND endpoint_id = \(endpoint) \
                    AND event_id = \(change.bind(attempt.eventID))
                    """
            case .retrying:
                change.sql = """
                    UPDATE herald.webhook_outbox SET attempts = attempts + 1, due_at = \(change.bind(retryAt ?? attempt.at)), \
                    lease_owner = NULL, lease_until = NULL \
                    WHERE hub = \(hub) AND endpoint_id = \(endpoint) AND event_id = \(change.bind(attempt.eventID))
                    """
            case .gaveUp:
                change.sql = """
                    WITH dropped AS (DELETE FROM herald.webhook_outbox WHERE hub = \(hub) AND endpoint_id = \(endpoint)) \
                    UPDATE herald.webhook_endpoints SET enabled = false, \
                    disabled_reason = \(change.bind(attempt.error ?? "every attempt failed for the retry window")), \
                    updated_at = \(change.bind(attempt.at)) WHERE hub = \(hub) AND id = \(endpoint)
                    """
            }
            try await query(change, on: connection)
        }
    }

    public func webhookAttempts(endpointID: String, limit: Int) async throws -> [WebhookAttempt] {
        var statement = SQLStatement()
        statement.sql = """
            SELECT \(WebhookAttempt.storedColumns) FROM herald.webhook_attempts \
            WHERE hub = \(statement.bind(hub)) AND endpoint_id = \(statement.bind(endpointID)) \
            ORDER BY at DESC, seq DESC LIMIT \(statement.bind(max(0, limit)))
            """
        return try await query(statement).map { row throws(StoreError) in try WebhookAttempt(stored: row.byName) }
    }

    public func pendingWebhookDeliveries(endpointID: String) async throws -> Int {
        var statement = SQLStatement()
        statement.sql = """
            SELECT count(*)::bigint AS n FROM herald.webhook_outbox \
            WHERE hub = \(statement.bind(hub)) AND endpoint_id = \(statement.bind(endpointID))
            """
        return try await query(statement).first?.byName.int("n") ?? 0
    }

    public func purgeWebhookAttempts(before date: Date) async throws -> Int {
        var statement = SQLStatement()
        statement.sql = """
            DELETE FROM herald.webhook_attempts WHERE hub = \(statement.bind(hub)) AND at < \(statement.bind(date)) RETURNING 1
            """
        return try await query(statement).count
    }
}
