import HeraldStore
import Logging

/// One step of the SQLite schema: SQL statements applied together, once, in order.
///
/// Migrations are never edited once released; a change to the schema is a new migration
/// with the next version. A file whose `schema_migrations` holds a version above the last
/// one known here was written by a newer Herald and is refused.
struct SQLiteMigration: Sendable {
    var version: Int
    var name: String
    var statements: [String]

    /// Every migration, in order of version.
    static let all: [SQLiteMigration] = [
        SQLiteMigration(
            version: 1,
            name: "initial schema",
            statements: [
                // Registrations. `tags` is the JSON array of the registration's tags; the
                // triggers below keep the tag index `registration_tags` in step with it, so an
                // upsert is one statement. Dates are integer milliseconds since 1970.
                """
                CREATE TABLE registrations (
                    id TEXT PRIMARY KEY NOT NULL,
                    platform TEXT NOT NULL,
                    handle TEXT NOT NULL,
                    p256dh TEXT,
                    auth TEXT,
                    owner TEXT,
                    expires_at INTEGER,
                    version INTEGER NOT NULL,
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL,
                    tags TEXT NOT NULL DEFAULT '[]'
                )
                """,
                "CREATE INDEX registrations_handle ON registrations (handle)",
                // The tag index: resolving `tag = ?` reads only that tag's rows, in id order.
                // No foreign key: a cascade would need a second index on registration_id;
                // the triggers delete by (tag, registration_id) instead.
                """
                CREATE TABLE registration_tags (
                    tag TEXT NOT NULL,
                    registration_id TEXT NOT NULL,
                    PRIMARY KEY (tag, registration_id)
                ) WITHOUT ROWID
                """,
                """
                CREATE TABLE reservations (
                    id TEXT PRIMARY KEY NOT NULL,
                    owner TEXT,
                    expires_at INTEGER NOT NULL
                ) WITHOUT ROWID
                """,
                "CREATE INDEX reservations_expires_at ON reservations (expires_at)",
                """
                CREATE TRIGGER registrations_after_insert AFTER INSERT ON registrations BEGIN
                    INSERT OR IGNORE INTO registration_tags (tag, registration_id)
                        SELECT value, NEW.id FROM json_each(NEW.tags);
                    DELETE FROM reservations WHERE id = NEW.id;
                END
                """,
                """
                CREATE TRIGGER registrations_after_update_tags AFTER UPDATE OF tags ON registrations
                WHEN OLD.tags IS NOT NEW.tags BEGIN
                    DELETE FROM registration_tags
                        WHERE tag IN (SELECT value FROM json_each(OLD.tags)) AND registration_id = OLD.id;
                    INSERT OR IGNORE INTO registration_tags (tag, registration_id)
                        SELECT value, NEW.id FROM json_each(NEW.tags);
                END
                """,
                """
                CREATE TRIGGER registrations_after_update AFTER UPDATE ON registrations BEGIN
                    DELETE FROM reservations WHERE id = NEW.id;
                END
                """,
                """
                CREATE TRIGGER registrations_after_delete AFTER DELETE ON registrations BEGIN
                    DELETE FROM registration_tags
                        WHERE tag IN (SELECT value FROM json_each(OLD.tags)) AND registration_id = OLD.id;
                    DELETE FROM reservations WHERE id = OLD.id;
                END
                """,
                """
                CREATE TABLE accounts (
                    username TEXT PRIMARY KEY NOT NULL,
                    password_hash TEXT NOT NULL,
                    created_at INTEGER NOT NULL
                ) WITHOUT ROWID
                """,
                """
                CREATE TABLE sessions (
                    token_hash TEXT PRIMARY KEY NOT NULL,
                    username TEXT NOT NULL,
                    expires_at INTEGER NOT NULL
                ) WITHOUT ROWID
                """,
                "CREATE INDEX sessions_expires_at ON sessions (expires_at)",
                """
                CREATE TABLE notifications (
                    id TEXT PRIMARY KEY NOT NULL,
                    tag_expression TEXT,
                    payloads TEXT NOT NULL,
                    state TEXT NOT NULL,
                    counts TEXT NOT NULL,
                    cursor TEXT,
                    enqueued_at INTEGER NOT NULL,
                    started_at INTEGER,
                    ended_at INTEGER,
                    lease_until INTEGER
                )
                """,
                "CREATE INDEX notifications_state ON notifications (state, enqueued_at)",
            ]
        ),
        SQLiteMigration(
            version: 2,
            name: "secure messages and rich content",
            statements: [
                // Secure-push payloads, sealed by the server before they get here. A read
                // bumps read_count in the same statement that returns the row.
                """
                CREATE TABLE secure_messages (
                    id TEXT PRIMARY KEY NOT NULL,
                    recipient TEXT NOT NULL,
                    sender TEXT NOT NULL,
                    sealed BLOB NOT NULL,
                    created_at INTEGER NOT NULL,
                    expires_at INTEGER NOT NULL,
                    read_count INTEGER NOT NULL DEFAULT 0,
                    first_read_at INTEGER
                )
                """,
                "CREATE INDEX secure_messages_expires_at ON secure_messages (expires_at)",
                // Rich content: the bytes are a file named after the id; this is who may read it.
                """
                CREATE TABLE rich_content (
                    id TEXT PRIMARY KEY NOT NULL,
                    owner TEXT NOT NULL,
                    media_type TEXT NOT NULL,
                    size INTEGER NOT NULL,
                    created_at INTEGER NOT NULL,
                    expires_at INTEGER NOT NULL
                ) WITHOUT ROWID
                """,
                "CREATE INDEX rich_content_expires_at ON rich_content (expires_at)",
                """
                CREATE TABLE rich_recipients (
                    content_id TEXT NOT NULL REFERENCES rich_content (id) ON DELETE CASCADE,
                    username TEXT NOT NULL,
                    PRIMARY KEY (content_id, username)
                ) WITHOUT ROWID
                """,
            ]
        ),
        SQLiteMigration(
            version: 3,
            name: "hub API: templates, installations, direct and scheduled sends",
            statements: [
                // A template registration's template (JSON of RegistrationTemplate; NULL for a
                // native one), its push variables (a JSON object; NULL when there are none), the
                // installation it was derived from, and whether it came in the legacy GCM form.
                "ALTER TABLE registrations ADD COLUMN template TEXT",
                "ALTER TABLE registrations ADD COLUMN push_variables TEXT",
                "ALTER TABLE registrations ADD COLUMN installation_id TEXT",
                "ALTER TABLE registrations ADD COLUMN legacy_gcm INTEGER NOT NULL DEFAULT 0",
                // Partial: a registration created directly costs no index write.
                """
                CREATE INDEX registrations_installation_id ON registrations (installation_id)
                    WHERE installation_id IS NOT NULL
                """,
                // An installation is kept whole as a JSON document; `user_id` and `tags` (the
                // installation's own tags, a JSON array) are columns so that listings use an
                // index. Its registrations live in `registrations` with `installation_id` set.
                """
                CREATE TABLE installations (
                    id TEXT PRIMARY KEY NOT NULL,
                    user_id TEXT,
                    tags TEXT NOT NULL DEFAULT '[]',
                    document TEXT NOT NULL,
                    version INTEGER NOT NULL,
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL
                )
                """,
                """
                CREATE INDEX installations_user_id ON installations (user_id, id)
                    WHERE user_id IS NOT NULL
                """,
                // The installations' tag index, kept in step with `tags` by triggers as
                // `registration_tags` is.
                """
                CREATE TABLE installation_tags (
                    tag TEXT NOT NULL,
                    installation_id TEXT NOT NULL,
                    PRIMARY KEY (tag, installation_id)
                ) WITHOUT ROWID
                """,
                """
                CREATE TRIGGER installations_after_insert AFTER INSERT ON installations BEGIN
                    INSERT OR IGNORE INTO installation_tags (tag, installation_id)
                        SELECT value, NEW.id FROM json_each(NEW.tags);
                END
                """,
                """
                CREATE TRIGGER installations_after_update_tags AFTER UPDATE OF tags ON installations
                WHEN OLD.tags IS NOT NEW.tags BEGIN
                    DELETE FROM installation_tags
                        WHERE tag IN (SELECT value FROM json_each(OLD.tags)) AND installation_id = OLD.id;
                    INSERT OR IGNORE INTO installation_tags (tag, installation_id)
                        SELECT value, NEW.id FROM json_each(NEW.tags);
                END
                """,
                """
                CREATE TRIGGER installations_after_delete AFTER DELETE ON installations BEGIN
                    DELETE FROM installation_tags
                        WHERE tag IN (SELECT value FROM json_each(OLD.tags)) AND installation_id = OLD.id;
                END
                """,
                // A template send's properties (JSON of TemplateSend), a direct send's devices
                // (JSON array of DirectTarget), and when a scheduled send is due.
                "ALTER TABLE notifications ADD COLUMN template TEXT",
                "ALTER TABLE notifications ADD COLUMN direct_targets TEXT",
                "ALTER TABLE notifications ADD COLUMN scheduled_at INTEGER",
                "CREATE INDEX notifications_scheduled ON notifications (state, scheduled_at)",
            ]
        ),
        SQLiteMigration(
            version: 4,
            name: "the owner of a delivery lease",
            statements: [
                // Who holds the lease of a processing notification: progress and the final state
                // are saved only by the worker that holds it.
                "ALTER TABLE notifications ADD COLUMN lease_owner TEXT"
            ]
        ),
        SQLiteMigration(
            version: 5,
            name: "partitions of large notifications",
            statements: [
                // A partition is a notification row of its own: part_of names the notification it
                // belongs to, upper_bound the last registration id it delivers to.
                "ALTER TABLE notifications ADD COLUMN part_of TEXT",
                "ALTER TABLE notifications ADD COLUMN upper_bound TEXT",
                "CREATE INDEX notifications_part_of ON notifications (part_of) WHERE part_of IS NOT NULL",
            ]
        ),
        SQLiteMigration(
            version: 6,
            name: "rich content bytes in the store",
            statements: [
                // The bytes of rich content, until now files in the data directory (moved in by
                // SQLiteStore.importRichContentFiles(directory:)). A table of their own, with a
                // rowid, so that large values do not weigh on the metadata's reads.
                """
                CREATE TABLE rich_content_bytes (
                    content_id TEXT PRIMARY KEY NOT NULL REFERENCES rich_content (id) ON DELETE CASCADE,
                    bytes BLOB NOT NULL
                )
                """
            ]
        ),
        SQLiteMigration(
            version: 7,
            name: "export and import jobs",
            statements: [
                // A job and its two files (its output and the lines it could not apply), which
                // grow page by page as it runs; the lease is held as a notification's is.
                """
                CREATE TABLE jobs (
                    id TEXT PRIMARY KEY NOT NULL,
                    kind TEXT NOT NULL,
                    state TEXT NOT NULL,
                    processed INTEGER NOT NULL DEFAULT 0,
                    total INTEGER,
                    succeeded INTEGER NOT NULL DEFAULT 0,
                    failed INTEGER NOT NULL DEFAULT 0,
                    cursor TEXT,
                    input_file TEXT,
                    failure TEXT,
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL,
                    lease_owner TEXT,
                    lease_until INTEGER,
                    output TEXT NOT NULL DEFAULT '',
                    failures TEXT NOT NULL DEFAULT ''
                )
                """,
                "CREATE INDEX jobs_state ON jobs (state, created_at)",
                // Files uploaded for jobs: the inputs of imports.
                """
                CREATE TABLE job_files (
                    name TEXT PRIMARY KEY NOT NULL,
                    bytes BLOB NOT NULL,
                    created_at INTEGER NOT NULL
                )
                """,
            ]
        ),
        SQLiteMigration(
            version: 8,
            name: "the trace a notification was accepted in",
            statements: [
                // The W3C traceparent of the span that accepted the notification (NULL when
                // tracing is off): its delivery's spans join that trace.
                "ALTER TABLE notifications ADD COLUMN trace_context TEXT"
            ]
        ),
        SQLiteMigration(
            version: 9,
            name: "the history of notifications",
            statements: [
                // The notifications accepted, newest first, per state (an operator's history):
                // whole notifications only, in (enqueued_at, id) order.
                "CREATE INDEX notifications_history ON notifications (state, enqueued_at, id) WHERE part_of IS NULL",
                // The split ones, whose partitions may give them another state than their row's.
                """
                CREATE INDEX notifications_split ON notifications (enqueued_at, id)
                    WHERE part_of IS NULL AND upper_bound IS NOT NULL
                """,
            ]
        ),
        SQLiteMigration(
            version: 10,
            name: "job files and outputs in chunks",
            statements: [
                // A job's output and failures, one chunk a saved page (file 0 the output, 1
                // the failures), appended by an INSERT: a page never rewrites what came before.
                """
                CREATE TABLE job_output_chunks (
                    job_id TEXT NOT NULL,
                    file INTEGER NOT NULL,
                    sequence INTEGER NOT NULL,
                    size INTEGER NOT NULL,
                    bytes BLOB NOT NULL,
                    PRIMARY KEY (job_id, file, sequence)
                )
                """,
                // Outputs written so far become each job's first chunk.
                """
                INSERT INTO job_output_chunks (job_id, file, sequence, size, bytes)
                SELECT id, 0, 0, length(CAST(output AS BLOB)), CAST(output AS BLOB) FROM jobs WHERE output <> ''
                """,
                """
                INSERT INTO job_output_chunks (job_id, file, sequence, size, bytes)
                SELECT id, 1, 0, length(CAST(failures AS BLOB)), CAST(failures AS BLOB) FROM jobs WHERE failures <> ''
                """,
                """
                CREATE TABLE jobs_chunked (
                    id TEXT PRIMARY KEY NOT NULL,
                    kind TEXT NOT NULL,
                    state TEXT NOT NULL,
                    processed INTEGER NOT NULL DEFAULT 0,
                    total INTEGER,
                    succeeded INTEGER NOT NULL DEFAULT 0,
                    failed INTEGER NOT NULL DEFAULT 0,
                    cursor TEXT,
                    input_file TEXT,
                    failure TEXT,
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL,
                    lease_owner TEXT,
                    lease_until INTEGER
                )
                """,
                """
                INSERT INTO jobs_chunked SELECT id, kind, state, processed, total, succeeded, failed, cursor, input_file, failure,
                    created_at, updated_at, lease_owner, lease_until FROM jobs
                """,
                "DROP TABLE jobs",
                "ALTER TABLE jobs_chunked RENAME TO jobs",
                "CREATE INDEX jobs_state ON jobs (state, created_at)",
                // Uploaded files: the chunks of each upload (a random id), and the upload each
                // name holds now. An upload becomes a file only once complete; the chunks of one
                // never completed are swept.
                """
                CREATE TABLE job_file_chunks (
                    upload TEXT NOT NULL,
                    sequence INTEGER NOT NULL,
                    size INTEGER NOT NULL,
                    bytes BLOB NOT NULL,
                    created_at INTEGER NOT NULL,
                    PRIMARY KEY (upload, sequence)
                )
                """,
                """
                INSERT INTO job_file_chunks (upload, sequence, size, bytes, created_at)
                SELECT 'migrated-' || name, 0, length(bytes), bytes, created_at FROM job_files WHERE length(bytes) > 0
                """,
                """
                CREATE TABLE job_files_chunked (
                    name TEXT PRIMARY KEY NOT NULL,
                    upload TEXT NOT NULL,
                    size INTEGER NOT NULL,
                    created_at INTEGER NOT NULL
                )
                """,
                "INSERT INTO job_files_chunked SELECT name, 'migrated-' || name, length(bytes), created_at FROM job_files",
                "DROP TABLE job_files",
                "ALTER TABLE job_files_chunked RENAME TO job_files",
                "CREATE INDEX job_files_created_at ON job_files (created_at)",
                "CREATE INDEX job_file_chunks_created_at ON job_file_chunks (created_at)",
            ]
        ),
        SQLiteMigration(
            version: 11,
            name: "idempotency keys of sends",
            statements: [
                // The Idempotency-Key a notification was sent under, in its scope (the hub's,
                // or one user's), the SHA-256 of the request it stood for, what the first
                // answer carried beside the notification's id, and when the key is forgotten.
                // NULL for a send without a key and for partitions.
                "ALTER TABLE notifications ADD COLUMN idempotency_scope TEXT",
                "ALTER TABLE notifications ADD COLUMN idempotency_key TEXT",
                "ALTER TABLE notifications ADD COLUMN idempotency_digest TEXT",
                "ALTER TABLE notifications ADD COLUMN idempotency_answer TEXT",
                "ALTER TABLE notifications ADD COLUMN idempotency_expires_at INTEGER",
                // One notification per key and scope, whichever writer comes first.
                """
                CREATE UNIQUE INDEX notifications_idempotency_key ON notifications (idempotency_scope, idempotency_key)
                    WHERE idempotency_key IS NOT NULL
                """,
                // The sweep finds the keys whose retention ended.
                """
                CREATE INDEX notifications_idempotency_expiry ON notifications (idempotency_expires_at)
                    WHERE idempotency_key IS NOT NULL
                """,
            ]
        ),
        SQLiteMigration(
            version: 12,
            name: "webhook endpoints, outbox and delivery log",
            statements: [
                // Where the hub posts events: event types sorted and comma-separated; the
                // secret before the last rotation signs too until it expires.
                """
                CREATE TABLE webhook_endpoints (
                    id TEXT PRIMARY KEY NOT NULL,
                    url TEXT NOT NULL,
                    events TEXT NOT NULL,
                    secret TEXT NOT NULL,
                    previous_secret TEXT,
                    previous_secret_expires_at INTEGER,
                    enabled INTEGER NOT NULL,
                    disabled_reason TEXT,
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL
                )
                """,
                // One row per event and endpoint until it is delivered or given up: due at
                // due_at, tried `attempts` times, leased to the worker sending it.
                """
                CREATE TABLE webhook_outbox (
                    endpoint_id TEXT NOT NULL,
                    event_id TEXT NOT NULL,
                    type TEXT NOT NULL,
                    body TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    due_at INTEGER NOT NULL,
                    attempts INTEGER NOT NULL DEFAULT 0,
                    lease_owner TEXT,
                    lease_until INTEGER,
                    PRIMARY KEY (endpoint_id, event_id)
                ) WITHOUT ROWID
                """,
                "CREATE INDEX webhook_outbox_due ON webhook_outbox (due_at)",
                // Each endpoint's delivery log, one row per attempt.
                """
                CREATE TABLE webhook_attempts (
                    endpoint_id TEXT NOT NULL,
                    event_id TEXT NOT NULL,
                    type TEXT NOT NULL,
                    attempt INTEGER NOT NULL,
                    at INTEGER NOT NULL,
                    status_code INTEGER,
                    error TEXT,
                    duration_ms INTEGER NOT NULL,
                    outcome TEXT NOT NULL
                )
                """,
                "CREATE INDEX webhook_attempts_endpoint ON webhook_attempts (endpoint_id, at)",
                "CREATE INDEX webhook_attempts_at ON webhook_attempts (at)",
            ]
        ),
        SQLiteMigration(
            version: 13,
            name: "confirmed receipts",
            statements: [
                // One row per device that confirmed a notification, kept for de-duplication
                // until the sweep forgets it (by `at`); `device` is the digest of the device's
                // platform and push handle.
                """
                CREATE TABLE receipts (
                    notification_id TEXT NOT NULL,
                    device TEXT NOT NULL,
                    platform TEXT NOT NULL,
                    at INTEGER NOT NULL,
                    PRIMARY KEY (notification_id, device)
                ) WITHOUT ROWID
                """,
                "CREATE INDEX receipts_at ON receipts (at)",
                // How many devices confirmed each notification, per platform: kept when the
                // receipts themselves are forgotten.
                """
                CREATE TABLE receipt_counts (
                    notification_id TEXT NOT NULL,
                    platform TEXT NOT NULL,
                    confirmed INTEGER NOT NULL,
                    PRIMARY KEY (notification_id, platform)
                ) WITHOUT ROWID
                """,
            ]
        ),
        SQLiteMigration(
            version: 14,
            name: "notifications spread over a time",
            statements: [
                // The seconds a notification's sends are spread over; NULL for at once.
                "ALTER TABLE notifications ADD COLUMN spread_seconds INTEGER"
            ]
        ),
        SQLiteMigration(
            version: 15,
            name: "notifications claimed in the order they are due",
            statements: [
                // A worker claims the notification due first, of each claimable state: with
                // this index one entry, where before it sorted every waiting notification for
                // each claim (a backlog of N cost N² to drain). Only notifications a worker may
                // claim are in it; a claim names the same states so that SQLite uses it.
                """
                CREATE INDEX notifications_due ON notifications (state, coalesce(scheduled_at, enqueued_at), id)
                    WHERE state IN ('Enqueued', 'Processing', 'Scheduled')
                """
            ]
        ),
        SQLiteMigration(
            version: 16,
            name: "broadcasts kept by their channel",
            statements: [
                // The APNs broadcast channel a broadcast went to; NULL for any other send.
                "ALTER TABLE notifications ADD COLUMN broadcast_channel TEXT",
                // A channel's sends, newest first.
                """
                CREATE INDEX notifications_broadcast_channel ON notifications (broadcast_channel, enqueued_at, id)
                    WHERE broadcast_channel IS NOT NULL
                """,
            ]
        ),
        SQLiteMigration(
            version: 17,
            name: "Live Activity tokens as registrations",
            statements: [
                // What a registration's handle addresses: NULL for the app on a device,
                // 'liveactivity' for an activity's update token, 'pushtostart:<activity type>'
                // for a push-to-start token (`HandleKind`'s stored form).
                "ALTER TABLE registrations ADD COLUMN handle_kind TEXT"
            ]
        ),
        SQLiteMigration(
            version: 18,
            name: "the app backend's earlier Live Activity registrations of their kind",
            statements: [
                // The app backend registered an activity's update token, before version 17, as a
                // registration of its user (owner) with the one tag `liveactivity:<user>:<id>`.
                // Such a registration is that token: without its kind, an activity's updates
                // would reach nothing and the user's alerts would reach it. A registration
                // made through the hub's REST API has no owner and stays as it is.
                """
                UPDATE registrations SET handle_kind = 'liveactivity'
                WHERE handle_kind IS NULL AND platform = 'apns' AND owner IS NOT NULL AND installation_id IS NULL
                    AND substr(tags, 1, length('["liveactivity:' || owner || ':')) = '["liveactivity:' || owner || ':'
                    AND instr(tags, '","') = 0
                """
            ]
        ),
    ]

    static var latestVersion: Int { all.last?.version ?? 0 }

    /// Brings the database up to date in one write transaction and returns the versions it
    /// applied (none for an up-to-date file). Throws ``StoreError/Code/schemaTooNew``
    /// for a file from a newer Herald, without changing it.
    static func migrate(
        _ connection: SQLiteConnection,
        migrations: [SQLiteMigration] = all,
        path: String,
        now: Int,
        logger: Logger
    ) async throws -> [Int] {
        let latest = migrations.last?.version ?? 0
        // A migration out of place would be skipped on databases past its number.
        guard zip(migrations, migrations.dropFirst()).allSatisfy({ $0.version < $1.version }) else {
            throw StoreError(code: .database, message: "Herald's schema migrations are not in ascending order")
        }
        _ = try await connection.query("BEGIN IMMEDIATE")
        do {
            _ = try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    version INTEGER PRIMARY KEY NOT NULL,
                    name TEXT NOT NULL,
                    applied_at INTEGER NOT NULL
                )
                """
            )
            let rows = try await connection.query("SELECT coalesce(max(version), 0) AS version FROM schema_migrations")
            let current = rows.first?.column("version")?.integer ?? 0
            guard current <= latest else {
                throw StoreError(
                    code: .schemaTooNew,
                    message: "the database at \(path) has schema version \(current), written by a newer Herald; "
                        + "this version knows schema versions up to \(latest). Upgrade Herald, or use another data directory."
                )
            }
            var applied: [Int] = []
            for migration in migrations where migration.version > current {
                for statement in migration.statements {
                    _ = try await connection.query(statement)
                }
                _ = try await connection.query(
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                    [.integer(migration.version), .text(migration.name), .integer(now)]
                )
                applied.append(migration.version)
                logger.debug(
                    "Applied a schema migration",
                    metadata: ["herald.store.migration": "\(migration.version)", "herald.store.migration.name": "\(migration.name)"]
                )
            }
            _ = try await connection.query("COMMIT")
            return applied
        } catch {
            _ = try? await connection.query("ROLLBACK")
            throw error
        }
    }
}
