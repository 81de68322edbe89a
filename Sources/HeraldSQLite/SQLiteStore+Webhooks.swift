public import Foundation
public import HeraldCore
import HeraldStore

extension SQLiteStore {
    public func createWebhookEndpoint(_ endpoint: WebhookEndpoint, limit: Int) async throws {
        let binds: [SQLiteData] = [
            .text(endpoint.id), .text(endpoint.url.absoluteString), .text(endpoint.storedEvents), .text(endpoint.secret.text),
            SQLiteData(endpoint.previousSecret?.text), SQLiteData(endpoint.previousSecretExpiresAt), .integer(endpoint.enabled ? 1 : 0),
            SQLiteData(endpoint.disabledReason), SQLiteData(endpoint.createdAt), SQLiteData(endpoint.updatedAt),
        ]
        let refusal: HeraldError? = try await write { connection in
            let count = try await connection.query("SELECT count(*) AS n FROM webhook_endpoints").first?.column("n")?.integer ?? 0
            if count >= limit { return .conflict("the hub has \(count) webhook endpoints, the most it may have") }
            let inserted = try await !connection.query(
                """
                INSERT INTO webhook_endpoints (\(WebhookEndpoint.storedColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (id) DO NOTHING RETURNING id
                """,
                binds
            ).isEmpty
            return inserted ? nil : .conflict("a webhook endpoint with id '\(endpoint.id)' exists")
        }
        if let refusal { throw refusal }
    }

    public func webhookEndpoint(id: String) async throws -> WebhookEndpoint? {
        let rows = try await read { connection in
            try await connection.query("SELECT \(WebhookEndpoint.storedColumns) FROM webhook_endpoints WHERE id = ?", [.text(id)])
        }
        return try rows.first.map(WebhookEndpoint.init(stored:))
    }

    public func webhookEndpoints() async throws -> [WebhookEndpoint] {
        let rows = try await read { connection in
            try await connection.query("SELECT \(WebhookEndpoint.storedColumns) FROM webhook_endpoints ORDER BY created_at, id")
        }
        return try rows.map(WebhookEndpoint.init(stored:))
    }

    public func setWebhookEndpointEnabled(id: String, enabled: Bool, now: Date) async throws -> WebhookEndpoint? {
        let rows = try await write { connection in
            if !enabled {
                _ = try await connection.query("DELETE FROM webhook_outbox WHERE endpoint_id = ?", [.text(id)])
            }
            return try await connection.query(
                """
                UPDATE webhook_endpoints SET enabled = ?, disabled_reason = NULL, updated_at = ? WHERE id = ?
                RETURNING \(WebhookEndpoint.storedColumns)
                """,
                [.integer(enabled ? 1 : 0), SQLiteData(now), .text(id)]
            )
        }
        return try rows.first.map(WebhookEndpoint.init(stored:))
    }

    public func rotateWebhookSecret(id: String, to secret: WebhookSecret, previousSecretExpiresAt: Date, now: Date) async throws -> WebhookEndpoint? {
        let rows = try await write { connection in
            try await connection.query(
                """
                UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_expires_at = ?, secret = ?, updated_at = ?
                WHERE id = ? RETURNING \(WebhookEndpoint.storedColumns)
                """,
                [SQLiteData(previousSecretExpiresAt), .text(secret.text), SQLiteData(now), .text(id)]
            )
        }
        return try rows.first.map(WebhookEndpoint.init(stored:))
    }

    public func deleteWebhookEndpoint(id: String) async throws -> Bool {
        try await write { connection in
            _ = try await connection.query("DELETE FROM webhook_outbox WHERE endpoint_id = ?", [.text(id)])
            _ = try await connection.query("DELETE FROM webhook_attempts WHERE endpoint_id = ?", [.text(id)])
            return try await !connection.query("DELETE FROM webhook_endpoints WHERE id = ? RETURNING id", [.text(id)]).isEmpty
        }
    }

    public func enqueueWebhookEvents(_ events: [WebhookEvent], endpointIDs: Set<String>?) async throws -> Int {
        guard !events.isEmpty else { return 0 }
        // One statement for the whole page: the events travel as one JSON array of
        // [id, type, body] and are paired with every enabled endpoint that wants them.
        let now = SQLiteData(self.now())
        let rows = try String(decoding: JSONEncoder().encode(events.map { [$0.id, $0.type.rawValue, $0.body] }), as: UTF8.self)
        var bindings: [SQLiteData] = [now, .text(rows)]
        let which: String
        if let endpointIDs {
            which = "e.id IN (SELECT value FROM json_each(?3))"
            bindings.append(.text(try String(decoding: JSONEncoder().encode(endpointIDs.sorted()), as: UTF8.self)))
        } else {
            which = "instr(',' || e.events || ',', ',' || (ev.value ->> 1) || ',') > 0"
        }
        let statementBindings = bindings
        return try await write { connection in
            try await connection.query(
                """
                INSERT INTO webhook_outbox (endpoint_id, event_id, type, body, created_at, due_at, attempts)
                SELECT e.id, ev.value ->> 0, ev.value ->> 1, ev.value ->> 2, ?1, ?1, 0
                FROM webhook_endpoints e, json_each(?2) AS ev
                WHERE e.enabled = 1 AND \(which)
                ON CONFLICT (endpoint_id, event_id) DO NOTHING RETURNING event_id
                """,
                statementBindings
            ).count
        }
    }

    public func claimWebhookDeliveries(now: Date, lease: Duration, owner: String, limit: Int) async throws -> [WebhookDelivery] {
        let nowMs = now.storeMilliseconds
        let leaseUntil = nowMs.addingReportingOverflow(max(0, lease.storeMilliseconds)).partialValue
        let rows = try await write { connection in
            try await connection.query(
                """
                UPDATE webhook_outbox SET lease_owner = ?1, lease_until = ?2
                WHERE (endpoint_id, event_id) IN (
                    SELECT o.endpoint_id, o.event_id FROM webhook_outbox o JOIN webhook_endpoints e ON e.id = o.endpoint_id
                    WHERE e.enabled = 1 AND o.due_at <= ?3 AND (o.lease_until IS NULL OR o.lease_until < ?3)
                    ORDER BY o.due_at, o.created_at, o.event_id LIMIT ?4
                )
                RETURNING \(WebhookDelivery.storedColumns)
                """,
                [.text(owner), .integer(leaseUntil), .integer(nowMs), .integer(max(0, limit))]
            )
        }
        return try rows.map(WebhookDelivery.init(stored:)).sorted { ($0.dueAt, $0.createdAt, $0.eventID) < ($1.dueAt, $1.createdAt, $1.eventID) }
    }

    public func recordWebhookAttempt(_ attempt: WebhookAttempt, owner: String, retryAt: Date?) async throws {
        let key: [SQLiteData] = [.text(attempt.endpointID), .text(attempt.eventID), .text(owner)]
        try await write { connection in
            let held = try await connection.query(
                "SELECT 1 FROM webhook_outbox WHERE endpoint_id = ? AND event_id = ? AND lease_owner = ?", key
            )
            guard !held.isEmpty else {
                throw StoreError(
                    code: .leaseLost, message: "the webhook event '\(attempt.eventID)' is no longer leased by this worker"
                )
            }
            _ = try await connection.query(
                "INSERT INTO webhook_attempts (\(WebhookAttempt.storedColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    .text(attempt.eventID), .text(attempt.endpointID), .text(attempt.type.rawValue), .integer(attempt.attempt),
                    SQLiteData(attempt.at), SQLiteData(attempt.statusCode), SQLiteData(attempt.error),
                    .integer(attempt.durationMilliseconds), .text(attempt.outcome.rawValue),
                ]
            )
            switch attempt.outcome {
            case .delivered:
                _ = try await connection.query("DELETE FROM webhook_outbox WHERE endpoint_id = ? AND event_id = ?", Array(key.prefix(2)))
            case .retrying:
                _ = try await connection.query(
                    """
                    UPDATE webhook_outbox SET attempts = attempts + 1, due_at = ?, lease_owner = NULL, lease_until = NULL
                    WHERE endpoint_id = ? AND event_id = ?
                    """,
                    [SQLiteData(retryAt ?? attempt.at)] + key.prefix(2)
                )
            case .gaveUp:
                _ = try await connection.query("DELETE FROM webhook_outbox WHERE endpoint_id = ?", [.text(attempt.endpointID)])
                _ = try await connection.query(
                    "UPDATE webhook_endpoints SET enabled = 0, disabled_reason = ?, updated_at = ? WHERE id = ?",
                    [.text(attempt.error ?? "every attempt failed for the retry window"), SQLiteData(attempt.at), .text(attempt.endpointID)]
                )
            }
        }
    }

    public func webhookAttempts(endpointID: String, limit: Int) async throws -> [WebhookAttempt] {
        let rows = try await read { connection in
            try await connection.query(
                """
                SELECT \(WebhookAttempt.storedColumns) FROM webhook_attempts WHERE endpoint_id = ?
                ORDER BY at DESC, rowid DESC LIMIT ?
                """,
                [.text(endpointID), .integer(max(0, limit))]
            )
        }
        return try rows.map(WebhookAttempt.init(stored:))
    }

    public func pendingWebhookDeliveries(endpointID: String) async throws -> Int {
        try await read { connection in
            try await connection.query("SELECT count(*) AS n FROM webhook_outbox WHERE endpoint_id = ?", [.text(endpointID)])
                .first?.column("n")?.integer ?? 0
        }
    }

    public func purgeWebhookAttempts(before date: Date) async throws -> Int {
        try await write { connection in
            try await connection.query("DELETE FROM webhook_attempts WHERE at < ? RETURNING 1", [SQLiteData(date)]).count
        }
    }
}
