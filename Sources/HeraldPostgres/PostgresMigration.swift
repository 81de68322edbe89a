import HeraldStore
import Logging
import PostgresNIO

/// One step of the PostgreSQL schema: SQL statements applied together, once, in order.
///
/// Every table lives in the schema `herald` and has a `hub` column: one database holds every
/// hub. Keys and tags are `COLLATE "C"`, so that ids sort byte by byte as they do in SQLite
/// (cursors and the range of installation-derived ids depend on it). Dates are `bigint`
/// milliseconds since 1970, as in the SQLite store, so a copy between stores changes nothing.
///
/// Migrations are never edited once released; a change is a new migration with the next
/// version. Several nodes starting at once take a transaction-level advisory lock first, so
/// exactly one of them applies each migration and the others find it applied.
struct PostgresMigration: Sendable {
    var version: Int
    var name: String
    var statements: [String]

    /// The advisory lock that serializes migrations (an arbitrary constant: "herald" in ASCII).
    static let lockKey: Int64 = 0x6865_7261_6C64

    static let all: [PostgresMigration] = [
        PostgresMigration(
            version: 1,
            name: "hubs, registrations, installations, accounts, notifications, content",
            statements: [
                // Hub definitions (rules, keys, push credentials) as the catalog writes them; a
                // revision from a sequence changes with every write, so a node tells whether its
                // cached definition is current with one small query. Names are unique whatever
                // their case.
                """
                CREATE TABLE herald.hubs (
                    name text COLLATE "C" PRIMARY KEY,
                    document text NOT NULL,
                    revision bigint NOT NULL,
                    created_at timestamptz NOT NULL DEFAULT now()
                )
                """,
                "CREATE UNIQUE INDEX hubs_lower_name ON herald.hubs (lower(name))",
                "CREATE SEQUENCE herald.hub_revisions",
                """
                CREATE TABLE herald.registrations (
                    hub text COLLATE "C" NOT NULL,
                    id text COLLATE "C" NOT NULL,
                    platform text NOT NULL,
                    handle text COLLATE "C" NOT NULL,
                    p256dh text,
                    auth text,
                    owner text COLLATE "C",
                    expires_at bigint,
                    version bigint NOT NULL,
                    created_at bigint NOT NULL,
                    updated_at bigint NOT NULL,
                    tags text[] COLLATE "C" NOT NULL DEFAULT '{}',
                    template text,
                    push_variables text,
                    installation_id text COLLATE "C",
                    legacy_gcm boolean NOT NULL DEFAULT false,
                    PRIMARY KEY (hub, id)
                )
                """,
                "CREATE INDEX registrations_handle ON herald.registrations (hub, handle)",
                """
                CREATE INDEX registrations_installation_id ON herald.registrations (hub, installation_id)
                    WHERE installation_id IS NOT NULL
                """,
                // The tag index: resolving `tag = $n` walks only that tag's rows, in id order.
                // Kept in step with `registrations.tags` by the trigger below.
                """
                CREATE TABLE herald.registration_tags (
                    hub text COLLATE "C" NOT NULL,
                    tag text COLLATE "C" NOT NULL,
                    registration_id text COLLATE "C" NOT NULL,
                    PRIMARY KEY (hub, tag, registration_id)
                )
                """,
                """
                CREATE TABLE herald.reservations (
                    hub text COLLATE "C" NOT NULL,
                    id text COLLATE "C" NOT NULL,
                    owner text COLLATE "C",
                    expires_at bigint NOT NULL,
                    PRIMARY KEY (hub, id)
                )
                """,
                "CREATE INDEX reservations_expires_at ON herald.reservations (hub, expires_at)",
                // A write of a registration keeps the tag index in step and consumes a
                // reservation of its id; a delete removes both.
                """
                CREATE FUNCTION herald.registrations_changed() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND OLD.tags IS DISTINCT FROM NEW.tags) THEN
                        DELETE FROM herald.registration_tags
                            WHERE hub = OLD.hub AND tag = ANY (OLD.tags) AND registration_id = OLD.id;
                    END IF;
                    IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND OLD.tags IS DISTINCT FROM NEW.tags) THEN
                        INSERT INTO herald.registration_tags (hub, tag, registration_id)
                            SELECT NEW.hub, t, NEW.id FROM unnest(NEW.tags) AS t ON CONFLICT DO NOTHING;
                    END IF;
                    IF TG_OP = 'DELETE' THEN
                        DELETE FROM herald.reservations WHERE hub = OLD.hub AND id = OLD.id;
                    ELSE
                        DELETE FROM herald.reservations WHERE hub = NEW.hub AND id = NEW.id;
                    END IF;
                    RETURN NULL;
                END
                $$
                """,
                """
                CREATE TRIGGER registrations_changed AFTER INSERT OR UPDATE OR DELETE ON herald.registrations
                    FOR EACH ROW EXECUTE FUNCTION herald.registrations_changed()
                """,
                // An installation is kept whole as a JSON document; its user id and own tags are
                // columns for the listings' indexes. Its registrations live in `registrations`.
                """
                CREATE TABLE herald.installations (
                    hub text COLLATE "C" NOT NULL,
                    id text COLLATE "C" NOT NULL,
                    user_id text COLLATE "C",
                    tags text[] COLLATE "C" NOT NULL DEFAULT '{}',
                    document jsonb NOT NULL,
                    version bigint NOT NULL,
                    created_at bigint NOT NULL,
                    updated_at bigint NOT NULL,
                    PRIMARY KEY (hub, id)
                )
                """,
                "CREATE INDEX installations_user_id ON herald.installations (hub, user_id, id) WHERE user_id IS NOT NULL",
                """
                CREATE TABLE herald.installation_tags (
                    hub text COLLATE "C" NOT NULL,
                    tag text COLLATE "C" NOT NULL,
                    installation_id text COLLATE "C" NOT NULL,
                    PRIMARY KEY (hub, tag, installation_id)
                )
                """,
                """
                CREATE FUNCTION herald.installations_changed() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND OLD.tags IS DISTINCT FROM NEW.tags) THEN
                        DELETE FROM herald.installation_tags
                            WHERE hub = OLD.hub AND tag = ANY (OLD.tags) AND installation_id = OLD.id;
                    END IF;
                    IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND OLD.tags IS DISTINCT FROM NEW.tags) THEN
                        INSERT INTO herald.installation_tags (hub, tag, installation_id)
                            SELECT NEW.hub, t, NEW.id FROM unnest(NEW.tags) AS t ON CONFLICT DO NOTHING;
                    END IF;
                    RETURN NULL;
                END
                $$
                """,
                """
                CREATE TRIGGER installations_changed AFTER INSERT OR UPDATE OR DELETE ON herald.installations
                    FOR EACH ROW EXECUTE FUNCTION herald.installations_changed()
                """,
                """
                CREATE TABLE herald.accounts (
                    hub text COLLATE "C" NOT NULL,
                    username text COLLATE "C" NOT NULL,
                    password_hash text NOT NULL,
                    created_at bigint NOT NULL,
                    PRIMARY KEY (hub, username)
                )
                """,
                """
                CREATE TABLE herald.sessions (
                    hub text COLLATE "C" NOT NULL,
                    token_hash text COLLATE "C" NOT NULL,
                    username text COLLATE "C" NOT NULL,
                    expires_at bigint NOT NULL,
                    PRIMARY KEY (hub, token_hash)
                )
                """,
                "CREATE INDEX sessions_expires_at ON herald.sessions (hub, expires_at)",
                """
                CREATE TABLE herald.notifications (
                    hub text COLLATE "C" NOT NULL,
                    id text COLLATE "C" NOT NULL,
                    tag_expression text,
                    payloads text NOT NULL,
                    template text,
                    direct_targets text,
                    state text NOT NULL,
                    counts text NOT NULL,
                    cursor text COLLATE "C",
                    enqueued_at bigint NOT NULL,
                    scheduled_at bigint,
                    started_at bigint,
                    ended_at bigint,
                    lease_until bigint,
                    lease_owner text,
                    PRIMARY KEY (hub, id)
                )
                """,
                // Only the notifications a worker may claim are indexed: finished ones cost nothing.
                // (The states are NotificationState's raw values.)
                """
                CREATE INDEX notifications_waiting ON herald.notifications (hub, (coalesce(scheduled_at, enqueued_at)), id)
                    WHERE state IN ('Enqueued', 'Processing', 'Scheduled')
                """,
                """
                CREATE TABLE herald.secure_messages (
                    hub text COLLATE "C" NOT NULL,
                    id text COLLATE "C" NOT NULL,
                    recipient text COLLATE "C" NOT NULL,
                    sender text NOT NULL,
                    sealed bytea NOT NULL,
                    created_at bigint NOT NULL,
                    expires_at bigint NOT NULL,
                    read_count bigint NOT NULL DEFAULT 0,
                    first_read_at bigint,
                    PRIMARY KEY (hub, id)
                )
                """,
                "CREATE INDEX secure_messages_expires_at ON herald.secure_messages (hub, expires_at)",
                """
                CREATE TABLE herald.rich_content (
                    hub text COLLATE "C" NOT NULL,
                    id text COLLATE "C" NOT NULL,
                    owner text COLLATE "C" NOT NULL,
                    media_type text NOT NULL,
                    size bigint NOT NULL,
                    created_at bigint NOT NULL,
                    expires_at bigint NOT NULL,
                    PRIMARY KEY (hub, id)
                )
                """,
                "CREATE INDEX rich_content_expires_at ON herald.rich_content (hub, expires_at)",
                """
                CREATE TABLE herald.rich_recipients (
                    hub text COLLATE "C" NOT NULL,
                    content_id text COLLATE "C" NOT NULL,
                    username text COLLATE "C" NOT NULL,
                    PRIMARY KEY (hub, content_id, username),
                    FOREIGN KEY (hub, content_id) REFERENCES herald.rich_content (hub, id) ON DELETE CASCADE
                )
                """,
            ]
        ),
        PostgresMigration(
            version: 2,
            name: "settings every node shares",
            statements: [
                // Values every node must agree on, written once by the first node that needs
                // them: the server's VAPID key (Web Push subscriptions are bound to it), and the
                // fingerprint (not the key) of the secure-payload key.
                """
                CREATE TABLE herald.settings (
                    name text COLLATE "C" PRIMARY KEY,
                    value text NOT NULL,
                    created_at timestamptz NOT NULL DEFAULT now()
                )
                """
            ]
        ),
        PostgresMigration(
            version: 3,
            name: "partitions of large notifications",
            statements: [
                // A partition is a notification row of its own: part_of names the notification it
                // belongs to, upper_bound the last registration id it delivers to.
                "ALTER TABLE herald.notifications ADD COLUMN part_of text COLLATE \"C\", ADD COLUMN upper_bound text COLLATE \"C\"",
                "CREATE INDEX notifications_part_of ON herald.notifications (hub, part_of) WHERE part_of IS NOT NULL",
            ]
        ),
        PostgresMigration(
            version: 4,
            name: "rich content bytes in the database",
            statements: [
                // The bytes of rich content, so that every node serves any content.
                """
                CREATE TABLE herald.rich_content_bytes (
                    hub text COLLATE "C" NOT NULL,
                    content_id text COLLATE "C" NOT NULL,
                    bytes bytea NOT NULL,
                    PRIMARY KEY (hub, content_id),
                    FOREIGN KEY (hub, content_id) REFERENCES herald.rich_content (hub, id) ON DELETE CASCADE
                )
                """
            ]
        ),
        PostgresMigration(
            version: 5,
            name: "the nodes sharing the database",
            statements: [
                // Each running node's last report (every 10 s): how many nodes share the hub
                // API's rate limit.
                """
                CREATE TABLE herald.nodes (
                    id text COLLATE "C" PRIMARY KEY,
                    started_at timestamptz NOT NULL DEFAULT now(),
                    seen_at timestamptz NOT NULL
                )
                """
            ]
        ),
        PostgresMigration(
            version: 6,
            name: "statements that fail when a registry rule does not hold",
            statements: [
                // `herald.fail_unless(ok, message)` ends the statement (and so everything it
                // wrote) with SQLSTATE HR409 when `ok` is false: one statement can then write an
                // installation and its registrations and still be all or nothing.
                """
                CREATE FUNCTION herald.fail_unless(ok boolean, message text) RETURNS boolean
                LANGUAGE plpgsql AS $$
                BEGIN
                    IF NOT ok THEN
                        RAISE EXCEPTION USING ERRCODE = 'HR409', MESSAGE = message;
                    END IF;
                    RETURN true;
                END
                $$
                """
            ]
        ),
        PostgresMigration(
            version: 7,
            name: "export and import jobs",
            statements: [
                // A job and its two files (its output and the lines it could not apply), which
                // grow page by page as it runs; the lease is held as a notification's is.
                """
                CREATE TABLE herald.jobs (
                    hub text COLLATE "C" NOT NULL,
                    id text COLLATE "C" NOT NULL,
                    kind text NOT NULL,
                    state text NOT NULL,
                    processed bigint NOT NULL DEFAULT 0,
                    total bigint,
                    succeeded bigint NOT NULL DEFAULT 0,
                    failed bigint NOT NULL DEFAULT 0,
                    cursor text COLLATE "C",
                    input_file text COLLATE "C",
                    failure text,
                    created_at bigint NOT NULL,
                    updated_at bigint NOT NULL,
                    lease_owner text,
                    lease_until bigint,
                    output text NOT NULL DEFAULT '',
                    failures text NOT NULL DEFAULT '',
                    PRIMARY KEY (hub, id)
                )
                """,
                "CREATE INDEX jobs_state ON herald.jobs (hub, state, created_at)",
                // Files uploaded for jobs: the inputs of imports.
                """
                CREATE TABLE herald.job_files (
                    hub text COLLATE "C" NOT NULL,
                    name text COLLATE "C" NOT NULL,
                    bytes bytea NOT NULL,
                    created_at bigint NOT NULL,
                    PRIMARY KEY (hub, name)
                )
                """,
            ]
        ),
        PostgresMigration(
            version: 8,
            name: "the trace a notification was accepted in",
            statements: [
                // The W3C traceparent of the span that accepted the notification (NULL when
                // tracing is off): its delivery's spans join that trace.
                "ALTER TABLE herald.notifications ADD COLUMN trace_context text"
            ]
        ),
        PostgresMigration(
            version: 9,
            name: "the history of notifications",
            statements: [
                // The notifications accepted, newest first, per state (an operator's history):
                // whole notifications only, in (enqueued_at, id) order.
                """
                CREATE INDEX notifications_history ON herald.notifications (hub, state, enqueued_at, id)
                    WHERE part_of IS NULL
                """,
                // The split ones, whose partitions may give them another state than their row's.
                """
                CREATE INDEX notifications_split ON herald.notifications (hub, enqueued_at, id)
                    WHERE part_of IS NULL AND upper_bound IS NOT NULL
                """,
            ]
        ),
        PostgresMigration(
            version: 10,
            name: "job files and outputs in chunks",
            statements: [
                // A job's output and failures, one chunk a saved page (file 0 the output, 1
                // the failures), appended by an INSERT: a page never rewrites what came before.
                """
                CREATE TABLE herald.job_output_chunks (
                    hub text COLLATE "C" NOT NULL,
                    job_id text COLLATE "C" NOT NULL,
                    file integer NOT NULL,
                    sequence integer NOT NULL,
                    size bigint NOT NULL,
                    bytes bytea NOT NULL,
                    PRIMARY KEY (hub, job_id, file, sequence)
                )
                """,
                // Outputs written so far become each job's first chunk.
                """
                INSERT INTO herald.job_output_chunks (hub, job_id, file, sequence, size, bytes)
                SELECT hub, id, 0, 0, octet_length(output), convert_to(output, 'UTF8') FROM herald.jobs WHERE output <> ''
                """,
                """
                INSERT INTO herald.job_output_chunks (hub, job_id, file, sequence, size, bytes)
                SELECT hub, id, 1, 0, octet_length(failures), convert_to(failures, 'UTF8') FROM herald.jobs WHERE failures <> ''
                """,
                "ALTER TABLE herald.jobs DROP COLUMN output, DROP COLUMN failures",
                // Uploaded files: the chunks of each upload (a random id), and the upload each
                // name holds now. An upload becomes a file only once complete; the chunks of one
                // never completed are swept.
                """
                CREATE TABLE herald.job_file_chunks (
                    hub text COLLATE "C" NOT NULL,
                    upload text COLLATE "C" NOT NULL,
                    sequence integer NOT NULL,
                    size bigint NOT NULL,
                    bytes bytea NOT NULL,
                    created_at bigint NOT NULL,
                    PRIMARY KEY (hub, upload, sequence)
                )
                """,
                """
                INSERT INTO herald.job_file_chunks (hub, upload, sequence, size, bytes, created_at)
                SELECT hub, 'migrated-' || name, 0, octet_length(bytes), bytes, created_at FROM herald.job_files WHERE octet_length(bytes) > 0
                """,
                "ALTER TABLE herald.job_files ADD COLUMN upload text COLLATE \"C\", ADD COLUMN size bigint",
                "UPDATE herald.job_files SET upload = 'migrated-' || name, size = octet_length(bytes)",
                """
                ALTER TABLE herald.job_files DROP COLUMN bytes, ALTER COLUMN upload SET NOT NULL, ALTER COLUMN size SET NOT NULL
                """,
                "CREATE INDEX job_files_created_at ON herald.job_files (hub, created_at)",
                "CREATE INDEX job_file_chunks_created_at ON herald.job_file_chunks (hub, created_at)",
            ]
        ),
        PostgresMigration(
            version: 11,
            name: "registration writes applied together",
            statements: [
                // Writes many registrations (distinct ids) in one call, each under its own
                // condition, and answers for each what it found and whether it wrote. It first
                // takes the transaction-level advisory locks `p_locks` in the order given (the
                // keys the store's `lock` takes: a conditional write's id, a replacing write's
                // device), so that writers on any node take turns as before; the statement that
                // follows then reads, with a snapshot taken after the locks, what is stored:
                //   - a row whose id is a registration is written unless `want_owner` is set and
                //     differs from the stored owner;
                //   - a row whose id is not is written unless `must_exist`, or `must_be_issued`
                //     without a live reservation of the id;
                //   - a written row with `replaces` deletes the other registrations of its
                //     platform and handle (not those of installations, nor those written here).
                // Tags come flattened: row n has the `p_tag_counts[n]` tags after those of the
                // rows before it. One result per row, in order: `found` says whether the id was
                // a registration, `found_owner` its owner, `issued` whether a live reservation
                // held it (read only for `must_be_issued`); `written` with the version and
                // creation time the write returned.
                """
                CREATE FUNCTION herald.save_registrations(
                    p_hub text, p_locks text[], p_ids text[], p_platforms text[], p_handles text[], p_p256dh text[],
                    p_auth text[], p_owners text[], p_expires_at bigint[], p_created_at bigint[], p_updated_at bigint[],
                    p_tag_counts integer[], p_tags text[], p_templates text[], p_push_variables text[],
                    p_installation_ids text[], p_legacy_gcm boolean[], p_must_exist boolean[], p_must_be_issued boolean[],
                    p_want_owners text[], p_replaces boolean[]
                ) RETURNS TABLE (ord bigint, written boolean, version bigint, created_at bigint, found boolean,
                    found_owner text, issued boolean)
                LANGUAGE plpgsql AS $$
                #variable_conflict use_column
                DECLARE
                    k text;
                BEGIN
                    FOREACH k IN ARRAY p_locks LOOP
                        PERFORM pg_advisory_xact_lock(hashtextextended(p_hub || chr(31) || k, 0));
                    END LOOP;
                    RETURN QUERY
                    WITH input AS (
                        SELECT x.*, (sum(x.tag_count) OVER (ORDER BY x.n) - x.tag_count)::integer AS tag_offset
                        FROM unnest(p_ids, p_platforms, p_handles, p_p256dh, p_auth, p_owners, p_expires_at, p_created_at,
                            p_updated_at, p_tag_counts, p_templates, p_push_variables, p_installation_ids, p_legacy_gcm,
                            p_must_exist, p_must_be_issued, p_want_owners, p_replaces) WITH ORDINALITY
                            AS x(id, platform, handle, p256dh, auth, owner, expires_at, created_at, updated_at, tag_count,
                                template, push_variables, installation_id, legacy_gcm, must_exist, must_be_issued,
                                want_owner, replaces, n)
                    ), checked AS (
                        SELECT i.*, r.id IS NOT NULL AS is_found, r.owner AS stored_owner,
                            coalesce(i.must_be_issued AND r.id IS NULL AND (SELECT v.expires_at FROM herald.reservations AS v
                                WHERE v.hub = p_hub AND v.id = i.id) > i.updated_at, false) AS is_issued
                        FROM input AS i LEFT JOIN herald.registrations AS r ON r.hub = p_hub AND r.id = i.id
                    ), decided AS (
                        SELECT c.*, CASE WHEN c.is_found THEN c.want_owner IS NULL OR c.stored_owner IS NOT DISTINCT FROM c.want_owner
                            ELSE NOT c.must_exist AND (NOT c.must_be_issued OR c.is_issued) END AS ok
                        FROM checked AS c
                    ), saved AS (
                        INSERT INTO herald.registrations AS r (hub, id, platform, handle, p256dh, auth, owner, expires_at,
                            version, created_at, updated_at, tags, template, push_variables, installation_id, legacy_gcm)
                        SELECT p_hub, d.id, d.platform, d.handle, d.p256dh, d.auth, d.owner, d.expires_at, 1, d.created_at,
                            d.updated_at, p_tags[d.tag_offset + 1 : d.tag_offset + d.tag_count], d.template, d.push_variables,
                            d.installation_id, d.legacy_gcm
                        FROM decided AS d WHERE d.ok ORDER BY d.id COLLATE "C"
                        ON CONFLICT (hub, id) DO UPDATE SET platform = excluded.platform, handle = excluded.handle,
                            p256dh = excluded.p256dh, auth = excluded.auth, owner = excluded.owner,
                            expires_at = excluded.expires_at, version = r.version + 1, updated_at = excluded.updated_at,
                            tags = excluded.tags, template = excluded.template, push_variables = excluded.push_variables,
                            installation_id = excluded.installation_id, legacy_gcm = excluded.legacy_gcm
                        RETURNING r.id, r.version, r.created_at
                    ), replaced AS (
                        DELETE FROM herald.registrations AS o USING decided AS d
                        WHERE d.ok AND d.replaces AND o.hub = p_hub AND o.handle = d.handle AND o.platform = d.platform
                            AND o.installation_id IS NULL AND o.id NOT IN (SELECT w.id FROM decided AS w WHERE w.ok)
                        RETURNING o.id
                    )
                    SELECT d.n, s.id IS NOT NULL, s.version, s.created_at, d.is_found, d.stored_owner, d.is_issued
                    FROM decided AS d LEFT JOIN saved AS s ON s.id = d.id
                    ORDER BY d.n;
                END
                $$
                """,
                // The tag indexes kept in step one key at a time: with `tag = ANY (OLD.tags)` the
                // planner may walk every entry of the hub (the key's middle column unused), which
                // made each write cost more as the hub grew. An update now touches only the tags
                // that changed.
                """
                CREATE OR REPLACE FUNCTION herald.registrations_changed() RETURNS trigger LANGUAGE plpgsql AS $$
                DECLARE
                    t text;
                BEGIN
                    IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND OLD.tags IS DISTINCT FROM NEW.tags) THEN
                        FOREACH t IN ARRAY OLD.tags LOOP
                            IF TG_OP = 'DELETE' OR NOT (t = ANY (NEW.tags)) THEN
                                DELETE FROM herald.registration_tags WHERE hub = OLD.hub AND tag = t AND registration_id = OLD.id;
                            END IF;
                        END LOOP;
                    END IF;
                    IF TG_OP = 'INSERT' THEN
                        INSERT INTO herald.registration_tags (hub, tag, registration_id)
                            SELECT NEW.hub, x, NEW.id FROM unnest(NEW.tags) AS x ON CONFLICT DO NOTHING;
                    ELSIF TG_OP = 'UPDATE' AND OLD.tags IS DISTINCT FROM NEW.tags THEN
                        INSERT INTO herald.registration_tags (hub, tag, registration_id)
                            SELECT NEW.hub, x, NEW.id FROM unnest(NEW.tags) AS x WHERE NOT (x = ANY (OLD.tags))
                            ON CONFLICT DO NOTHING;
                    END IF;
                    IF TG_OP = 'DELETE' THEN
                        DELETE FROM herald.reservations WHERE hub = OLD.hub AND id = OLD.id;
                    ELSE
                        DELETE FROM herald.reservations WHERE hub = NEW.hub AND id = NEW.id;
                    END IF;
                    RETURN NULL;
                END
                $$
                """,
                """
                CREATE OR REPLACE FUNCTION herald.installations_changed() RETURNS trigger LANGUAGE plpgsql AS $$
                DECLARE
                    t text;
                BEGIN
                    IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND OLD.tags IS DISTINCT FROM NEW.tags) THEN
                        FOREACH t IN ARRAY OLD.tags LOOP
                            IF TG_OP = 'DELETE' OR NOT (t = ANY (NEW.tags)) THEN
                                DELETE FROM herald.installation_tags WHERE hub = OLD.hub AND tag = t AND installation_id = OLD.id;
                            END IF;
                        END LOOP;
                    END IF;
                    IF TG_OP = 'INSERT' THEN
                        INSERT INTO herald.installation_tags (hub, tag, installation_id)
                            SELECT NEW.hub, x, NEW.id FROM unnest(NEW.tags) AS x ON CONFLICT DO NOTHING;
                    ELSIF TG_OP = 'UPDATE' AND OLD.tags IS DISTINCT FROM NEW.tags THEN
                        INSERT INTO herald.installation_tags (hub, tag, installation_id)
                            SELECT NEW.hub, x, NEW.id FROM unnest(NEW.tags) AS x WHERE NOT (x = ANY (OLD.tags))
                            ON CONFLICT DO NOTHING;
                    END IF;
                    RETURN NULL;
                END
                $$
                """,
            ]
        ),
        PostgresMigration(
            version: 12,
            name: "registration writes whose plan does not depend on statistics",
            statements: [
                // `save_registrations` again, with the same answers. Its lookups of the stored
                // rows were joins, which PostgreSQL planned from the table's statistics: for a
                // table filled since they were taken (a new hub, a bulk load) it read every row
                // of the hub through the (hub, handle) index and matched them in memory, so that
                // each write cost more as the hub grew (838 rows read to write 6, 10 ms). Each
                // lookup is now a subquery evaluated per row written (`LATERAL … OFFSET 0`, which
                // the planner cannot turn into a join), by primary key or by (hub, handle): its
                // cost does not depend on the statistics or on the size of the hub. The plan is
                // made once per connection (`plan_cache_mode`): planning this statement for every
                // call took about 0.7 ms, three times what running it took.
                """
                CREATE OR REPLACE FUNCTION herald.save_registrations(
                    p_hub text, p_locks text[], p_ids text[], p_platforms text[], p_handles text[], p_p256dh text[],
                    p_auth text[], p_owners text[], p_expires_at bigint[], p_created_at bigint[], p_updated_at bigint[],
                    p_tag_counts integer[], p_tags text[], p_templates text[], p_push_variables text[],
                    p_installation_ids text[], p_legacy_gcm boolean[], p_must_exist boolean[], p_must_be_issued boolean[],
                    p_want_owners text[], p_replaces boolean[]
                ) RETURNS TABLE (ord bigint, written boolean, version bigint, created_at bigint, found boolean,
                    found_owner text, issued boolean)
                LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
                #variable_conflict use_column
                DECLARE
                    k text;
                BEGIN
                    FOREACH k IN ARRAY p_locks LOOP
                        PERFORM pg_advisory_xact_lock(hashtextextended(p_hub || chr(31) || k, 0));
                    END LOOP;
                    RETURN QUERY
                    WITH input AS (
                        SELECT x.*, (sum(x.tag_count) OVER (ORDER BY x.n) - x.tag_count)::integer AS tag_offset
                        FROM unnest(p_ids, p_platforms, p_handles, p_p256dh, p_auth, p_owners, p_expires_at, p_created_at,
                            p_updated_at, p_tag_counts, p_templates, p_push_variables, p_installation_ids, p_legacy_gcm,
                            p_must_exist, p_must_be_issued, p_want_owners, p_replaces) WITH ORDINALITY
                            AS x(id, platform, handle, p256dh, auth, owner, expires_at, created_at, updated_at, tag_count,
                                template, push_variables, installation_id, legacy_gcm, must_exist, must_be_issued,
                                want_owner, replaces, n)
                    ), checked AS (
                        SELECT i.*, r.id IS NOT NULL AS is_found, r.owner AS stored_owner,
                            coalesce(i.must_be_issued AND r.id IS NULL AND (SELECT v.expires_at FROM herald.reservations AS v
                                WHERE v.hub = p_hub AND v.id = i.id) > i.updated_at, false) AS is_issued
                        FROM input AS i LEFT JOIN LATERAL (
                            SELECT s.id, s.owner FROM herald.registrations AS s WHERE s.hub = p_hub AND s.id = i.id OFFSET 0
                        ) AS r ON true
                    ), decided AS (
                        SELECT c.*, CASE WHEN c.is_found THEN c.want_owner IS NULL OR c.stored_owner IS NOT DISTINCT FROM c.want_owner
                            ELSE NOT c.must_exist AND (NOT c.must_be_issued OR c.is_issued) END AS ok
                        FROM checked AS c
                    ), saved AS (
                        INSERT INTO herald.registrations AS r (hub, id, platform, handle, p256dh, auth, owner, expires_at,
                            version, created_at, updated_at, tags, template, push_variables, installation_id, legacy_gcm)
                        SELECT p_hub, d.id, d.platform, d.handle, d.p256dh, d.auth, d.owner, d.expires_at, 1, d.created_at,
                            d.updated_at, p_tags[d.tag_offset + 1 : d.tag_offset + d.tag_count], d.template, d.push_variables,
                            d.installation_id, d.legacy_gcm
                        FROM decided AS d WHERE d.ok ORDER BY d.id COLLATE "C"
                        ON CONFLICT (hub, id) DO UPDATE SET platform = excluded.platform, handle = excluded.handle,
                            p256dh = excluded.p256dh, auth = excluded.auth, owner = excluded.owner,
                            expires_at = excluded.expires_at, version = r.version + 1, updated_at = excluded.updated_at,
                            tags = excluded.tags, template = excluded.template, push_variables = excluded.push_variables,
                            installation_id = excluded.installation_id, legacy_gcm = excluded.legacy_gcm
                        RETURNING r.id, r.version, r.created_at
                    ), replaced AS (
                        DELETE FROM herald.registrations AS o
                        WHERE o.hub = p_hub AND o.id = ANY (ARRAY(
                            SELECT same.id FROM decided AS d CROSS JOIN LATERAL (
                                SELECT e.id FROM herald.registrations AS e
                                WHERE e.hub = p_hub AND e.handle = d.handle AND e.platform = d.platform
                                    AND e.installation_id IS NULL OFFSET 0
                            ) AS same
                            WHERE d.ok AND d.replaces AND same.id NOT IN (SELECT w.id FROM decided AS w WHERE w.ok)
                        ))
                        RETURNING o.id
                    )
                    SELECT d.n, s.id IS NOT NULL, s.version, s.created_at, d.is_found, d.stored_owner, d.is_issued
                    FROM decided AS d LEFT JOIN saved AS s ON s.id = d.id
                    ORDER BY d.n;
                END
                $$
                """
            ]
        ),
        PostgresMigration(
            version: 13,
            name: "idempotency keys of sends",
            statements: [
                // The Idempotency-Key a notification was sent under, in its scope (the hub's,
                // or one user's), the SHA-256 of the request it stood for, what the first
                // answer carried beside the notification's id, and when the key is forgotten.
                // NULL for a send without a key and for partitions.
                """
                ALTER TABLE herald.notifications ADD COLUMN idempotency_scope text COLLATE "C",
                    ADD COLUMN idempotency_key text COLLATE "C", ADD COLUMN idempotency_digest text,
                    ADD COLUMN idempotency_answer text, ADD COLUMN idempotency_expires_at bigint
                """,
                // One notification per hub, scope and key, whichever node inserts first: the
                // others' inserts wait for it and then do nothing.
                """
                CREATE UNIQUE INDEX notifications_idempotency_key ON herald.notifications (hub, idempotency_scope, idempotency_key)
                    WHERE idempotency_key IS NOT NULL
                """,
                // The sweep finds the keys whose retention ended.
                """
                CREATE INDEX notifications_idempotency_expiry ON herald.notifications (hub, idempotency_expires_at)
                    WHERE idempotency_key IS NOT NULL
                """,
            ]
        ),
        PostgresMigration(
            version: 14,
            name: "webhook endpoints, outbox and delivery log",
            statements: [
                // Where a hub posts events: event types sorted and comma-separated; the secret
                // before the last rotation signs too until it expires.
                """
                CREATE TABLE herald.webhook_endpoints (
                    hub text COLLATE "C" NOT NULL,
                    id text COLLATE "C" NOT NULL,
                    url text NOT NULL,
                    events text NOT NULL,
                    secret text NOT NULL,
                    previous_secret text,
                    previous_secret_expires_at bigint,
                    enabled boolean NOT NULL,
                    disabled_reason text,
                    created_at bigint NOT NULL,
                    updated_at bigint NOT NULL,
                    PRIMARY KEY (hub, id)
                )
                """,
                // One row per event and endpoint until it is delivered or given up: due at
                // due_at, tried `attempts` times, leased to the node sending it. Nodes claim
                // due rows with FOR UPDATE SKIP LOCKED through the (due_at) index.
                """
                CREATE TABLE herald.webhook_outbox (
                    hub text COLLATE "C" NOT NULL,
                    endpoint_id text COLLATE "C" NOT NULL,
                    event_id text COLLATE "C" NOT NULL,
                    type text NOT NULL,
                    body text NOT NULL,
                    created_at bigint NOT NULL,
                    due_at bigint NOT NULL,
                    attempts integer NOT NULL DEFAULT 0,
                    lease_owner text,
                    lease_until bigint,
                    PRIMARY KEY (hub, endpoint_id, event_id)
                )
                """,
                "CREATE INDEX webhook_outbox_due ON herald.webhook_outbox (hub, due_at)",
                // Each endpoint's delivery log, one row per attempt.
                """
                CREATE TABLE herald.webhook_attempts (
                    hub text COLLATE "C" NOT NULL,
                    seq bigint GENERATED ALWAYS AS IDENTITY,
                    endpoint_id text COLLATE "C" NOT NULL,
                    event_id text COLLATE "C" NOT NULL,
                    type text NOT NULL,
                    attempt integer NOT NULL,
                    at bigint NOT NULL,
                    status_code integer,
                    error text,
                    duration_ms bigint NOT NULL,
                    outcome text NOT NULL,
                    PRIMARY KEY (hub, seq)
                )
                """,
                "CREATE INDEX webhook_attempts_endpoint ON herald.webhook_attempts (hub, endpoint_id, at)",
                "CREATE INDEX webhook_attempts_at ON herald.webhook_attempts (hub, at)",
            ]
        ),
        PostgresMigration(
            version: 15,
            name: "registration writes that keep the tag index themselves",
            statements: [
                // A registration written by `save_registrations` keeps the tag index and the
                // reservations in step in the statement that writes it, a few set-based steps
                // for all its rows, instead of the row trigger's two or three statements per
                // row (a third of what a call cost). The trigger now fires for a write only
                // outside that function (`herald.registration_index` is 'kept' while it runs),
                // and for every delete: other writers, the registrations a write replaces and
                // bulk loads keep it exactly as before.
                "DROP TRIGGER registrations_changed ON herald.registrations",
                // A reservation is looked up by hub and id for every registration written. With
                // statistics that know nothing of a hub (a new hub beside others) the planner
                // took the (hub, expires_at) index for that, as cheap by its estimate as the
                // primary key, and read every reservation of the hub for each row. Expiry sweeps
                // now read the expired reservations, of any hub, by expires_at first: the primary
                // key is then the only index that starts with the hub.
                "DROP INDEX herald.reservations_expires_at",
                "CREATE INDEX reservations_expires_at ON herald.reservations (expires_at, hub)",
                """
                CREATE TRIGGER registrations_deleted AFTER DELETE ON herald.registrations
                    FOR EACH ROW EXECUTE FUNCTION herald.registrations_changed()
                """,
                """
                CREATE TRIGGER registrations_written AFTER INSERT OR UPDATE ON herald.registrations
                    FOR EACH ROW WHEN (current_setting('herald.registration_index', true) IS DISTINCT FROM 'kept')
                    EXECUTE FUNCTION herald.registrations_changed()
                """,
                // `save_registrations` again, with the same answers. The advisory locks are taken
                // by one statement, in the order given. The tag index is brought in step from
                // the tags each written row held, read with the statement's snapshot: an update
                // applies only if the row still holds those tags when it is locked, so the
                // difference is exact; a row that another writer changed meanwhile (or inserted,
                // when none was read) is left unwritten, and the store writes it again on its own
                // (see `PostgresStore.applyRegistrationWrites`), through the trigger. Each index
                // entry and reservation is found by its key (`LATERAL … OFFSET 0`, as the rows
                // themselves), whatever the statistics.
                """
                CREATE OR REPLACE FUNCTION herald.save_registrations(
                    p_hub text, p_locks text[], p_ids text[], p_platforms text[], p_handles text[], p_p256dh text[],
                    p_auth text[], p_owners text[], p_expires_at bigint[], p_created_at bigint[], p_updated_at bigint[],
                    p_tag_counts integer[], p_tags text[], p_templates text[], p_push_variables text[],
                    p_installation_ids text[], p_legacy_gcm boolean[], p_must_exist boolean[], p_must_be_issued boolean[],
                    p_want_owners text[], p_replaces boolean[]
                ) RETURNS TABLE (ord bigint, written boolean, version bigint, created_at bigint, found boolean,
                    found_owner text, issued boolean)
                LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan SET herald.registration_index = 'kept' AS $$
                #variable_conflict use_column
                BEGIN
                    PERFORM pg_advisory_xact_lock(hashtextextended(p_hub || chr(31) || k.key, 0)) FROM unnest(p_locks) AS k(key);
                    RETURN QUERY
                    WITH input AS (
                        SELECT x.*, (sum(x.tag_count) OVER (ORDER BY x.n) - x.tag_count)::integer AS tag_offset
                        FROM unnest(p_ids, p_platforms, p_handles, p_p256dh, p_auth, p_owners, p_expires_at, p_created_at,
                            p_updated_at, p_tag_counts, p_templates, p_push_variables, p_installation_ids, p_legacy_gcm,
                            p_must_exist, p_must_be_issued, p_want_owners, p_replaces) WITH ORDINALITY
                            AS x(id, platform, handle, p256dh, auth, owner, expires_at, created_at, updated_at, tag_count,
                                template, push_variables, installation_id, legacy_gcm, must_exist, must_be_issued,
                                want_owner, replaces, n)
                    ), checked AS (
                        SELECT i.*, p_tags[i.tag_offset + 1 : i.tag_offset + i.tag_count] AS new_tags,
                            r.id IS NOT NULL AS is_found, r.owner AS stored_owner, r.tags AS stored_tags,
                            coalesce(i.must_be_issued AND r.id IS NULL AND (SELECT v.expires_at FROM herald.reservations AS v
                                WHERE v.hub = p_hub AND v.id = i.id) > i.updated_at, false) AS is_issued
                        FROM input AS i LEFT JOIN LATERAL (
                            SELECT s.id, s.owner, s.tags FROM herald.registrations AS s WHERE s.hub = p_hub AND s.id = i.id OFFSET 0
                        ) AS r ON true
                    ), decided AS (
                        SELECT c.*, CASE WHEN c.is_found THEN c.want_owner IS NULL OR c.stored_owner IS NOT DISTINCT FROM c.want_owner
                            ELSE NOT c.must_exist AND (NOT c.must_be_issued OR c.is_issued) END AS ok
                        FROM checked AS c
                    ), saved AS (
                        INSERT INTO herald.registrations AS r (hub, id, platform, handle, p256dh, auth, owner, expires_at,
                            version, created_at, updated_at, tags, template, push_variables, installation_id, legacy_gcm)
                        SELECT p_hub, d.id, d.platform, d.handle, d.p256dh, d.auth, d.owner, d.expires_at, 1, d.created_at,
                            d.updated_at, d.new_tags, d.template, d.push_variables, d.installation_id, d.legacy_gcm
                        FROM decided AS d WHERE d.ok ORDER BY d.id COLLATE "C"
                        ON CONFLICT (hub, id) DO UPDATE SET platform = excluded.platform, handle = excluded.handle,
                            p256dh = excluded.p256dh, auth = excluded.auth, owner = excluded.owner,
                            expires_at = excluded.expires_at, version = r.version + 1, updated_at = excluded.updated_at,
                            tags = excluded.tags, template = excluded.template, push_variables = excluded.push_variables,
                            installation_id = excluded.installation_id, legacy_gcm = excluded.legacy_gcm
                        WHERE r.tags = (SELECT w.stored_tags FROM decided AS w WHERE w.id = excluded.id)
                        RETURNING r.id, r.version, r.created_at
                    ), replaced AS (
                        DELETE FROM herald.registrations AS o
                        WHERE o.hub = p_hub AND o.id = ANY (ARRAY(
                            SELECT same.id FROM decided AS d CROSS JOIN LATERAL (
                                SELECT e.id FROM herald.registrations AS e
                                WHERE e.hub = p_hub AND e.handle = d.handle AND e.platform = d.platform
                                    AND e.installation_id IS NULL OFFSET 0
                            ) AS same
                            WHERE d.ok AND d.replaces AND same.id NOT IN (SELECT w.id FROM decided AS w WHERE w.ok)
                        ))
                        RETURNING o.id
                    ), written AS (
                        SELECT d.id, d.new_tags, d.is_found, d.stored_tags, s.version AS saved_version, s.created_at AS saved_created_at
                        FROM saved AS s JOIN decided AS d ON d.id = s.id
                    ), untagged AS (
                        DELETE FROM herald.registration_tags AS t WHERE t.ctid = ANY (ARRAY(
                            SELECT g.ctid FROM written AS w CROSS JOIN LATERAL unnest(w.stored_tags) AS x(tag) CROSS JOIN LATERAL (
                                SELECT e.ctid FROM herald.registration_tags AS e
                                WHERE e.hub = p_hub AND e.tag = x.tag AND e.registration_id = w.id OFFSET 0
                            ) AS g
                            WHERE w.is_found AND NOT (x.tag = ANY (w.new_tags))
                        ))
                        RETURNING t.tag
                    ), tagged AS (
                        INSERT INTO herald.registration_tags AS t (hub, tag, registration_id)
                        SELECT p_hub, x.tag, w.id FROM written AS w CROSS JOIN LATERAL unnest(w.new_tags) AS x(tag)
                        WHERE NOT w.is_found OR NOT (x.tag = ANY (w.stored_tags))
                        ON CONFLICT DO NOTHING
                        RETURNING t.tag
                    ), consumed AS (
                        DELETE FROM herald.reservations AS v WHERE v.ctid = ANY (ARRAY(
                            SELECT f.ctid FROM written AS w CROSS JOIN LATERAL (
                                SELECT e.ctid FROM herald.reservations AS e WHERE e.hub = p_hub AND e.id = w.id OFFSET 0
                            ) AS f
                        ))
                        RETURNING v.id
                    )
                    SELECT d.n, w.id IS NOT NULL, w.saved_version, w.saved_created_at, d.is_found, d.stored_owner, d.is_issued
                    FROM decided AS d LEFT JOIN written AS w ON w.id = d.id
                    ORDER BY d.n;
                END
                $$
                """,
            ]
        ),
        PostgresMigration(
            version: 16,
            name: "confirmed receipts",
            statements: [
                // One row per device that confirmed a notification, kept for de-duplication
                // until the sweep forgets it (by `at`); `device` is the digest of the device's
                // platform and push handle.
                """
                CREATE TABLE herald.receipts (
                    hub text COLLATE "C" NOT NULL,
                    notification_id text COLLATE "C" NOT NULL,
                    device text COLLATE "C" NOT NULL,
                    platform text NOT NULL,
                    at bigint NOT NULL,
                    PRIMARY KEY (hub, notification_id, device)
                )
                """,
                "CREATE INDEX receipts_at ON herald.receipts (hub, at)",
                // How many devices confirmed each notification, per platform: kept when the
                // receipts themselves are forgotten.
                """
                CREATE TABLE herald.receipt_counts (
                    hub text COLLATE "C" NOT NULL,
                    notification_id text COLLATE "C" NOT NULL,
                    platform text NOT NULL,
                    confirmed bigint NOT NULL,
                    PRIMARY KEY (hub, notification_id, platform)
                )
                """,
            ]
        ),
        PostgresMigration(
            version: 17,
            name: "notifications spread over a time",
            statements: [
                // The seconds a notification's sends are spread over; NULL for at once.
                "ALTER TABLE herald.notifications ADD COLUMN spread_seconds bigint"
            ]
        ),
        PostgresMigration(
            version: 18,
            name: "broadcasts kept by their channel",
            statements: [
                // The APNs broadcast channel a broadcast went to; NULL for any other send.
                "ALTER TABLE herald.notifications ADD COLUMN broadcast_channel text",
                // A channel's sends, newest first.
                """
                CREATE INDEX notifications_broadcast_channel ON herald.notifications (hub, broadcast_channel, enqueued_at, id)
                    WHERE broadcast_channel IS NOT NULL
                """,
            ]
        ),
        PostgresMigration(
            version: 19,
            name: "Live Activity tokens as registrations",
            statements: [
                // What a registration's handle addresses: NULL for the app on a device,
                // 'liveactivity' for an activity's update token, 'pushtostart:<activity type>'
                // for a push-to-start token (`HandleKind`'s stored form).
                "ALTER TABLE herald.registrations ADD COLUMN handle_kind text",
                // `save_registrations` again, with the same answers, writing each row's
                // handle kind too (`p_handle_kinds`): a new argument is a new function, so the
                // one without it goes.
                "DROP FUNCTION herald.save_registrations(text, text[], text[], text[], text[], text[], text[], text[], bigint[], bigint[], bigint[], integer[], text[], text[], text[], text[], boolean[], boolean[], boolean[], text[], boolean[])",
                """
                CREATE FUNCTION herald.save_registrations(
                    p_hub text, p_locks text[], p_ids text[], p_platforms text[], p_handles text[], p_p256dh text[],
                    p_auth text[], p_owners text[], p_expires_at bigint[], p_created_at bigint[], p_updated_at bigint[],
                    p_tag_counts integer[], p_tags text[], p_templates text[], p_push_variables text[],
                    p_installation_ids text[], p_legacy_gcm boolean[], p_handle_kinds text[], p_must_exist boolean[], p_must_be_issued boolean[],
                    p_want_owners text[], p_replaces boolean[]
                ) RETURNS TABLE (ord bigint, written boolean, version bigint, created_at bigint, found boolean,
                    found_owner text, issued boolean)
                LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan SET herald.registration_index = 'kept' AS $$
                #variable_conflict use_column
                BEGIN
                    PERFORM pg_advisory_xact_lock(hashtextextended(p_hub || chr(31) || k.key, 0)) FROM unnest(p_locks) AS k(key);
                    RETURN QUERY
                    WITH input AS (
                        SELECT x.*, (sum(x.tag_count) OVER (ORDER BY x.n) - x.tag_count)::integer AS tag_offset
                        FROM unnest(p_ids, p_platforms, p_handles, p_p256dh, p_auth, p_owners, p_expires_at, p_created_at,
                            p_updated_at, p_tag_counts, p_templates, p_push_variables, p_installation_ids, p_legacy_gcm, p_handle_kinds,
                            p_must_exist, p_must_be_issued, p_want_owners, p_replaces) WITH ORDINALITY
                            AS x(id, platform, handle, p256dh, auth, owner, expires_at, created_at, updated_at, tag_count,
                                template, push_variables, installation_id, legacy_gcm, handle_kind, must_exist, must_be_issued,
                                want_owner, replaces, n)
                    ), checked AS (
                        SELECT i.*, p_tags[i.tag_offset + 1 : i.tag_offset + i.tag_count] AS new_tags,
                            r.id IS NOT NULL AS is_found, r.owner AS stored_owner, r.tags AS stored_tags,
                            coalesce(i.must_be_issued AND r.id IS NULL AND (SELECT v.expires_at FROM herald.reservations AS v
                                WHERE v.hub = p_hub AND v.id = i.id) > i.updated_at, false) AS is_issued
                        FROM input AS i LEFT JOIN LATERAL (
                            SELECT s.id, s.owner, s.tags FROM herald.registrations AS s WHERE s.hub = p_hub AND s.id = i.id OFFSET 0
                        ) AS r ON true
                    ), decided AS (
                        SELECT c.*, CASE WHEN c.is_found THEN c.want_owner IS NULL OR c.stored_owner IS NOT DISTINCT FROM c.want_owner
                            ELSE NOT c.must_exist AND (NOT c.must_be_issued OR c.is_issued) END AS ok
                        FROM checked AS c
                    ), saved AS (
                        INSERT INTO herald.registrations AS r (hub, id, platform, handle, p256dh, auth, owner, expires_at,
                            version, created_at, updated_at, tags, template, push_variables, installation_id, legacy_gcm, handle_kind)
                        SELECT p_hub, d.id, d.platform, d.handle, d.p256dh, d.auth, d.owner, d.expires_at, 1, d.created_at,
                            d.updated_at, d.new_tags, d.template, d.push_variables, d.installation_id, d.legacy_gcm, d.handle_kind
                        FROM decided AS d WHERE d.ok ORDER BY d.id COLLATE "C"
                        ON CONFLICT (hub, id) DO UPDATE SET platform = excluded.platform, handle = excluded.handle,
                            p256dh = excluded.p256dh, auth = excluded.auth, owner = excluded.owner,
                            expires_at = excluded.expires_at, version = r.version + 1, updated_at = excluded.updated_at,
                            tags = excluded.tags, template = excluded.template, push_variables = excluded.push_variables,
                            installation_id = excluded.installation_id, legacy_gcm = excluded.legacy_gcm,
                            handle_kind = excluded.handle_kind
                        WHERE r.tags = (SELECT w.stored_tags FROM decided AS w WHERE w.id = excluded.id)
                        RETURNING r.id, r.version, r.created_at
                    ), replaced AS (
                        DELETE FROM herald.registrations AS o
                        WHERE o.hub = p_hub AND o.id = ANY (ARRAY(
                            SELECT same.id FROM decided AS d CROSS JOIN LATERAL (
                                SELECT e.id FROM herald.registrations AS e
                                WHERE e.hub = p_hub AND e.handle = d.handle AND e.platform = d.platform
                                    AND e.installation_id IS NULL OFFSET 0
                            ) AS same
                            WHERE d.ok AND d.replaces AND same.id NOT IN (SELECT w.id FROM decided AS w WHERE w.ok)
                        ))
                        RETURNING o.id
                    ), written AS (
                        SELECT d.id, d.new_tags, d.is_found, d.stored_tags, s.version AS saved_version, s.created_at AS saved_created_at
                        FROM saved AS s JOIN decided AS d ON d.id = s.id
                    ), untagged AS (
                        DELETE FROM herald.registration_tags AS t WHERE t.ctid = ANY (ARRAY(
                            SELECT g.ctid FROM written AS w CROSS JOIN LATERAL unnest(w.stored_tags) AS x(tag) CROSS JOIN LATERAL (
                                SELECT e.ctid FROM herald.registration_tags AS e
                                WHERE e.hub = p_hub AND e.tag = x.tag AND e.registration_id = w.id OFFSET 0
                            ) AS g
                            WHERE w.is_found AND NOT (x.tag = ANY (w.new_tags))
                        ))
                        RETURNING t.tag
                    ), tagged AS (
                        INSERT INTO herald.registration_tags AS t (hub, tag, registration_id)
                        SELECT p_hub, x.tag, w.id FROM written AS w CROSS JOIN LATERAL unnest(w.new_tags) AS x(tag)
                        WHERE NOT w.is_found OR NOT (x.tag = ANY (w.stored_tags))
                        ON CONFLICT DO NOTHING
                        RETURNING t.tag
                    ), consumed AS (
                        DELETE FROM herald.reservations AS v WHERE v.ctid = ANY (ARRAY(
                            SELECT f.ctid FROM written AS w CROSS JOIN LATERAL (
                                SELECT e.ctid FROM herald.reservations AS e WHERE e.hub = p_hub AND e.id = w.id OFFSET 0
                            ) AS f
                        ))
                        RETURNING v.id
                    )
                    SELECT d.n, w.id IS NOT NULL, w.saved_version, w.saved_created_at, d.is_found, d.stored_owner, d.is_issued
                    FROM decided AS d LEFT JOIN written AS w ON w.id = d.id
                    ORDER BY d.n;
                END
                $$
                """,
            ]
        ),
        PostgresMigration(
            version: 20,
            name: "the app backend's earlier Live Activity registrations of their kind",
            statements: [
                // The app backend registered an activity's update token, before version 19, as a
                // registration of its user (owner) with the one tag `liveactivity:<user>:<id>`.
                // Such a registration is that token: without its kind, an activity's updates
                // would reach nothing and the user's alerts would reach it. A registration
                // made through the hub's REST API has no owner and stays as it is.
                """
                UPDATE herald.registrations SET handle_kind = 'liveactivity'
                WHERE handle_kind IS NULL AND platform = 'apns' AND owner IS NOT NULL AND installation_id IS NULL
                    AND cardinality(tags) = 1 AND starts_with(tags[1], 'liveactivity:' || owner || ':')
                """
            ]
        ),
        PostgresMigration(
            version: 21,
            name: "room on each page for the next version of its rows",
            statements: [
                // A registration or an installation written again (a device's `PUT`, an
                // installation's, half of all writes) keeps its indexed columns: its hub and id,
                // its handle, its installation, its user. Its new version can then go on the
                // page of the old one without a new entry in any index (a HOT update), if the
                // page has room: a full page sent each update elsewhere, with an entry in every
                // index (two or three for a registration). New pages are now filled to 80%.
                "ALTER TABLE herald.registrations SET (fillfactor = 80)",
                "ALTER TABLE herald.installations SET (fillfactor = 80)",
            ]
        ),
        PostgresMigration(
            version: 22,
            name: "installation writes that keep the tag indexes themselves",
            statements: [
                // The row triggers that keep the tag indexes were a third of what an installation
                // `PUT` cost PostgreSQL: two or three statements, each started and ended, for every
                // row. `save_installations` writes a group of installations and their
                // registrations and keeps both indexes and the reservations in step itself, a few
                // set-based steps for all its rows, as `save_registrations` does. The
                // installations' trigger now skips writes made while `herald.installation_index`
                // is 'kept', as the registrations' does for `herald.registration_index`; both
                // fire for every delete.
                "DROP TRIGGER installations_changed ON herald.installations",
                """
                CREATE TRIGGER installations_deleted AFTER DELETE ON herald.installations
                    FOR EACH ROW EXECUTE FUNCTION herald.installations_changed()
                """,
                """
                CREATE TRIGGER installations_written AFTER INSERT OR UPDATE ON herald.installations
                    FOR EACH ROW WHEN (current_setting('herald.installation_index', true) IS DISTINCT FROM 'kept')
                    EXECUTE FUNCTION herald.installations_changed()
                """,
                // Raised (SQLSTATE HR412) when a row that a grouped write read was changed by
                // another writer before the write locked it: the store writes the group again
                // with a statement that the triggers keep in step.
                """
                CREATE FUNCTION herald.unchanged_unless(ok boolean) RETURNS boolean
                LANGUAGE plpgsql AS $$
                BEGIN
                    IF NOT ok THEN
                        RAISE EXCEPTION USING ERRCODE = 'HR412', MESSAGE = 'a row of the group was changed meanwhile';
                    END IF;
                    RETURN true;
                END
                $$
                """,
                // Each stored row is read with the statement's snapshot, and updated only if it
                // is still that version when it is locked: its index entries are then those the
                // snapshot holds, and the difference applied is exact. A row another writer
                // changed (or inserted, when none was read) is left unwritten, and then the whole
                // call fails with HR412 and writes nothing. A row inserted (version 1) gets all
                // its entries: whoever deleted the row read before committed, and with it the
                // removal of its entries. A registration id held by a registration of something
                // else is left unwritten too: the store's second statement names it (HR409).
                """
                CREATE FUNCTION herald.save_installations(
                    p_hub text, p_ids text[], p_user_ids text[], p_tag_counts integer[], p_tags text[], p_documents text[],
                    p_updated_at bigint[], p_registration_ids text[], p_platforms text[], p_handles text[], p_p256dh text[],
                    p_auth text[], p_expires_at bigint[], p_registration_updated_at bigint[], p_registration_tag_counts integer[],
                    p_registration_tags text[], p_templates text[], p_push_variables text[], p_installation_ids text[],
                    p_legacy_gcm boolean[], p_handle_kinds text[]
                ) RETURNS TABLE (id text, version bigint, created_at bigint)
                LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan SET herald.registration_index = 'kept'
                    SET herald.installation_index = 'kept' AS $$
                #variable_conflict use_column
                DECLARE
                    returned bigint;
                BEGIN
                    RETURN QUERY
                    WITH installation_input AS (
                        SELECT x.*, (sum(x.tag_count) OVER (ORDER BY x.n) - x.tag_count)::integer AS tag_offset,
                            s.ctid AS stored_ctid, s.tags AS stored_tags
                        FROM unnest(p_ids, p_user_ids, p_tag_counts, p_documents, p_updated_at) WITH ORDINALITY
                            AS x(id, user_id, tag_count, document, updated_at, n)
                        LEFT JOIN LATERAL (
                            SELECT e.ctid, e.tags FROM herald.installations AS e WHERE e.hub = p_hub AND e.id = x.id OFFSET 0
                        ) AS s ON true
                    ), installation AS (
                        INSERT INTO herald.installations AS i (hub, id, user_id, tags, document, version, created_at, updated_at)
                        SELECT p_hub, x.id, x.user_id, p_tags[x.tag_offset + 1 : x.tag_offset + x.tag_count], x.document::jsonb, 1,
                            x.updated_at, x.updated_at
                        FROM installation_input AS x ORDER BY x.id COLLATE "C"
                        ON CONFLICT (hub, id) DO UPDATE SET user_id = excluded.user_id, tags = excluded.tags,
                            document = excluded.document, version = i.version + 1, updated_at = excluded.updated_at
                        WHERE i.ctid = (SELECT w.stored_ctid FROM installation_input AS w WHERE w.id = excluded.id)
                        RETURNING i.id, i.version, i.created_at, i.tags
                    ), installation_written AS (
                        SELECT i.id, i.tags AS new_tags, x.stored_tags, i.version = 1 AS inserted
                        FROM installation AS i JOIN installation_input AS x ON x.id = i.id
                    ), installation_untagged AS (
                        DELETE FROM herald.installation_tags AS t WHERE t.ctid = ANY (ARRAY(
                            SELECT g.ctid FROM installation_written AS w CROSS JOIN LATERAL unnest(w.stored_tags) AS x(tag)
                            CROSS JOIN LATERAL (
                                SELECT e.ctid FROM herald.installation_tags AS e
                                WHERE e.hub = p_hub AND e.tag = x.tag AND e.installation_id = w.id OFFSET 0
                            ) AS g
                            WHERE NOT w.inserted AND NOT (x.tag = ANY (w.new_tags))
                        ))
                        RETURNING t.tag
                    ), installation_tagged AS (
                        INSERT INTO herald.installation_tags AS t (hub, tag, installation_id)
                        SELECT p_hub, x.tag, w.id FROM installation_written AS w CROSS JOIN LATERAL unnest(w.new_tags) AS x(tag)
                        WHERE w.inserted OR NOT (x.tag = ANY (w.stored_tags))
                        ON CONFLICT DO NOTHING
                        RETURNING t.tag
                    ), registration_input AS (
                        SELECT x.*, (sum(x.tag_count) OVER (ORDER BY x.n) - x.tag_count)::integer AS tag_offset,
                            s.ctid AS stored_ctid, s.tags AS stored_tags
                        FROM unnest(p_registration_ids, p_platforms, p_handles, p_p256dh, p_auth, p_expires_at, p_registration_updated_at,
                            p_registration_tag_counts, p_templates, p_push_variables, p_installation_ids, p_legacy_gcm, p_handle_kinds)
                            WITH ORDINALITY AS x(id, platform, handle, p256dh, auth, expires_at, updated_at, tag_count, template,
                                push_variables, installation_id, legacy_gcm, handle_kind, n)
                        LEFT JOIN LATERAL (
                            SELECT e.ctid, e.tags FROM herald.registrations AS e WHERE e.hub = p_hub AND e.id = x.id OFFSET 0
                        ) AS s ON true
                    ), stale AS (
                        DELETE FROM herald.registrations AS r WHERE r.hub = p_hub AND r.installation_id = ANY (p_ids)
                            AND NOT (r.id = ANY (p_registration_ids))
                        RETURNING r.id
                    ), saved AS (
                        INSERT INTO herald.registrations AS r (hub, id, platform, handle, p256dh, auth, owner, expires_at, version,
                            created_at, updated_at, tags, template, push_variables, installation_id, legacy_gcm, handle_kind)
                        SELECT p_hub, x.id, x.platform, x.handle, x.p256dh, x.auth, NULL, x.expires_at, 1, x.updated_at, x.updated_at,
                            p_registration_tags[x.tag_offset + 1 : x.tag_offset + x.tag_count], x.template, x.push_variables,
                            x.installation_id, x.legacy_gcm, x.handle_kind
                        FROM registration_input AS x ORDER BY x.id COLLATE "C"
                        ON CONFLICT (hub, id) DO UPDATE SET platform = excluded.platform, handle = excluded.handle,
                            p256dh = excluded.p256dh, auth = excluded.auth, owner = excluded.owner,
                            expires_at = excluded.expires_at, version = r.version + 1, updated_at = excluded.updated_at,
                            tags = excluded.tags, template = excluded.template, push_variables = excluded.push_variables,
                            installation_id = excluded.installation_id, legacy_gcm = excluded.legacy_gcm,
                            handle_kind = excluded.handle_kind
                        WHERE r.installation_id IS NOT DISTINCT FROM excluded.installation_id
                            AND r.ctid = (SELECT w.stored_ctid FROM registration_input AS w WHERE w.id = excluded.id)
                        RETURNING r.id, r.tags, r.version
                    ), registration_written AS (
                        SELECT s.id, s.tags AS new_tags, x.stored_tags, s.version = 1 AS inserted
                        FROM saved AS s JOIN registration_input AS x ON x.id = s.id
                    ), registration_untagged AS (
                        DELETE FROM herald.registration_tags AS t WHERE t.ctid = ANY (ARRAY(
                            SELECT g.ctid FROM registration_written AS w CROSS JOIN LATERAL unnest(w.stored_tags) AS x(tag)
                            CROSS JOIN LATERAL (
                                SELECT e.ctid FROM herald.registration_tags AS e
                                WHERE e.hub = p_hub AND e.tag = x.tag AND e.registration_id = w.id OFFSET 0
                            ) AS g
                            WHERE NOT w.inserted AND NOT (x.tag = ANY (w.new_tags))
                        ))
                        RETURNING t.tag
                    ), registration_tagged AS (
                        INSERT INTO herald.registration_tags AS t (hub, tag, registration_id)
                        SELECT p_hub, x.tag, w.id FROM registration_written AS w CROSS JOIN LATERAL unnest(w.new_tags) AS x(tag)
                        WHERE w.inserted OR NOT (x.tag = ANY (w.stored_tags))
                        ON CONFLICT DO NOTHING
                        RETURNING t.tag
                    ), consumed AS (
                        DELETE FROM herald.reservations AS v WHERE v.ctid = ANY (ARRAY(
                            SELECT f.ctid FROM registration_written AS w CROSS JOIN LATERAL (
                                SELECT e.ctid FROM herald.reservations AS e WHERE e.hub = p_hub AND e.id = w.id OFFSET 0
                            ) AS f
                        ))
                        RETURNING v.id
                    )
                    SELECT i.id, i.version, i.created_at FROM installation AS i
                    WHERE herald.unchanged_unless((SELECT count(*) FROM saved) = cardinality(p_registration_ids));
                    GET DIAGNOSTICS returned = ROW_COUNT;
                    PERFORM herald.unchanged_unless(returned = cardinality(p_ids));
                END
                $$
                """,
            ]
        ),
        PostgresMigration(
            version: 23,
            name: "installation writes that find the registrations they replace by key, after every installation",
            statements: [
                // A grouped installation write deletes the registrations its installations no
                // longer have. Version 22 asked for them with `installation_id = ANY (…)`, which
                // a generic plan made on statistics of a small hub (few rows, or rows without an
                // installation) read as every installation registration of the hub, filtered one
                // by one: each write of a grown hub then read all of them. Each installation's are
                // now found on their own, by the hub and the installation (the key of their
                // index), and deleted by primary key: what the statistics say no longer matters.
                // The outer conditions repeat the inner ones, so that a row changed meanwhile is
                // checked again as it is now; `coalesce` keeps them from choosing the index of
                // installation registrations, which such statistics hold to be empty, over the
                // primary key.
                //
                // The registrations are now written once every installation of the group is.
                // The final check counts the registrations written, and PostgreSQL ran that
                // count, and with it their step, as soon as the first installation was written:
                // a group holding an installation and a write of that installation on a version
                // (its row, then its registrations) could each wait for the other.
                """
                CREATE OR REPLACE FUNCTION herald.save_installations(
                    p_hub text, p_ids text[], p_user_ids text[], p_tag_counts integer[], p_tags text[], p_documents text[],
                    p_updated_at bigint[], p_registration_ids text[], p_platforms text[], p_handles text[], p_p256dh text[],
                    p_auth text[], p_expires_at bigint[], p_registration_updated_at bigint[], p_registration_tag_counts integer[],
                    p_registration_tags text[], p_templates text[], p_push_variables text[], p_installation_ids text[],
                    p_legacy_gcm boolean[], p_handle_kinds text[]
                ) RETURNS TABLE (id text, version bigint, created_at bigint)
                LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan SET herald.registration_index = 'kept'
                    SET herald.installation_index = 'kept' AS $$
                #variable_conflict use_column
                DECLARE
                    returned bigint;
                BEGIN
                    RETURN QUERY
                    WITH installation_input AS (
                        SELECT x.*, (sum(x.tag_count) OVER (ORDER BY x.n) - x.tag_count)::integer AS tag_offset,
                            s.ctid AS stored_ctid, s.tags AS stored_tags
                        FROM unnest(p_ids, p_user_ids, p_tag_counts, p_documents, p_updated_at) WITH ORDINALITY
                            AS x(id, user_id, tag_count, document, updated_at, n)
                        LEFT JOIN LATERAL (
                            SELECT e.ctid, e.tags FROM herald.installations AS e WHERE e.hub = p_hub AND e.id = x.id OFFSET 0
                        ) AS s ON true
                    ), installation AS (
                        INSERT INTO herald.installations AS i (hub, id, user_id, tags, document, version, created_at, updated_at)
                        SELECT p_hub, x.id, x.user_id, p_tags[x.tag_offset + 1 : x.tag_offset + x.tag_count], x.document::jsonb, 1,
                            x.updated_at, x.updated_at
                        FROM installation_input AS x ORDER BY x.id COLLATE "C"
                        ON CONFLICT (hub, id) DO UPDATE SET user_id = excluded.user_id, tags = excluded.tags,
                            document = excluded.document, version = i.version + 1, updated_at = excluded.updated_at
                        WHERE i.ctid = (SELECT w.stored_ctid FROM installation_input AS w WHERE w.id = excluded.id)
                        RETURNING i.id, i.version, i.created_at, i.tags
                    ), installation_written AS (
                        SELECT i.id, i.tags AS new_tags, x.stored_tags, i.version = 1 AS inserted
                        FROM installation AS i JOIN installation_input AS x ON x.id = i.id
                    ), installation_untagged AS (
                        DELETE FROM herald.installation_tags AS t WHERE t.ctid = ANY (ARRAY(
                            SELECT g.ctid FROM installation_written AS w CROSS JOIN LATERAL unnest(w.stored_tags) AS x(tag)
                            CROSS JOIN LATERAL (
                                SELECT e.ctid FROM herald.installation_tags AS e
                                WHERE e.hub = p_hub AND e.tag = x.tag AND e.installation_id = w.id OFFSET 0
                            ) AS g
                            WHERE NOT w.inserted AND NOT (x.tag = ANY (w.new_tags))
                        ))
                        RETURNING t.tag
                    ), installation_tagged AS (
                        INSERT INTO herald.installation_tags AS t (hub, tag, installation_id)
                        SELECT p_hub, x.tag, w.id FROM installation_written AS w CROSS JOIN LATERAL unnest(w.new_tags) AS x(tag)
                        WHERE w.inserted OR NOT (x.tag = ANY (w.stored_tags))
                        ON CONFLICT DO NOTHING
                        RETURNING t.tag
                    ), registration_input AS (
                        SELECT x.*, (sum(x.tag_count) OVER (ORDER BY x.n) - x.tag_count)::integer AS tag_offset,
                            s.ctid AS stored_ctid, s.tags AS stored_tags
                        FROM unnest(p_registration_ids, p_platforms, p_handles, p_p256dh, p_auth, p_expires_at, p_registration_updated_at,
                            p_registration_tag_counts, p_templates, p_push_variables, p_installation_ids, p_legacy_gcm, p_handle_kinds)
                            WITH ORDINALITY AS x(id, platform, handle, p256dh, auth, expires_at, updated_at, tag_count, template,
                                push_variables, installation_id, legacy_gcm, handle_kind, n)
                        LEFT JOIN LATERAL (
                            SELECT e.ctid, e.tags FROM herald.registrations AS e WHERE e.hub = p_hub AND e.id = x.id OFFSET 0
                        ) AS s ON true
                    ), stale AS (
                        DELETE FROM herald.registrations AS r
                        WHERE r.hub = p_hub AND r.id = ANY (ARRAY(
                            SELECT e.id FROM unnest(p_ids) AS x(id) CROSS JOIN LATERAL (
                                SELECT e.id FROM herald.registrations AS e
                                WHERE e.hub = p_hub AND e.installation_id = x.id OFFSET 0
                            ) AS e
                            WHERE NOT (e.id = ANY (p_registration_ids))
                        ))
                            AND coalesce(r.installation_id, '') = ANY (p_ids) AND NOT (r.id = ANY (p_registration_ids))
                        RETURNING r.id
                    ), saved AS (
                        INSERT INTO herald.registrations AS r (hub, id, platform, handle, p256dh, auth, owner, expires_at, version,
                            created_at, updated_at, tags, template, push_variables, installation_id, legacy_gcm, handle_kind)
                        SELECT p_hub, x.id, x.platform, x.handle, x.p256dh, x.auth, NULL, x.expires_at, 1, x.updated_at, x.updated_at,
                            p_registration_tags[x.tag_offset + 1 : x.tag_offset + x.tag_count], x.template, x.push_variables,
                            x.installation_id, x.legacy_gcm, x.handle_kind
                        FROM registration_input AS x WHERE (SELECT count(*) FROM installation) >= 0 ORDER BY x.id COLLATE "C"
                        ON CONFLICT (hub, id) DO UPDATE SET platform = excluded.platform, handle = excluded.handle,
                            p256dh = excluded.p256dh, auth = excluded.auth, owner = excluded.owner,
                            expires_at = excluded.expires_at, version = r.version + 1, updated_at = excluded.updated_at,
                            tags = excluded.tags, template = excluded.template, push_variables = excluded.push_variables,
                            installation_id = excluded.installation_id, legacy_gcm = excluded.legacy_gcm,
                            handle_kind = excluded.handle_kind
                        WHERE r.installation_id IS NOT DISTINCT FROM excluded.installation_id
                            AND r.ctid = (SELECT w.stored_ctid FROM registration_input AS w WHERE w.id = excluded.id)
                        RETURNING r.id, r.tags, r.version
                    ), registration_written AS (
                        SELECT s.id, s.tags AS new_tags, x.stored_tags, s.version = 1 AS inserted
                        FROM saved AS s JOIN registration_input AS x ON x.id = s.id
                    ), registration_untagged AS (
                        DELETE FROM herald.registration_tags AS t WHERE t.ctid = ANY (ARRAY(
                            SELECT g.ctid FROM registration_written AS w CROSS JOIN LATERAL unnest(w.stored_tags) AS x(tag)
                            CROSS JOIN LATERAL (
                                SELECT e.ctid FROM herald.registration_tags AS e
                                WHERE e.hub = p_hub AND e.tag = x.tag AND e.registration_id = w.id OFFSET 0
                            ) AS g
                            WHERE NOT w.inserted AND NOT (x.tag = ANY (w.new_tags))
                        ))
                        RETURNING t.tag
                    ), registration_tagged AS (
                        INSERT INTO herald.registration_tags AS t (hub, tag, registration_id)
                        SELECT p_hub, x.tag, w.id FROM registration_written AS w CROSS JOIN LATERAL unnest(w.new_tags) AS x(tag)
                        WHERE w.inserted OR NOT (x.tag = ANY (w.stored_tags))
                        ON CONFLICT DO NOTHING
                        RETURNING t.tag
                    ), consumed AS (
                        DELETE FROM herald.reservations AS v WHERE v.ctid = ANY (ARRAY(
                            SELECT f.ctid FROM registration_written AS w CROSS JOIN LATERAL (
                                SELECT e.ctid FROM herald.reservations AS e WHERE e.hub = p_hub AND e.id = w.id OFFSET 0
                            ) AS f
                        ))
                        RETURNING v.id
                    )
                    SELECT i.id, i.version, i.created_at FROM installation AS i
                    WHERE herald.unchanged_unless((SELECT count(*) FROM saved) = cardinality(p_registration_ids));
                    GET DIAGNOSTICS returned = ROW_COUNT;
                    PERFORM herald.unchanged_unless(returned = cardinality(p_ids));
                END
                $$
                """
            ]
        ),
    ]

    /// The SQLSTATE of ``herald.fail_unless``: a registry rule did not hold (a conflict).
    static let ruleFailedState = "HR409"

    /// The SQLSTATE of ``herald.unchanged_unless``: a row that a grouped write read was changed
    /// by another writer before the write locked it, and nothing was written.
    static let changedMeanwhileState = "HR412"

    static var latestVersion: Int { all.last?.version ?? 0 }

    /// Brings the schema up to date in one transaction, under the migration lock, and returns
    /// the versions it applied (none when another node got there first). Throws
    /// ``StoreError/Code/schemaTooNew`` for a database migrated by a newer Herald,
    /// without changing it.
    static func migrate(
        on connection: PostgresConnection,
        migrations: [PostgresMigration] = all,
        database: DatabaseURL,
        logger: Logger
    ) async throws -> [Int] {
        let latest = migrations.last?.version ?? 0
        // A migration out of place would be skipped on databases past its number.
        guard zip(migrations, migrations.dropFirst()).allSatisfy({ $0.version < $1.version }) else {
            throw StoreError(code: .database, message: "Herald's schema migrations are not in ascending order")
        }
        return try await connection.withTransaction(logger: logger) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(lockKey))", logger: logger)
            try await connection.query("CREATE SCHEMA IF NOT EXISTS herald", logger: logger)
            try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS herald.schema_migrations (
                    version integer PRIMARY KEY,
                    name text NOT NULL,
                    applied_at timestamptz NOT NULL DEFAULT now()
                )
                """,
                logger: logger
            )
            let rows = try await connection.query("SELECT coalesce(max(version), 0) FROM herald.schema_migrations", logger: logger)
            var current = 0
            for try await (version) in rows.decode(Int.self) { current = version }
            guard current <= latest else {
                throw StoreError(
                    code: .schemaTooNew,
                    message: "the database \(database) has Herald schema version \(current), written by a newer Herald; "
                        + "this version knows schema versions up to \(latest). Upgrade Herald, or use another database."
                )
            }
            var applied: [Int] = []
            for migration in migrations where migration.version > current {
                for statement in migration.statements {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query(
                    "INSERT INTO herald.schema_migrations (version, name) VALUES (\(migration.version), \(migration.name))",
                    logger: logger
                )
                applied.append(migration.version)
                logger.info(
                    "Applied a schema migration",
                    metadata: ["herald.store.migration": "\(migration.version)", "herald.store.migration.name": "\(migration.name)"]
                )
            }
            return applied
        }
    }
}
