public import Foundation
public import Logging

/// Where a deployment keeps its hubs: each hub's definition (its rules, keys and push
/// credentials, as one document) and each hub's ``HeraldStore``.
///
/// Two implementations, each beside its store: a data directory (`DirectoryHubStorage` in
/// HeraldSQLite: `hubs/<name>/hub.json` and one SQLite file per hub, for one node) and a
/// PostgreSQL database (`PostgresDatabase` in HeraldPostgres: one table of definitions and one
/// set of tables for every hub's data, shared by several nodes). What differs between them is
/// said here (``Store``, ``isSharedByNodes``), so that a caller needs neither one by name. Definitions are opaque documents
/// here; the hub catalog reads and writes them. Every change is made under a lock that every
/// process on the same storage shares, so `herald hub …` and running servers can change
/// hubs at the same time, and a change is seen by all of them at once.
public protocol HubStorage: Sendable {
    /// The store of one hub on this storage (`SQLiteStore`, `PostgresStore`); a caller that
    /// holds `any HubStorage` gets `any HeraldStore`.
    associatedtype Store: HeraldStore

    /// Whether several nodes share this storage (a database) rather than one node keeping it
    /// alone (a data directory). What every node must agree on (the VAPID key, the
    /// secure-payload key's fingerprint) is kept in the ``sharedValue(named:)`` of storage that
    /// nodes share, and in the node's own files otherwise.
    var isSharedByNodes: Bool { get }

    /// Where the hubs are, for messages: "the data directory /var/lib/herald",
    /// "the database postgres://herald:***@db:5432/herald". Never holds a password.
    var location: String { get }

    /// The definition of the hub `name` (matched exactly, else case-insensitively):
    /// ``HubDefinitionLookup/unchanged`` when its revision is still `knownRevision`, so that a
    /// caller that caches definitions pays for the document only when it changed.
    func definition(named name: String, knownRevision: String?) async throws -> HubDefinitionLookup

    /// The names of every hub, sorted case-insensitively.
    func definitionNames() async throws -> [String]

    /// Saves the definition of a new hub.
    ///
    /// - Throws: ``StoreError`` `nameTaken` if a hub of that name, in any case, exists.
    func createDefinition(named name: String, document: Data) async throws -> StoredHubDefinition

    /// Changes the definition of the hub `name` (matched as ``definition(named:knownRevision:)``
    /// matches) under the lock: `change` gets what is stored and returns the new document, or
    /// `nil` to leave it as it is. Returns what is stored afterwards; `nil` if there is no
    /// such hub. Whatever `change` throws is thrown, and then nothing changes.
    func updateDefinition(
        named name: String,
        _ change: (StoredHubDefinition) throws -> Data?
    ) async throws -> StoredHubDefinition?

    /// Deletes the hub `name` (matched as ``definition(named:knownRevision:)`` matches): its
    /// definition and everything its store holds. Returns the name of the hub deleted, `nil`
    /// if there was none.
    func deleteHub(named name: String) async throws -> String?

    /// Opens the store of the hub `name` (its exact name). The caller closes it.
    func openStore(forHub name: String, logger: Logger) async throws -> Store

    /// Records that the node `node` (a name unique to one running process) is alive now, and
    /// returns how many nodes are: those that reported within `window`, this one included.
    /// Nodes share what must hold for all of them together (the hub API's rate limit) by it.
    func reportAlive(node: String, window: Duration) async throws -> Int

    /// A value that every process on this storage shares and that outlives them (a key every
    /// node must use, a push provider's token): the one stored under `name`, or `nil`.
    func sharedValue(named name: String) async throws -> String?

    /// Stores `value` under `name` if what is stored there is still `expected` (`nil`:
    /// nothing), under the storage's lock. Returns what is stored afterwards: `value`, or
    /// what another process stored first. Values may be secrets: the storage keeps them
    /// private to the service's user.
    func replaceSharedValue(named name: String, expected: String?, with value: String) async throws -> String
}

extension HubStorage {
    /// Storage that one node uses alone: always one.
    public func reportAlive(node: String, window: Duration) async throws -> Int { 1 }
}

/// A hub's definition as a ``HubStorage`` keeps it.
public struct StoredHubDefinition: Sendable, Hashable {
    /// The hub's name, as spelled when it was created.
    public var name: String
    /// The definition, as the hub catalog wrote it (JSON).
    public var document: Data
    /// Changes with every write of the definition (and differs between a hub and one created
    /// again under its name).
    public var revision: String

    public init(name: String, document: Data, revision: String) {
        self.name = name
        self.document = document
        self.revision = revision
    }
}

/// What ``HubStorage/definition(named:knownRevision:)`` found.
public enum HubDefinitionLookup: Sendable, Hashable {
    /// There is no such hub.
    case missing
    /// The definition is still the revision the caller knows.
    case unchanged
    /// The definition, which the caller did not know.
    case found(StoredHubDefinition)
}
