import Foundation
import HeraldCore
import HeraldSQLite
import HeraldStore
public import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension HubCatalog {
    /// The hub that keeps the app backend's devices, accounts and content, unless the
    /// configuration names another.
    public static let defaultAppHubName = "app"

    /// Where releases before the catalog kept the app backend's store: the data directory's
    /// root. `nil` when the hubs are not kept in a data directory.
    public var legacyStorePath: String? {
        directoryStorage.map { "\($0.dataDirectory)/\(DirectoryHubStorage.storeFileName)" }
    }

    /// What ``prepareAppHub(named:logger:)`` did.
    public enum AppHubPreparation: Sendable, Equatable {
        /// The hub was there already.
        case existing
        /// The hub was created, empty.
        case created
        /// The store an earlier release left at the data directory's root was moved into the
        /// hub, with every registration, account, session, notification and content in it.
        case migrated
    }

    /// Makes sure the app backend's hub exists, so that it opens like every other hub: creates
    /// it if needed (several nodes starting at once create it once), and, in a data directory,
    /// moves the store that an earlier release kept at its root (`<data-dir>/herald.sqlite`)
    /// into it, losing nothing.
    ///
    /// The move survives a crash at any point: the store is checkpointed (its write-ahead log
    /// folded into the file) and closed first, then its side files and last the file itself
    /// are renamed into the hub's directory; until that last rename the next start finds the
    /// old file and moves it again. A hub that already has a store of its own is never
    /// overwritten: the old file is then left where it is, and a warning says so.
    @discardableResult
    public func prepareAppHub(named name: String, logger: Logger) async throws -> AppHubPreparation {
        let fileManager = FileManager.default
        var created = false
        let hub: HubDefinition
        if let existing = try await self.hub(named: name) {
            hub = existing
        } else {
            do {
                // The app backend notifies users by their `username:` tags: a device with the hub's
                // Listen key must not claim another user's.
                hub = try await insert(name: name, reservedTagPrefixes: ["username:"])
                created = true
                logger.info("Created the app backend's hub", metadata: ["herald.hub": "\(hub.name)"])
            } catch let error as StoreError where error.code == .nameTaken {
                // Another node created it at the same moment.
                guard let existing = try await self.hub(named: name) else { throw error }
                hub = existing
            }
        }
        guard let directory = directoryStorage, let legacy = legacyStorePath, fileManager.fileExists(atPath: legacy) else {
            return created ? .created : .existing
        }
        let target = directory.storePath(of: hub.name)
        if fileManager.fileExists(atPath: target) {
            logger.warning(
                "A store from an earlier release is left alone: the app backend's hub has a store of its own",
                metadata: ["herald.hub": "\(hub.name)", "herald.path": "\(legacy)"]
            )
            return created ? .created : .existing
        }
        // Fold the write-ahead log into the file (and bring its schema up to date).
        let store = try await SQLiteStore.open(path: legacy, logger: logger)
        let registrations = try await store.registrationCount()
        try await store.close()
        for suffix in ["-wal", "-shm", ""] where fileManager.fileExists(atPath: legacy + suffix) {
            guard rename(legacy + suffix, target + suffix) == 0 else {
                throw HeraldError(code: .internalError, message: "cannot move \(legacy + suffix) to \(target + suffix): errno \(errno)")
            }
        }
        logger.notice(
            "Moved the app backend's store from the data directory's root into its hub: its registrations, accounts, sessions, notifications and content are kept",
            metadata: ["herald.hub": "\(hub.name)", "herald.from": "\(legacy)", "herald.to": "\(target)", "herald.registrations": "\(registrations)"]
        )
        return .migrated
    }
}
