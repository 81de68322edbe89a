/// The SQLite schema as released versions of Herald left it, frozen here so that tests
/// can build an old file and check that opening it migrates it. Never change these: they
/// are what files in the field hold.
enum SchemaFixtures {
    /// Schema version 1: registrations, reservations, accounts, sessions, notifications.
    static let version1: [String] = [
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

    /// Schema version 2: secure messages and rich content.
    static let version2: [String] = [
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

    /// The bookkeeping table the store keeps, with `versions` recorded as applied.
    static func migrationsTable(versions: ClosedRange<Int>) -> [String] {
        ["CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY NOT NULL, name TEXT NOT NULL, applied_at INTEGER NOT NULL)"]
            + versions.map { "INSERT INTO schema_migrations (version, name, applied_at) VALUES (\($0), 'fixture', 0)" }
    }
}
