import Foundation
package import HeraldCore

extension WebhookEndpoint {
    /// The columns of the `webhook_endpoints` table, in the order ``storedValues`` binds them.
    package static let storedColumns = """
        id, url, events, secret, previous_secret, previous_secret_expires_at, enabled, disabled_reason, created_at, updated_at
        """

    /// The event types as stored: sorted, comma-separated.
    package var storedEvents: String { events.sorted().map(\.rawValue).joined(separator: ",") }

    package init<Row: StoredRow>(stored row: Row) throws(StoreError) {
        guard let url = URL(string: try row.string("url")) else { throw row.corrupt("a stored webhook endpoint has an invalid URL") }
        let secretText = try row.string("secret")
        guard let secret = try? WebhookSecret(secretText) else { throw row.corrupt("a stored webhook endpoint has an invalid secret") }
        var previous: WebhookSecret?
        if let previousText = try row.optionalString("previous_secret") {
            guard let secret = try? WebhookSecret(previousText) else {
                throw row.corrupt("a stored webhook endpoint has an invalid previous secret")
            }
            previous = secret
        }
        self.init(
            id: try row.string("id"),
            url: url,
            events: Set(try row.string("events").split(separator: ",").map { WebhookEventType(rawValue: String($0)) }),
            secret: secret,
            previousSecret: previous,
            previousSecretExpiresAt: try row.optionalDate("previous_secret_expires_at"),
            enabled: try row.bool("enabled"),
            disabledReason: try row.optionalString("disabled_reason"),
            createdAt: try row.date("created_at"),
            updatedAt: try row.date("updated_at")
        )
    }
}

extension WebhookDelivery {
    package static let storedColumns = "event_id, endpoint_id, type, body, created_at, due_at, attempts"

    package init<Row: StoredRow>(stored row: Row) throws(StoreError) {
        self.init(
            eventID: try row.string("event_id"),
            endpointID: try row.string("endpoint_id"),
            type: WebhookEventType(rawValue: try row.string("type")),
            body: try row.string("body"),
            createdAt: try row.date("created_at"),
            dueAt: try row.date("due_at"),
            attempts: try row.int("attempts")
        )
    }
}

extension WebhookAttempt {
    package static let storedColumns = "event_id, endpoint_id, type, attempt, at, status_code, error, duration_ms, outcome"

    package init<Row: StoredRow>(stored row: Row) throws(StoreError) {
        guard let outcome = Outcome(rawValue: try row.string("outcome")) else {
            throw row.corrupt("a stored webhook attempt has an unknown outcome")
        }
        self.init(
            eventID: try row.string("event_id"),
            endpointID: try row.string("endpoint_id"),
            type: WebhookEventType(rawValue: try row.string("type")),
            attempt: try row.int("attempt"),
            at: try row.date("at"),
            statusCode: try row.optionalInt("status_code"),
            error: try row.optionalString("error"),
            durationMilliseconds: try row.int("duration_ms"),
            outcome: outcome
        )
    }
}
