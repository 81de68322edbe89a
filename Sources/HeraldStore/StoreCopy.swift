package import Foundation

/// What moving a deployment from one store to another copies: the tables a hub's data lives
/// in, in an order that satisfies their references, with their columns as both stores name
/// them (a PostgreSQL table has the hub's name in a column of its own besides). Tag indexes
/// are not copied: each store's triggers rebuild them from the rows.
package enum StoreCopy {
    /// A value of a copied row, as SQLite gives it.
    package enum Value: Sendable, Hashable {
        case null
        case integer(Int)
        case text(String)
        case bytes(Data)
    }

    /// How a column is kept in PostgreSQL.
    package enum ColumnType: Sendable, Hashable {
        case text
        case bigint
        case bytea
        /// Kept as an integer 0 or 1 in SQLite.
        case boolean
        /// A JSON document, text in SQLite.
        case jsonb
        /// A JSON array of strings in SQLite, `text[]` in PostgreSQL.
        case textArray
    }

    package struct Table: Sendable {
        package var name: String
        package var columns: [(name: String, type: ColumnType)]
        /// The primary key's columns: rows are read in its order, a batch at a time.
        package var key: [String]
        /// Rows per batch: fewer for tables of large values.
        package var batchSize: Int

        package var columnNames: [String] { columns.map(\.name) }
    }

    package static let tables: [Table] = [
        Table(
            name: "installations",
            columns: [
                ("id", .text), ("user_id", .text), ("tags", .textArray), ("document", .jsonb), ("version", .bigint),
                ("created_at", .bigint), ("updated_at", .bigint),
            ],
            key: ["id"], batchSize: 500
        ),
        Table(
            name: "registrations",
            columns: [
                ("id", .text), ("platform", .text), ("handle", .text), ("p256dh", .text), ("auth", .text), ("owner", .text),
                ("expires_at", .bigint), ("version", .bigint), ("created_at", .bigint), ("updated_at", .bigint),
                ("tags", .textArray), ("template", .text), ("push_variables", .text), ("installation_id", .text),
                ("legacy_gcm", .boolean), ("handle_kind", .text),
            ],
            key: ["id"], batchSize: 1000
        ),
        Table(name: "reservations", columns: [("id", .text), ("owner", .text), ("expires_at", .bigint)], key: ["id"], batchSize: 1000),
        Table(
            name: "accounts", columns: [("username", .text), ("password_hash", .text), ("created_at", .bigint)],
            key: ["username"], batchSize: 1000
        ),
        Table(
            name: "sessions", columns: [("token_hash", .text), ("username", .text), ("expires_at", .bigint)],
            key: ["token_hash"], batchSize: 1000
        ),
        Table(
            name: "notifications",
            columns: [
                ("id", .text), ("tag_expression", .text), ("payloads", .text), ("template", .text), ("direct_targets", .text),
                ("state", .text), ("counts", .text), ("cursor", .text), ("enqueued_at", .bigint), ("scheduled_at", .bigint),
                ("started_at", .bigint), ("ended_at", .bigint), ("lease_until", .bigint), ("lease_owner", .text),
                ("part_of", .text), ("upper_bound", .text), ("trace_context", .text), ("spread_seconds", .bigint), ("broadcast_channel", .text),
                ("idempotency_scope", .text),
                ("idempotency_key", .text), ("idempotency_digest", .text), ("idempotency_answer", .text),
                ("idempotency_expires_at", .bigint),
            ],
            key: ["id"], batchSize: 200
        ),
        Table(
            name: "secure_messages",
            columns: [
                ("id", .text), ("recipient", .text), ("sender", .text), ("sealed", .bytea), ("created_at", .bigint),
                ("expires_at", .bigint), ("read_count", .bigint), ("first_read_at", .bigint),
            ],
            key: ["id"], batchSize: 500
        ),
        Table(
            name: "rich_content",
            columns: [
                ("id", .text), ("owner", .text), ("media_type", .text), ("size", .bigint), ("created_at", .bigint),
                ("expires_at", .bigint),
            ],
            key: ["id"], batchSize: 1000
        ),
        Table(name: "rich_recipients", columns: [("content_id", .text), ("username", .text)], key: ["content_id", "username"], batchSize: 1000),
        // Up to the largest upload each (10 MB by default): a few at a time.
        Table(name: "rich_content_bytes", columns: [("content_id", .text), ("bytes", .bytea)], key: ["content_id"], batchSize: 4),
        // Export and import jobs, their outputs in chunks (one a saved page), and the files
        // uploaded for them (chunks of up to 1 MiB, and the upload each name holds).
        Table(
            name: "jobs",
            columns: [
                ("id", .text), ("kind", .text), ("state", .text), ("processed", .bigint), ("total", .bigint), ("succeeded", .bigint),
                ("failed", .bigint), ("cursor", .text), ("input_file", .text), ("failure", .text), ("created_at", .bigint),
                ("updated_at", .bigint), ("lease_owner", .text), ("lease_until", .bigint),
            ],
            key: ["id"], batchSize: 500
        ),
        Table(
            name: "job_output_chunks",
            columns: [("job_id", .text), ("file", .bigint), ("sequence", .bigint), ("size", .bigint), ("bytes", .bytea)],
            key: ["job_id", "file", "sequence"], batchSize: 16
        ),
        Table(
            name: "job_files", columns: [("name", .text), ("upload", .text), ("size", .bigint), ("created_at", .bigint)],
            key: ["name"], batchSize: 500
        ),
        Table(
            name: "job_file_chunks",
            columns: [("upload", .text), ("sequence", .bigint), ("size", .bigint), ("bytes", .bytea), ("created_at", .bigint)],
            key: ["upload", "sequence"], batchSize: 4
        ),
        // Confirmed receipts: the counts, and the receipts still remembered for de-duplication.
        Table(
            name: "receipt_counts",
            columns: [("notification_id", .text), ("platform", .text), ("confirmed", .bigint)],
            key: ["notification_id", "platform"], batchSize: 1000
        ),
        Table(
            name: "receipts",
            columns: [("notification_id", .text), ("device", .text), ("platform", .text), ("at", .bigint)],
            key: ["notification_id", "device"], batchSize: 1000
        ),
        // Webhook endpoints and the events waiting for them; the delivery log (attempts) is
        // not copied.
        Table(
            name: "webhook_endpoints",
            columns: [
                ("id", .text), ("url", .text), ("events", .text), ("secret", .text), ("previous_secret", .text),
                ("previous_secret_expires_at", .bigint), ("enabled", .boolean), ("disabled_reason", .text), ("created_at", .bigint),
                ("updated_at", .bigint),
            ],
            key: ["id"], batchSize: 500
        ),
        Table(
            name: "webhook_outbox",
            columns: [
                ("endpoint_id", .text), ("event_id", .text), ("type", .text), ("body", .text), ("created_at", .bigint),
                ("due_at", .bigint), ("attempts", .bigint), ("lease_owner", .text), ("lease_until", .bigint),
            ],
            key: ["endpoint_id", "event_id"], batchSize: 200
        ),
    ]
}
