import ArgumentParser
import Foundation
import HeraldCore
import HeraldHub
import HeraldPostgres
import HeraldSQLite
import HeraldServer
import HeraldStore
import Logging

struct StoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "Move a deployment's data from one store to another.",
        subcommands: [Copy.self]
    )
}

extension StoreCommand {
    struct Copy: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Copy a SQLite data directory (every hub and all it holds) into a PostgreSQL database.",
            discussion: """
                Copies each hub's definition (rules, keys, push credentials) and everything its store \
                holds: registrations and installations, accounts and sessions, pending and scheduled \
                notifications with their outcomes, secure payloads and rich content. It also offers the \
                data directory's VAPID key and secure-payload key fingerprint to the database, so that \
                the nodes on it keep the web apps' subscriptions and open the copied secure payloads.

                Stop `herald serve` on the data directory first: what changes during the copy may be \
                missed. Running it again is safe: what the database has already is kept as it is, and \
                only what is missing is copied.
                """
        )

        @Option(name: .customLong("from"), help: "The data directory to copy from.")
        var from: String

        @Option(name: .customLong("to"), help: "postgres://user:password@host/database to copy into.")
        var to: String

        func run() async throws {
            let url: DatabaseURL
            do {
                url = try DatabaseURL(to)
            } catch {
                throw ValidationError("--to: \(error.message)")
            }
            let source = try Self.sourceStorage(from)
            var logger = makeLogger("herald", level: .warning)
            logger.logLevel = .warning
            let names = try await source.definitionNames()
            guard !names.isEmpty else { throw HubCommandError("there are no hubs in the data directory \(from): nothing to copy") }
            let appHub = try HeraldConfiguration.load(configFile: nil, overrides: ["HERALD_DATA_DIR": from]).localAppHubName

            do {
                try await PostgresDatabase.with(url: url, maximumConnections: 4, logger: logger) { database in
                    let started = ContinuousClock.now
                    print("Copying \(names.count) hub\(names.count == 1 ? "" : "s") from the data directory \(from) into the database \(url)")
                    try await copyKeys(into: database)
                    var totals = (copied: 0, kept: 0)
                    for name in names {
                        let hub = try await copyHub(name, from: source, into: database, isAppHub: name == appHub, logger: logger)
                        totals.copied += hub.copied
                        totals.kept += hub.kept
                    }
                    // The planner's statistics of the tables just filled: without them, the first
                    // broadcasts and listings would be planned for the tables as they were before.
                    let analyzing = ContinuousClock.now
                    try await database.analyze(Self.analyzedTables)
                    print(
                        "Statistics of the copied tables brought up to date (ANALYZE) in \(String(format: "%.1f", (ContinuousClock.now - analyzing).seconds)) s"
                    )
                    let seconds = (ContinuousClock.now - started).seconds
                    print(
                        "Done in \(String(format: "%.1f", seconds)) s: \(totals.copied.formatted()) rows copied, "
                            + "\(totals.kept.formatted()) already in the database and kept."
                    )
                    print(
                        """
                        Next: start every node with HERALD_DATABASE_URL set to the database, and give each node \
                        \(from)/keys/secure-payload.key: in its data directory (keys/, mode 0600), or as a mounted \
                        secret named by HERALD_SECURE_PAYLOAD_KEY_FILE.
                        """
                    )
                }
            } catch let error as StoreError {
                throw HubCommandError(error.message)
            } catch let error as HeraldError {
                throw HubCommandError(error)
            }
        }

        /// The tables a copy fills: those copied, and the tag indexes that the database's
        /// triggers fill from them.
        static let analyzedTables = StoreCopy.tables.map(\.name) + ["registration_tags", "installation_tags"]

        /// The data directory's hubs; refuses a directory that is not one, or is from a release
        /// that kept everything in one file at its root.
        static func sourceStorage(_ directory: String) throws -> DirectoryHubStorage {
            let fileManager = FileManager.default
            if fileManager.fileExists(atPath: directory + "/herald.sqlite") {
                throw HubCommandError(
                    "the data directory \(directory) is from an earlier release: run this version's `herald serve --data-dir \(directory)` once (it moves the data into the current layout), stop it, and copy again"
                )
            }
            guard fileManager.fileExists(atPath: directory + "/hubs") else {
                throw HubCommandError("\(directory) is not a Herald data directory (it has no hubs/ directory)")
            }
            return DirectoryHubStorage(dataDirectory: directory)
        }

        /// Offers the data directory's VAPID key and secure-payload key fingerprint to the
        /// database, as the first node to start on it would; says so when the database has other
        /// keys already.
        func copyKeys(into database: PostgresDatabase) async throws {
            if let pem = FileManager.default.contents(atPath: from + "/keys/vapid-private.pem").flatMap({ String(data: $0, encoding: .utf8) }) {
                let shared = try await database.replaceSharedValue(named: "webpush.vapid-private-key", expected: nil, with: pem)
                print(
                    shared == pem
                        ? "VAPID key: the data directory's (web apps' subscriptions stay valid)"
                        : "VAPID key: the database has another one already, which the nodes keep using; web apps subscribed through this data directory must subscribe again"
                )
            }
            if FileManager.default.fileExists(atPath: from + "/keys/secure-payload.key") {
                let key = try SecurePayloadKey.loadOrCreate(path: from + "/keys/secure-payload.key")
                let shared = try await database.replaceSharedValue(named: "secure-payload-key.fingerprint", expected: nil, with: key.fingerprint)
                print(
                    shared == key.fingerprint
                        ? "Secure-payload key: the data directory's (fingerprint \(key.fingerprint))"
                        : "Secure-payload key: the nodes on the database use another key (fingerprint \(shared)); they cannot open the secure payloads copied from here"
                )
            }
        }

        /// Copies one hub: its definition, then each table of its store, with progress.
        func copyHub(
            _ name: String,
            from source: DirectoryHubStorage,
            into database: PostgresDatabase,
            isAppHub: Bool,
            logger: Logger
        ) async throws -> (copied: Int, kept: Int) {
            print("hub \(name)")
            guard case .found(let definition) = try await source.definition(named: name, knownRevision: nil) else {
                print("  gone from the data directory while copying; skipped")
                return (0, 0)
            }
            do {
                _ = try await database.createDefinition(named: definition.name, document: definition.document)
                print("  definition (rules, keys, push credentials): copied")
            } catch let error as StoreError where error.code == .nameTaken {
                print("  definition: the database has a hub of this name already, kept as it is; copying the data into it")
            }
            let store = try await source.openStore(forHub: definition.name, logger: logger)
            do {
                // Rich content files of a release before the bytes were in the store.
                if isAppHub, FileManager.default.fileExists(atPath: from + "/rich") {
                    let moved = try await store.importRichContentFiles(directory: from + "/rich")
                    print("  rich content files moved into the hub's store first: \(moved)")
                }
                var totals = (copied: 0, kept: 0)
                for table in StoreCopy.tables {
                    let result = try await copyTable(table, of: definition.name, from: store, into: database)
                    totals.copied += result.copied
                    totals.kept += result.kept
                }
                try await store.close()
                return totals
            } catch {
                try? await store.close()
                throw error
            }
        }

        /// Copies one table a batch at a time, with its progress on standard error (a bar on a
        /// terminal, a line every two seconds otherwise).
        func copyTable(
            _ table: StoreCopy.Table,
            of hub: String,
            from store: SQLiteStore,
            into database: PostgresDatabase
        ) async throws -> (copied: Int, kept: Int) {
            let total = try await store.rowCount(of: table)
            let label = "  " + table.name.replacingOccurrences(of: "_", with: " ")
            guard total > 0 else { return (0, 0) }
            var read = 0, copied = 0
            var after: [StoreCopy.Value]?
            let progress = ProgressReporter(title: "hub \(hub): \(table.name.replacingOccurrences(of: "_", with: " "))", total: total)
            // Also when the copy fails, so that the error starts a line of its own.
            defer { progress.finish() }
            while true {
                let rows = try await store.copyRows(of: table, after: after, limit: table.batchSize)
                guard let last = rows.last else { break }
                copied += try await database.insertCopiedRows(rows, into: table, hub: hub)
                read += rows.count
                after = table.key.map { key in last[table.columnNames.firstIndex(of: key)!] }
                progress.update(done: read)
            }
            progress.finish()
            let inDatabase = try await database.rowCount(of: table, hub: hub)
            print(
                "\(label): \(read.formatted()) row\(read == 1 ? "" : "s"), \(copied.formatted()) copied, \((read - copied).formatted()) already there; \(inDatabase.formatted()) in the database"
            )
            return (copied, read - copied)
        }
    }
}
