public import Foundation
import HeraldCore
public import HeraldStore
import HeraldTLS
public import Logging

#if canImport(Glibc)
import Glibc
// `struct stat`'s fields are attributed to CoreFoundation's module when another file of the
// target imports Crypto (or to CDispatch); without these imports, MemberImportVisibility hides them.
import CoreFoundation
import CDispatch
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The hubs of one node, in its data directory, each in a directory of its own:
///
/// ```
/// <data-dir>/hubs/<name>/hub.json        the definition: rules, keys, credentials (mode 0600)
/// <data-dir>/hubs/<name>/herald.sqlite   the hub's store
/// ```
///
/// Changes are written atomically (a temporary file renamed into place) under a lock file,
/// so `herald hub …` and a running `herald serve` can share a data directory. A definition's
/// revision is its file's identity (device, inode, size, modification and change times), so
/// telling whether it changed costs one `stat`.
public final class DirectoryHubStorage: HubStorage {
    /// The definition's file name in a hub's directory.
    public static let definitionFileName = "hub.json"
    /// The store's file name in a hub's directory.
    public static let storeFileName = "herald.sqlite"

    /// Herald's data directory.
    public let dataDirectory: String
    /// `<data-dir>/hubs`.
    public let directory: String

    /// - Parameter dataDirectory: Herald's data directory; the hubs live in its `hubs`
    ///   folder, which is created with the first hub.
    public init(dataDirectory: String) {
        let trimmed = dataDirectory.count > 1 && dataDirectory.hasSuffix("/") ? String(dataDirectory.dropLast()) : dataDirectory
        self.dataDirectory = trimmed
        self.directory = trimmed + "/hubs"
    }

    public var location: String { "the data directory \(dataDirectory)" }

    /// The directory of the hub `name`.
    public func directory(of name: String) -> String { "\(directory)/\(name)" }

    /// The path of the hub `name`'s store.
    public func storePath(of name: String) -> String { "\(directory(of: name))/\(Self.storeFileName)" }

    /// The path of the hub `name`'s definition.
    public func definitionPath(of name: String) -> String { "\(directory(of: name))/\(Self.definitionFileName)" }

    // MARK: HubStorage

    public func definition(named name: String, knownRevision: String?) async throws -> HubDefinitionLookup {
        try lookup(name, knownRevision: knownRevision)
    }

    public func definitionNames() async throws -> [String] {
        try names()
    }

    public func createDefinition(named name: String, document: Data) async throws -> StoredHubDefinition {
        try withLock { () throws -> StoredHubDefinition in
            if let existing = try names().first(where: { $0.caseInsensitiveCompare(name) == .orderedSame }) {
                throw StoreError.hubNameTaken(existing)
            }
            let hubDirectory = directory(of: name)
            if mkdir(hubDirectory, 0o700) != 0, errno != EEXIST {
                throw HeraldError(code: .internalError, message: "cannot create the hub directory \(hubDirectory): errno \(errno)")
            }
            return try write(name, document)
        }
    }

    public func updateDefinition(
        named name: String,
        _ change: (StoredHubDefinition) throws -> Data?
    ) async throws -> StoredHubDefinition? {
        try withLock { () throws -> StoredHubDefinition? in
            guard case .found(let current) = try lookup(name, knownRevision: nil) else { return nil }
            guard let document = try change(current) else { return current }
            return try write(current.name, document)
        }
    }

    /// Deletes the hub's directory: its definition, its store and everything else in it. The
    /// directory is first renamed out of the way, so the hub disappears at once even if
    /// removing its files takes a while. A hub whose `hub.json` is damaged can be deleted too.
    public func deleteHub(named name: String) async throws -> String? {
        try withLock { () throws(HeraldError) -> String? in
            let all = HubName.isValid(name) ? try names() : []
            guard let actual = all.first(where: { $0 == name }) ?? all.first(where: { $0.caseInsensitiveCompare(name) == .orderedSame })
            else { return nil }
            let source = directory(of: actual)
            let doomed = "\(directory)/.deleted-\(actual)-\(UInt32.random(in: 0 ... .max))"
            guard rename(source, doomed) == 0 else {
                throw .init(code: .internalError, message: "cannot delete the hub directory \(source): errno \(errno)")
            }
            do {
                try FileManager.default.removeItem(atPath: doomed)
            } catch {
                throw .init(code: .internalError, message: "hub \(actual) is deleted, but removing its files in \(doomed) failed")
            }
            return actual
        }
    }

    /// A data directory is one node's own.
    public var isSharedByNodes: Bool { false }

    public func openStore(forHub name: String, logger: Logger) async throws -> SQLiteStore {
        try await SQLiteStore.open(path: storePath(of: name), logger: logger)
    }

    /// `<data-dir>/shared-values.json`: the values the processes on this data directory share.
    public var sharedValuesPath: String { "\(dataDirectory)/shared-values.json" }

    public func sharedValue(named name: String) async throws -> String? {
        try withLock { try readSharedValues()[name] }
    }

    public func replaceSharedValue(named name: String, expected: String?, with value: String) async throws -> String {
        try withLock { () throws(HeraldError) -> String in
            var values = try readSharedValues()
            guard values[name] == expected else { return values[name] ?? value }
            values[name] = value
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
            do {
                let data = try encoder.encode(values)
                try SecureFile.write(String(decoding: data, as: UTF8.self), to: sharedValuesPath, mode: 0o600)
            } catch {
                throw .init(code: .internalError, message: "cannot write \(sharedValuesPath)")
            }
            return value
        }
    }

    /// The shared values, from their file (none when there is no file).
    private func readSharedValues() throws(HeraldError) -> [String: String] {
        guard let data = FileManager.default.contents(atPath: sharedValuesPath) else {
            guard FileManager.default.fileExists(atPath: sharedValuesPath) else { return [:] }
            throw .init(code: .internalError, message: "cannot read \(sharedValuesPath)")
        }
        do {
            return try JSONDecoder().decode([String: String].self, from: data)
        } catch {
            throw .init(
                code: .internalError,
                message:
                    "\(sharedValuesPath) is damaged: restore it from a backup, or delete it (a new APNs provider token is then signed, and the console's operators must be created again with herald admin create)"
            )
        }
    }

    // MARK: Files

    /// The names of the hub directories that hold a definition, sorted.
    private func names() throws(HeraldError) -> [String] {
        let entries: [String]
        do {
            entries = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            guard FileManager.default.fileExists(atPath: directory) else { return [] }
            // Made between the listing and the check (another process or catalog creating its
            // first hub, unlocked readers meanwhile): list it again.
            do {
                entries = try FileManager.default.contentsOfDirectory(atPath: directory)
            } catch {
                throw .init(code: .internalError, message: "cannot list the hubs in \(directory)")
            }
        }
        return
            entries
            .filter { HubName.isValid($0) && FileManager.default.fileExists(atPath: definitionPath(of: $0)) }
            .sorted { ($0.lowercased(), $0) < ($1.lowercased(), $1) }
    }

    private func lookup(_ name: String, knownRevision: String?) throws(HeraldError) -> HubDefinitionLookup {
        if let found = try read(name, knownRevision: knownRevision) { return found }
        guard let actual = try names().first(where: { $0.caseInsensitiveCompare(name) == .orderedSame }), actual != name else {
            return .missing
        }
        return try read(actual, knownRevision: knownRevision) ?? .missing
    }

    /// The definition in `<name>/hub.json`; `nil` if there is none.
    private func read(_ name: String, knownRevision: String?) throws(HeraldError) -> HubDefinitionLookup? {
        let path = definitionPath(of: name)
        guard let stamp = try FileStamp(path: path) else { return nil }
        if stamp.revision == knownRevision { return .unchanged }
        // Read after the stat: the contents are at least as new as the stamp, so the worst
        // case is one extra read later, never a stale definition kept.
        guard let data = FileManager.default.contents(atPath: path) else {
            guard FileManager.default.fileExists(atPath: path) else { return nil }
            throw .init(code: .internalError, message: "cannot read hub \(name)'s definition \(path)")
        }
        return .found(StoredHubDefinition(name: name, document: data, revision: stamp.revision))
    }

    /// Writes `document` to `<name>/hub.json` (mode 0600, atomically).
    private func write(_ name: String, _ document: Data) throws(HeraldError) -> StoredHubDefinition {
        let path = definitionPath(of: name)
        do {
            try SecureFile.write(String(decoding: document, as: UTF8.self), to: path, mode: 0o600)
        } catch {
            throw .init(code: .internalError, message: "cannot write hub \(name)'s definition \(path)")
        }
        let revision = (try? FileStamp(path: path))?.revision ?? UUID.random().uuidString
        return StoredHubDefinition(name: name, document: document, revision: revision)
    }

    /// Runs `body` holding an exclusive lock on `<hubs>/.lock`, shared with other processes
    /// (a `herald hub` command beside a running server) and other storages in this process.
    private func withLock<T>(_ body: () throws -> T) throws -> T {
        do {
            try SecureFile.ensureDirectory(dataDirectory)
            try SecureFile.ensureDirectory(directory)
        } catch {
            throw HeraldError(code: .internalError, message: "cannot create the hubs directory \(directory)")
        }
        let lockPath = "\(directory)/.lock"
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw HeraldError(code: .internalError, message: "cannot open the lock file \(lockPath): errno \(errno)")
        }
        defer { close(fd) }
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else {
                throw HeraldError(code: .internalError, message: "cannot lock \(lockPath): errno \(errno)")
            }
        }
        defer { flock(fd, LOCK_UN) }
        return try body()
    }
}

/// What identifies one version of a file: a rename gives a new inode, a write a new
/// modification time or size.
private struct FileStamp: Hashable, Sendable {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    var seconds: Int
    var nanoseconds: Int
    var changeSeconds: Int
    var changeNanoseconds: Int

    /// The stamp of `path`, or `nil` if there is no file there.
    init?(path: String) throws(HeraldError) {
        var info = stat()
        guard stat(path, &info) == 0 else {
            if errno == ENOENT || errno == ENOTDIR { return nil }
            throw .init(code: .internalError, message: "cannot read \(path): errno \(errno)")
        }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        #if canImport(Darwin)
        seconds = Int(info.st_mtimespec.tv_sec)
        nanoseconds = Int(info.st_mtimespec.tv_nsec)
        changeSeconds = Int(info.st_ctimespec.tv_sec)
        changeNanoseconds = Int(info.st_ctimespec.tv_nsec)
        #else
        seconds = Int(info.st_mtim.tv_sec)
        nanoseconds = Int(info.st_mtim.tv_nsec)
        changeSeconds = Int(info.st_ctim.tv_sec)
        changeNanoseconds = Int(info.st_ctim.tv_nsec)
        #endif
    }

    var revision: String { "\(device).\(inode).\(size).\(seconds).\(nanoseconds).\(changeSeconds).\(changeNanoseconds)" }
}
