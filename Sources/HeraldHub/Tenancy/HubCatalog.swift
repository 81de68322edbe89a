public import Foundation
public import HeraldCore
import HeraldTLS
import Synchronization

#if canImport(Glibc)
import Glibc
// `struct stat`'s fields are attributed to CoreFoundation's module when another file of the
// target imports Crypto; without this import, MemberImportVisibility hides them.
import CoreFoundation
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The hubs of a deployment, each in its own directory under `<data-dir>/hubs/`:
///
/// ```
/// <data-dir>/hubs/<name>/hub.json        the definition: rules, keys, credentials (mode 0600)
/// <data-dir>/hubs/<name>/herald.sqlite   the hub's store (opened by the server)
/// ```
///
/// Changes are written atomically (a temporary file renamed into place) under a lock file, so
/// `herald hub …` and a running `herald serve` can share a data directory. ``hub(named:)``
/// answers from memory and re-reads `hub.json` only when the file changed, so it is cheap
/// enough for every request and a running server sees a rotated key at once.
public final class HubCatalog: Sendable {
    /// The definition's file name in a hub's directory.
    public static let definitionFileName = "hub.json"
    /// The store's file name in a hub's directory.
    public static let storeFileName = "herald.sqlite"

    /// Herald's data directory.
    public let dataDirectory: String
    /// `<data-dir>/hubs`.
    public let directory: String
    private let now: @Sendable () -> Date
    private let cache = Mutex<[String: CachedDefinition]>([:])

    private struct CachedDefinition: Sendable {
        var stamp: FileStamp
        var definition: HubDefinition
    }

    /// - Parameters:
    ///   - dataDirectory: Herald's data directory; the hubs live in its `hubs` folder, which
    ///     is created with the first hub.
    ///   - now: the clock that dates new hubs.
    public init(dataDirectory: String, now: @escaping @Sendable () -> Date = { Date() }) {
        let trimmed = dataDirectory.count > 1 && dataDirectory.hasSuffix("/") ? String(dataDirectory.dropLast()) : dataDirectory
        self.dataDirectory = trimmed
        self.directory = trimmed + "/hubs"
        self.now = now
    }

    /// The directory of the hub `name`.
    public func directory(of name: String) -> String { "\(directory)/\(name)" }

    /// The path of the hub `name`'s store.
    public func storePath(of name: String) -> String { "\(directory(of: name))/\(Self.storeFileName)" }

    /// The path of the hub `name`'s definition.
    public func definitionPath(of name: String) -> String { "\(directory(of: name))/\(Self.definitionFileName)" }

    // MARK: Reading

    /// The hub called `name` (case-insensitively), or `nil` if there is none or the name is
    /// not a valid hub name.
    ///
    /// - Throws: ``HeraldError`` (`internalError`) if its definition cannot be read.
    public func hub(named name: String) throws(HeraldError) -> HubDefinition? {
        guard HubDefinition.isValidName(name) else { return nil }
        if let definition = try load(name) { return definition }
        guard let actual = try names().first(where: { $0.caseInsensitiveCompare(name) == .orderedSame }), actual != name else {
            return nil
        }
        return try load(actual)
    }

    /// Every hub, sorted by name.
    public func list() throws(HeraldError) -> [HubDefinition] {
        var hubs: [HubDefinition] = []
        for name in try names() {
            if let definition = try load(name) { hubs.append(definition) }
        }
        return hubs
    }

    /// The names of the hub directories that hold a definition, sorted.
    private func names() throws(HeraldError) -> [String] {
        let entries: [String]
        do {
            entries = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            guard FileManager.default.fileExists(atPath: directory) else { return [] }
            throw .init(code: .internalError, message: "cannot list the hubs in \(directory)")
        }
        return
            entries
            .filter { HubDefinition.isValidName($0) && FileManager.default.fileExists(atPath: definitionPath(of: $0)) }
            .sorted { ($0.lowercased(), $0) < ($1.lowercased(), $1) }
    }

    /// The definition in `<name>/hub.json`: from the cache while the file is unchanged.
    private func load(_ name: String) throws(HeraldError) -> HubDefinition? {
        let path = definitionPath(of: name)
        guard let stamp = try FileStamp(path: path) else {
            _ = cache.withLock { $0.removeValue(forKey: name) }
            return nil
        }
        if let cached = cache.withLock({ $0[name] }), cached.stamp == stamp {
            return cached.definition
        }
        // Read after the stat: the contents are at least as new as the stamp, so the worst
        // case is one extra read later, never a stale definition kept.
        guard let definition = try read(name) else { return nil }
        cache.withLock { $0[name] = CachedDefinition(stamp: stamp, definition: definition) }
        return definition
    }

    private func read(_ name: String) throws(HeraldError) -> HubDefinition? {
        let path = definitionPath(of: name)
        guard let data = FileManager.default.contents(atPath: path) else {
            guard FileManager.default.fileExists(atPath: path) else { return nil }
            throw .init(code: .internalError, message: "cannot read hub \(name)'s definition \(path)")
        }
        var definition: HubDefinition
        do {
            definition = try Self.decoder.decode(HubDefinition.self, from: data)
        } catch {
            // Never quote the file: it holds keys.
            throw .init(code: .internalError, message: "hub \(name)'s definition \(path) is not a valid hub.json")
        }
        // The directory names the hub; a copied directory keeps working under its new name.
        if definition.name.caseInsensitiveCompare(name) != .orderedSame { definition.name = name }
        return definition
    }

    // MARK: Changing

    /// Creates the hub `name` with the two default rules and fresh keys, and no credentials.
    ///
    /// - Throws: ``HeraldError``: `badRequest` for an invalid or reserved name, `conflict` if
    ///   a hub of that name (in any case) exists.
    @discardableResult
    public func create(name: String) throws(HeraldError) -> HubDefinition {
        try HubDefinition.validateName(name)
        return try withCatalogLock { () throws(HeraldError) -> HubDefinition in
            if let existing = try names().first(where: { $0.caseInsensitiveCompare(name) == .orderedSame }) {
                throw .conflict("a hub named \(existing) already exists")
            }
            let hubDirectory = directory(of: name)
            if mkdir(hubDirectory, 0o700) != 0, errno != EEXIST {
                throw .init(code: .internalError, message: "cannot create the hub directory \(hubDirectory): errno \(errno)")
            }
            let definition = HubDefinition(
                name: name,
                // Whole seconds: what hub.json keeps (ISO 8601), so the result equals what is read back.
                createdAt: Date(timeIntervalSince1970: now().timeIntervalSince1970.rounded(.down)),
                rules: [
                    SharedAccessRule(name: SharedAccessRule.defaultListenRuleName, rights: [.listen]),
                    SharedAccessRule(name: SharedAccessRule.defaultFullRuleName, rights: [.listen, .send, .manage]),
                ]
            )
            try write(definition)
            return definition
        }
    }

    /// Deletes the hub `name`: its definition, its store and everything else in its directory.
    ///
    /// The directory is first renamed out of the way, so the hub disappears at once even if
    /// removing its files takes a while.
    ///
    /// - Throws: ``HeraldError`` `notFound` if there is no such hub.
    public func delete(name: String) throws(HeraldError) {
        try withCatalogLock { () throws(HeraldError) in
            // By directory, not by definition: a hub whose hub.json is damaged can be deleted too.
            let all = HubDefinition.isValidName(name) ? try names() : []
            guard let actual = all.first(where: { $0 == name }) ?? all.first(where: { $0.caseInsensitiveCompare(name) == .orderedSame })
            else { throw Self.noSuchHub(name) }
            let source = directory(of: actual)
            let doomed = "\(directory)/.deleted-\(actual)-\(UInt32.random(in: 0 ... .max))"
            guard rename(source, doomed) == 0 else {
                throw .init(code: .internalError, message: "cannot delete the hub directory \(source): errno \(errno)")
            }
            cache.withLock { _ = $0.removeValue(forKey: actual) }
            do {
                try FileManager.default.removeItem(atPath: doomed)
            } catch {
                throw .init(code: .internalError, message: "hub \(actual) is deleted, but removing its files in \(doomed) failed")
            }
        }
    }

    /// Replaces one key of a rule with a new random key; the other key keeps working, so
    /// clients can move to it first.
    ///
    /// - Throws: ``HeraldError`` `notFound` if there is no such hub or rule.
    @discardableResult
    public func rotate(name: String, rule: String, key: SharedAccessRule.KeySlot) throws(HeraldError) -> HubDefinition {
        try update(name) { (definition) throws(HeraldError) in
            let index = try Self.ruleIndex(rule, in: definition)
            switch key {
            case .primary: definition.rules[index].primaryKey = SharedAccessRule.generateKey()
            case .secondary: definition.rules[index].secondaryKey = SharedAccessRule.generateKey()
            }
        }
    }

    /// Adds a rule with new random keys.
    ///
    /// - Throws: ``HeraldError``: `badRequest` for an invalid name or rights, or when the hub
    ///   has ``SharedAccessRule/maximumRulesPerHub`` rules; `conflict` if the rule exists;
    ///   `notFound` if there is no such hub.
    @discardableResult
    public func addRule(name: String, rule: String, rights: Set<AccessRight>) throws(HeraldError) -> HubDefinition {
        try SharedAccessRule.validate(name: rule, rights: rights)
        return try update(name) { (definition) throws(HeraldError) in
            if let existing = definition.rule(named: rule) {
                throw .conflict("hub \(definition.name) already has a rule named \(existing.name)")
            }
            guard definition.rules.count < SharedAccessRule.maximumRulesPerHub else {
                throw .badRequest("hub \(definition.name) has \(definition.rules.count) rules, the most a hub may have; remove one first")
            }
            definition.rules.append(SharedAccessRule(name: rule, rights: rights))
        }
    }

    /// Removes a rule: tokens signed with its keys stop working at once.
    ///
    /// - Throws: ``HeraldError`` `notFound` if there is no such hub or rule.
    @discardableResult
    public func removeRule(name: String, rule: String) throws(HeraldError) -> HubDefinition {
        try update(name) { (definition) throws(HeraldError) in
            definition.rules.remove(at: try Self.ruleIndex(rule, in: definition))
        }
    }

    /// Changes the hub's push-service credentials. The result is validated before it is saved
    /// (``HubCredentials/validate()``); nothing changes if `update` or the validation throws.
    ///
    /// - Throws: ``HeraldError`` `notFound` if there is no such hub, `badRequest` for invalid
    ///   credentials, or what `update` throws.
    @discardableResult
    public func setCredentials(name: String, _ update: (inout HubCredentials) throws -> Void) throws -> HubDefinition {
        var failure: (any Error)?
        let result = try self.update(name) { (definition) throws(HeraldError) in
            var credentials = definition.credentials
            do {
                try update(&credentials)
            } catch {
                failure = error
                return
            }
            try credentials.validate()
            definition.credentials = credentials
        }
        if let failure { throw failure }
        return result
    }

    /// Reads the hub's definition from disk under the lock, applies `change` and writes the
    /// result. Nothing is written if `change` throws or leaves the definition unchanged.
    private func update(
        _ name: String,
        _ change: (inout HubDefinition) throws(HeraldError) -> Void
    ) throws(HeraldError) -> HubDefinition {
        try withCatalogLock { () throws(HeraldError) -> HubDefinition in
            guard let current = try hub(named: name) else { throw Self.noSuchHub(name) }
            var definition = current
            try change(&definition)
            if definition != current { try write(definition) }
            return definition
        }
    }

    /// Writes `definition` to its `hub.json` (mode 0600, atomically) and refreshes the cache.
    private func write(_ definition: HubDefinition) throws(HeraldError) {
        let path = definitionPath(of: definition.name)
        do {
            let data = try Self.encoder.encode(definition)
            try SecureFile.write(String(decoding: data, as: UTF8.self) + "\n", to: path, mode: 0o600)
        } catch {
            throw .init(code: .internalError, message: "cannot write hub \(definition.name)'s definition \(path)")
        }
        if let stamp = try? FileStamp(path: path) {
            cache.withLock { $0[definition.name] = CachedDefinition(stamp: stamp, definition: definition) }
        }
    }

    /// Runs `body` holding an exclusive lock on `<hubs>/.lock`, shared with other processes
    /// (a `herald hub` command beside a running server) and other catalogs in this process.
    private func withCatalogLock<T>(_ body: () throws(HeraldError) -> T) throws(HeraldError) -> T {
        do {
            try SecureFile.ensureDirectory(directory)
        } catch {
            throw .init(code: .internalError, message: "cannot create the hubs directory \(directory)")
        }
        let lockPath = "\(directory)/.lock"
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw .init(code: .internalError, message: "cannot open the lock file \(lockPath): errno \(errno)")
        }
        defer { close(fd) }
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else {
                throw .init(code: .internalError, message: "cannot lock \(lockPath): errno \(errno)")
            }
        }
        defer { flock(fd, LOCK_UN) }
        return try body()
    }

    // MARK: Helpers

    static func noSuchHub(_ name: String) -> HeraldError {
        .notFound("there is no hub named '\(name)'")
    }

    static func ruleIndex(_ rule: String, in definition: HubDefinition) throws(HeraldError) -> Int {
        if let index = definition.rules.firstIndex(where: { $0.name == rule })
            ?? definition.rules.firstIndex(where: { $0.name.caseInsensitiveCompare(rule) == .orderedSame })
        {
            return index
        }
        let names = definition.rules.map(\.name).joined(separator: ", ")
        throw .notFound("hub \(definition.name) has no rule named '\(rule)' (its rules: \(names.isEmpty ? "none" : names))")
    }

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }()

    static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }()
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
}
