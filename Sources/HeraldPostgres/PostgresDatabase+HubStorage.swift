public import Foundation
import HeraldCore
public import HeraldStore
public import Logging
import PostgresNIO

/// The hubs of a PostgreSQL database: their definitions in `herald.hubs`, their data in the
/// tables every hub shares. Every node on the database sees a change at once: a definition's
/// revision is checked on every read.
extension PostgresDatabase: HubStorage {
    /// The tables that hold a hub's data, deleted with the hub.
    static let hubTables = [
        "receipts", "receipt_counts", "webhook_attempts", "webhook_outbox", "webhook_endpoints", "job_output_chunks", "jobs", "job_file_chunks", "job_files",
        "rich_recipients", "rich_content", "secure_messages", "notifications", "sessions", "accounts",
        "installation_tags", "installations", "registration_tags", "reservations", "registrations",
    ]

    public var location: String { "the database \(url)" }

    /// The definition of the hub `name` (see the protocol), read with one small query.
    ///
    /// Every request to a hub asks this, so reads that arrive while others are being made wait
    /// and share one query per name and known revision: each is still answered by a query sent
    /// after it was asked, so a key rotated on another node is refused as soon as before.
    public func definition(named name: String, knownRevision: String?) async throws -> HubDefinitionLookup {
        try await definitionReads.submit(DefinitionRead(name: name, knownRevision: knownRevision)) { reads in
            await self.readDefinitions(reads)
        }
    }

    /// One query per distinct read of `reads`; an answer per read, in order.
    private func readDefinitions(_ reads: [DefinitionRead]) async -> [Result<HubDefinitionLookup, any Error>] {
        var answers: [DefinitionRead: Result<HubDefinitionLookup, any Error>] = [:]
        for read in reads where answers[read] == nil {
            do {
                answers[read] = .success(try await readDefinition(read))
            } catch {
                answers[read] = .failure(error)
            }
        }
        return reads.map { answers[$0]! }
    }

    private func readDefinition(_ read: DefinitionRead) async throws -> HubDefinitionLookup {
        let logger = clientLogger
        guard
            let row = try await run({ connection in
                var rows: [ReadHubDefinition.Row] = []
                for try await row in try await connection.execute(ReadHubDefinition(read: read), logger: logger) { rows.append(row) }
                return rows.first
            })
        else {
            return .missing
        }
        guard let document = row.document else { return .unchanged }
        return .found(StoredHubDefinition(name: row.name, document: Data(document.utf8), revision: row.revision))
    }

    public func definitionNames() async throws -> [String] {
        let rows = try await run { connection in
            try await connection.query("SELECT name FROM herald.hubs ORDER BY lower(name), name", logger: self.clientLogger).collect()
        }
        return try rows.map { row throws(StoreError) in try row.byName.string("name") }
    }

    public func createDefinition(named name: String, document: Data) async throws -> StoredHubDefinition {
        var insert = SQLStatement()
        insert.sql = """
            INSERT INTO herald.hubs (name, document, revision) \
            VALUES (\(insert.bind(name)), \(insert.bind(String(decoding: document, as: UTF8.self))), nextval('herald.hub_revisions')) \
            ON CONFLICT DO NOTHING RETURNING revision::text AS revision
            """
        let rows = try await run { [insert] connection in try await connection.query(insert.query, logger: self.clientLogger).collect() }
        guard let row = rows.first else {
            var existing = SQLStatement()
            existing.sql = "SELECT name FROM herald.hubs WHERE lower(name) = lower(\(existing.bind(name)))"
            let found = try await run { [existing] connection in try await connection.query(existing.query, logger: self.clientLogger).collect() }
            let taken = try found.first.map { row throws(StoreError) in try row.byName.string("name") } ?? name
            throw StoreError.hubNameTaken(taken)
        }
        return StoredHubDefinition(name: name, document: document, revision: try row.byName.string("revision"))
    }

    /// Reads the definition, applies `change`, and writes the result only if the revision is
    /// still the one read (a compare-and-swap); when another node wrote in between, it reads
    /// again and applies `change` to what that node wrote. Each step is one statement, so each
    /// has a request's deadline, and `change` runs outside any statement.
    public func updateDefinition(
        named name: String,
        _ change: (StoredHubDefinition) throws -> Data?
    ) async throws -> StoredHubDefinition? {
        for _ in 0..<Self.definitionUpdateAttempts {
            var read = SQLStatement()
            let placeholder = read.bind(name)
            read.sql = """
                SELECT name, revision::text AS revision, document FROM herald.hubs WHERE lower(name) = lower(\(placeholder)) \
                ORDER BY name = \(placeholder) DESC LIMIT 1
                """
            let readQuery = read.query
            let row = try await run { connection in
                try await connection.query(readQuery, logger: self.clientLogger).collect().first
            }
            guard let found = row?.byName else { return nil }
            let current = StoredHubDefinition(
                name: try found.string("name"), document: Data(try found.string("document").utf8), revision: try found.string("revision")
            )
            guard let document = try change(current) else { return current }
            var write = SQLStatement()
            write.sql = """
                UPDATE herald.hubs SET document = \(write.bind(String(decoding: document, as: UTF8.self))), \
                revision = nextval('herald.hub_revisions') WHERE name = \(write.bind(current.name)) \
                AND revision = \(write.bind(current.revision))::bigint RETURNING revision::text AS revision
                """
            let writeQuery = write.query
            let writtenRow = try await run { connection in
                try await connection.query(writeQuery, logger: self.clientLogger).collect().first
            }
            if let written = writtenRow?.byName {
                return StoredHubDefinition(name: current.name, document: document, revision: try written.string("revision"))
            }
            // Another node changed (or deleted) the hub since the read: read it again.
        }
        throw StoreError.databaseUnavailable("hub \(name)'s definition kept changing while it was being updated; try again")
    }

    /// How many times ``updateDefinition(named:_:)`` reads again after losing a race.
    static let definitionUpdateAttempts = 20

    /// Deletes the hub's definition and every row of its data, in one transaction.
    public func deleteHub(named name: String) async throws -> String? {
        try await transaction { [self] connection in
            var delete = SQLStatement()
            let placeholder = delete.bind(name)
            delete.sql = """
                DELETE FROM herald.hubs WHERE name = (SELECT name FROM herald.hubs WHERE lower(name) = lower(\(placeholder)) \
                ORDER BY name = \(placeholder) DESC LIMIT 1) RETURNING name
                """
            guard let row = try await connection.query(delete.query, logger: self.clientLogger).collect().first?.byName else {
                return nil
            }
            let deleted = try row.string("name")
            for table in Self.hubTables {
                var data = SQLStatement()
                data.sql = "DELETE FROM herald.\(table) WHERE hub = \(data.bind(deleted))"
                try await connection.query(data.query, logger: self.clientLogger)
            }
            return deleted
        }
    }

    /// Every node on the database shares it.
    public var isSharedByNodes: Bool { true }

    public func openStore(forHub name: String, logger: Logger) async throws -> PostgresStore {
        store(hub: name)
    }

    /// Records this node's report in `herald.nodes` (by the database's clock, so that the nodes'
    /// clocks do not matter), forgets nodes silent for a day, and counts those seen within
    /// `window`.
    public func reportAlive(node: String, window: Duration) async throws -> Int {
        var report = SQLStatement()
        report.sql = """
            WITH gone AS (DELETE FROM herald.nodes WHERE seen_at < now() - interval '1 day') \
            INSERT INTO herald.nodes (id, seen_at) VALUES (\(report.bind(node)), now()) \
            ON CONFLICT (id) DO UPDATE SET seen_at = now()
            """
        var count = SQLStatement()
        count.sql = """
            SELECT count(*) AS n FROM herald.nodes WHERE id <> \(count.bind(node)) \
            AND seen_at > now() - \(count.bind(Int(window.seconds.rounded(.up)))) * interval '1 second'
            """
        let others = try await run { [report, count] connection in
            try await connection.query(report.query, logger: self.clientLogger)
            return try await connection.query(count.query, logger: self.clientLogger).collect()
        }
        return 1 + (try others.first?.byName.int("n") ?? 0)
    }
}

extension PostgresDatabase {
    public func sharedValue(named name: String) async throws -> String? {
        var read = SQLStatement()
        read.sql = "SELECT value FROM herald.settings WHERE name = \(read.bind(name))"
        let rows = try await run { [read] connection in try await connection.query(read.query, logger: self.clientLogger).collect() }
        return try rows.first.map { row throws(StoreError) in try row.byName.string("value") }
    }

    /// With `expected` `nil`, every node asking at once gets the one value stored first.
    public func replaceSharedValue(named name: String, expected: String?, with value: String) async throws -> String {
        if let expected {
            var update = SQLStatement()
            update.sql = """
                UPDATE herald.settings SET value = \(update.bind(value)) \
                WHERE name = \(update.bind(name)) AND value = \(update.bind(expected)) RETURNING value
                """
            let rows = try await run { [update] connection in try await connection.query(update.query, logger: self.clientLogger).collect() }
            if !rows.isEmpty { return value }
            // Another value is stored (or none: then this one is offered as a first value).
            if let current = try await sharedValue(named: name) { return current }
        }
        var statement = SQLStatement()
        let placeholder = statement.bind(name)
        statement.sql = """
            WITH inserted AS (INSERT INTO herald.settings (name, value) VALUES (\(placeholder), \(statement.bind(value))) \
            ON CONFLICT (name) DO NOTHING RETURNING value) \
            SELECT value FROM inserted UNION ALL SELECT value FROM herald.settings WHERE name = \(placeholder) LIMIT 1
            """
        let rows = try await run { [statement] connection in try await connection.query(statement.query, logger: self.clientLogger).collect() }
        // Another node may have stored it while this statement ran, after its snapshot: read it now.
        if let stored = try rows.first.map({ row throws(StoreError) in try row.byName.string("value") }) {
            return stored
        }
        if let stored = try await sharedValue(named: name) { return stored }
        throw StoreError(code: .database, message: "the shared value \(name) was neither stored nor read")
    }
}

/// A read of a hub's definition: its name, and the revision the caller knows.
struct DefinitionRead: Hashable, Sendable {
    var name: String
    var knownRevision: String?
}

/// The query of ``PostgresDatabase/definition(named:knownRevision:)``, prepared once per
/// connection: the exact name first, then any other case; the document only when it changed.
struct ReadHubDefinition: PostgresPreparedStatement {
    static let name = "herald_read_hub_definition_v1"
    static let sql = """
        SELECT name::text, revision::text AS revision, \
        CASE WHEN revision::text IS DISTINCT FROM $2::text THEN document END AS document \
        FROM herald.hubs WHERE lower(name) = lower($1::text) ORDER BY name = $1::text DESC LIMIT 1
        """

    struct Row: Sendable {
        var name: String
        var revision: String
        var document: String?
    }

    static var bindingDataTypes: [PostgresDataType] { [.text, .text] }

    var read: DefinitionRead

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 2)
        bindings.append(read.name)
        bindings.append(read.knownRevision)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        let (name, revision, document) = try row.decode((String, String, String?).self)
        return Row(name: name, revision: revision, document: document)
    }
}
