package import Foundation
package import HeraldCore
import Synchronization

/// A row as a store reads it back, column by column: what each store's row type provides, so
/// that one decoder per record (below) serves every store.
package protocol StoredRow {
    func string(_ column: String) throws(StoreError) -> String
    func optionalString(_ column: String) throws(StoreError) -> String?
    func int(_ column: String) throws(StoreError) -> Int
    func optionalInt(_ column: String) throws(StoreError) -> Int?
    func bool(_ column: String) throws(StoreError) -> Bool
    /// A registration's or installation's tags, as the store keeps them.
    func tags(_ column: String) throws(StoreError) -> [String]
    /// Bytes (a blob, a `bytea`).
    func bytes(_ column: String) throws(StoreError) -> Data
}

/// A column that is missing or of the wrong type throws ``StoreError/Code/corruptData``.
extension StoredRow {
    /// The ``StoreError/Code/corruptData`` error with `message`.
    package func corrupt(_ message: String) -> StoreError { .corruptData(message) }

    package func date(_ column: String) throws(StoreError) -> Date {
        Date(storeMilliseconds: try int(column))
    }

    package func optionalDate(_ column: String) throws(StoreError) -> Date? {
        try optionalInt(column).map(Date.init(storeMilliseconds:))
    }

    /// Decodes a text column holding JSON.
    package func json<T: Decodable>(_ type: T.Type, _ column: String) throws(StoreError) -> T {
        guard let value = StoredJSON.decode(T.self, from: try string(column)) else {
            throw corrupt("the stored column '\(column)' is not valid JSON")
        }
        return value
    }

    /// Decodes a text column holding JSON, or `nil` for `NULL`.
    package func optionalJSON<T: Decodable>(_ type: T.Type, _ column: String) throws(StoreError) -> T? {
        guard let text = try optionalString(column) else { return nil }
        guard let value = StoredJSON.decode(T.self, from: text) else {
            throw corrupt("the stored column '\(column)' is not valid JSON")
        }
        return value
    }
}

extension Registration {
    /// A registration from the columns of the `registrations` table.
    package init<Row: StoredRow>(stored row: Row) throws(StoreError) {
        guard let platform = Platform(rawValue: try row.string("platform")) else {
            throw row.corrupt("a stored registration has an unknown platform")
        }
        let keys: WebPushKeys? =
            switch (try row.optionalString("p256dh"), try row.optionalString("auth")) {
            case (let p256dh?, let auth?): WebPushKeys(p256dh: p256dh, auth: auth)
            default: nil
            }
        self.init(
            id: try row.string("id"),
            platform: platform,
            handle: try row.string("handle"),
            handleKind: HandleKind(storedValue: try row.optionalString("handle_kind")),
            webPushKeys: keys,
            owner: try row.optionalString("owner"),
            expiresAt: try row.optionalDate("expires_at"),
            template: try StoredTemplates.shared.template(row),
            pushVariables: try row.optionalJSON([String: String].self, "push_variables") ?? [:],
            installationID: try row.optionalString("installation_id"),
            legacyGCM: try row.bool("legacy_gcm"),
            version: try row.int("version"),
            createdAt: try row.date("created_at"),
            updatedAt: try row.date("updated_at")
        )
        // Stored sorted and unique: skip the initializer's re-sorting.
        tags = try row.tags("tags")
    }
}

extension Installation {
    /// An installation from the columns of the `installations` table (its document as text).
    package init<Row: StoredRow>(stored row: Row) throws(StoreError) {
        let document = try row.json(StoredInstallationDocument.self, "document")
        guard
            let installation = document.installation(
                id: try row.string("id"),
                userId: try row.optionalString("user_id"),
                tags: try row.tags("tags"),
                version: try row.int("version"),
                createdAt: try row.date("created_at"),
                updatedAt: try row.date("updated_at")
            )
        else {
            throw row.corrupt("a stored installation has an unknown platform")
        }
        self = installation
    }
}

extension NotificationRecord {
    /// A notification from the columns of the `notifications` table.
    package init<Row: StoredRow>(stored row: Row) throws(StoreError) {
        guard let state = NotificationState(rawValue: try row.string("state")) else {
            throw row.corrupt("a stored notification has an unknown state")
        }
        self.init(
            id: try row.string("id"),
            tagExpression: try row.optionalString("tag_expression"),
            payloads: try row.json([PlatformPayload].self, "payloads"),
            template: try row.optionalJSON(TemplateSend.self, "template"),
            directTargets: try row.optionalJSON([DirectTarget].self, "direct_targets"),
            scheduledAt: try row.optionalDate("scheduled_at"),
            state: state,
            counts: try row.json(OutcomeCounts.self, "counts"),
            cursor: try row.optionalString("cursor"),
            partOf: try row.optionalString("part_of"),
            upperBound: try row.optionalString("upper_bound"),
            traceContext: try row.optionalString("trace_context"),
            spread: try row.optionalInt("spread_seconds").map { .seconds($0) },
            broadcastChannel: try row.optionalString("broadcast_channel"),
            enqueuedAt: try row.date("enqueued_at"),
            startedAt: try row.optionalDate("started_at"),
            endedAt: try row.optionalDate("ended_at")
        )
    }
}

extension RichContent {
    /// Rich content's metadata from the columns of the `rich_content` table.
    package init<Row: StoredRow>(stored row: Row) throws(StoreError) {
        self.init(
            id: try row.string("id"),
            owner: try row.string("owner"),
            mediaType: try row.string("media_type"),
            size: try row.int("size"),
            createdAt: try row.date("created_at"),
            expiresAt: try row.date("expires_at")
        )
    }
}

extension Account {
    /// An account from the columns of the `accounts` table.
    package init<Row: StoredRow>(stored row: Row) throws(StoreError) {
        self.init(username: try row.string("username"), passwordHash: try row.string("password_hash"), createdAt: try row.date("created_at"))
    }
}

extension Session {
    /// A session from the columns of the `sessions` table.
    package init<Row: StoredRow>(stored row: Row) throws(StoreError) {
        self.init(tokenHash: try row.string("token_hash"), username: try row.string("username"), expiresAt: try row.date("expires_at"))
    }
}

extension SecureMessage {
    /// A secure message from the columns of the `secure_messages` table as a read returns
    /// them, with the read counted: the message as it was before this read.
    package init<Row: StoredRow>(storedAfterRead row: Row) throws(StoreError) {
        let readCount = try row.int("read_count") - 1
        self.init(
            id: try row.string("id"),
            recipient: try row.string("recipient"),
            sender: try row.string("sender"),
            sealed: try row.bytes("sealed"),
            createdAt: try row.date("created_at"),
            expiresAt: try row.date("expires_at"),
            readCount: readCount,
            firstReadAt: readCount == 0 ? nil : try row.optionalDate("first_read_at")
        )
    }
}

extension HubJob {
    /// A job from the columns of the `jobs` table (its files aside).
    package init<Row: StoredRow>(stored row: Row) throws(StoreError) {
        guard let kind = HubJob.Kind(rawValue: try row.string("kind")) else {
            throw row.corrupt("a stored job has an unknown kind")
        }
        guard let state = HubJob.State(rawValue: try row.string("state")) else {
            throw row.corrupt("a stored job has an unknown state")
        }
        self.init(
            id: try row.string("id"),
            kind: kind,
            state: state,
            processed: try row.int("processed"),
            total: try row.optionalInt("total"),
            succeeded: try row.int("succeeded"),
            failed: try row.int("failed"),
            cursor: try row.optionalString("cursor"),
            inputFile: try row.optionalString("input_file"),
            failure: try row.optionalString("failure"),
            createdAt: try row.date("created_at"),
            updatedAt: try row.date("updated_at")
        )
    }

    /// The columns ``init(stored:)`` reads, in the order stores list them.
    package static let storedColumns = """
        id, kind, state, processed, total, succeeded, failed, cursor, input_file, failure, created_at, updated_at
        """
}

/// Registration templates decoded from their stored JSON, shared by every read of this
/// process: the devices of an app carry few distinct templates, and a delivery page of
/// template registrations would otherwise decode the same JSON once per device.
///
/// Bounded: past ``limit`` distinct texts it starts again empty.
final class StoredTemplates: Sendable {
    static let shared = StoredTemplates()
    static let limit = 256

    private let decoded = Mutex<[String: RegistrationTemplate]>([:])

    /// The template in `row`'s `template` column, `nil` for none.
    func template<Row: StoredRow>(_ row: Row) throws(StoreError) -> RegistrationTemplate? {
        guard let text = try row.optionalString("template") else { return nil }
        if let template = decoded.withLock({ $0[text] }) { return template }
        guard let template = StoredJSON.decode(RegistrationTemplate.self, from: text) else {
            throw row.corrupt("the stored column 'template' is not valid JSON")
        }
        decoded.withLock { decoded in
            if decoded.count >= Self.limit { decoded.removeAll(keepingCapacity: true) }
            decoded[text] = template
        }
        return template
    }
}
