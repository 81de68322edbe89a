public import Foundation
public import HeraldCore
import HeraldHubWire
public import HeraldSQLite
public import HeraldStore
import Synchronization

/// The hubs of a deployment: their definitions (rules, keys, push credentials), kept in a
/// ``HubStorage`` — a data directory (``DirectoryHubStorage``) or a PostgreSQL database that
/// several nodes share.
///
/// ``hub(named:)`` answers from memory while the storage says the definition is unchanged
/// (one `stat`, or one small query), so it is cheap enough for every request, and every node
/// sees a rotated key or a removed rule at once.
public final class HubCatalog: Sendable {
    /// Where the hubs are kept.
    public let storage: any HubStorage
    private let now: @Sendable () -> Date
    /// Definitions read, by their stored name folded to lowercase: one entry per hub that
    /// exists, however a request spells its name (names are matched case-insensitively).
    private let cache = Mutex<[String: CachedDefinition]>([:])
    /// The most definitions kept in memory; past it the cache starts anew.
    static let cachedDefinitionLimit = 10_000
    /// Signatures verified recently (``authorize(header:hub:requestURL:right:now:)``).
    let verifiedSignatures = Mutex(VerifiedSignatures())

    private struct CachedDefinition: Sendable {
        var revision: String
        var definition: HubDefinition
    }

    /// - Parameters:
    ///   - storage: Where the hubs are kept.
    ///   - now: The clock that dates new hubs.
    public init(storage: any HubStorage, now: @escaping @Sendable () -> Date = { Date() }) {
        self.storage = storage
        self.now = now
    }

    /// The catalog of the hubs in a data directory (``DirectoryHubStorage``).
    public convenience init(dataDirectory: String, now: @escaping @Sendable () -> Date = { Date() }) {
        self.init(storage: DirectoryHubStorage(dataDirectory: dataDirectory), now: now)
    }

    /// The data directory's storage, when the hubs are kept in one.
    public var directoryStorage: DirectoryHubStorage? { storage as? DirectoryHubStorage }

    // MARK: Reading

    /// The hub called `name` (case-insensitively), or `nil` if there is none or the name is
    /// not a valid hub name.
    ///
    /// - Throws: ``HeraldError`` (`internalError`) if its definition cannot be read, or what
    ///   the storage throws when it cannot be reached.
    public func hub(named name: String) async throws -> HubDefinition? {
        guard HubDefinition.isValidName(name) else { return nil }
        let key = name.lowercased()
        let cached = cache.withLock { $0[key] }
        switch try await storage.definition(named: name, knownRevision: cached?.revision) {
        case .missing:
            _ = cache.withLock { $0.removeValue(forKey: key) }
            return nil
        case .unchanged:
            if let cached { return cached.definition }
            // Only a caller that knew a revision is told "unchanged": read it whole.
            guard case .found(let stored) = try await storage.definition(named: name, knownRevision: nil) else { return nil }
            return try remember(stored)
        case .found(let stored):
            return try remember(stored)
        }
    }

    private func remember(_ stored: StoredHubDefinition) throws(HeraldError) -> HubDefinition {
        let definition = try Self.decode(stored)
        remember(definition, revision: stored.revision)
        return definition
    }

    /// Keeps a definition under its stored name, folded.
    private func remember(_ definition: HubDefinition, revision: String) {
        cache.withLock { cache in
            let key = definition.name.lowercased()
            if cache[key] == nil, cache.count >= Self.cachedDefinitionLimit { cache.removeAll(keepingCapacity: true) }
            cache[key] = CachedDefinition(revision: revision, definition: definition)
        }
    }

    /// The number of definitions kept in memory.
    package var cachedDefinitionCount: Int { cache.withLock { $0.count } }

    /// The number of verified signatures kept in memory.
    package var verifiedSignatureCount: Int { verifiedSignatures.withLock { $0.count } }

    /// Every hub, sorted by name.
    public func list() async throws -> [HubDefinition] {
        var hubs: [HubDefinition] = []
        for name in try await storage.definitionNames() {
            if let definition = try await hub(named: name) { hubs.append(definition) }
        }
        return hubs
    }

    // MARK: Changing

    /// Creates the hub `name` with the two default rules and fresh keys, and no credentials.
    ///
    /// - Throws: ``HeraldError``: `badRequest` for an invalid or reserved name, `conflict` if
    ///   a hub of that name (in any case) exists.
    @discardableResult
    public func create(name: String, reservedTagPrefixes: [String] = []) async throws -> HubDefinition {
        do {
            return try await insert(name: name, reservedTagPrefixes: reservedTagPrefixes)
        } catch let taken as StoreError where taken.code == .nameTaken {
            throw HeraldError.conflict(taken.message)
        }
    }

    /// Creates the hub `name`; what the storage refuses (a ``StoreError`` `nameTaken`
    /// included) is thrown as it is.
    func insert(name: String, reservedTagPrefixes: [String]) async throws -> HubDefinition {
        try HubDefinition.validateName(name)
        let definition = HubDefinition(
            name: name,
            // Whole seconds: what the definition keeps (ISO 8601), so the result equals what is read back.
            createdAt: Date(timeIntervalSince1970: now().timeIntervalSince1970.rounded(.down)),
            rules: [
                SharedAccessRule(name: SharedAccessRule.defaultListenRuleName, rights: [.listen]),
                SharedAccessRule(name: SharedAccessRule.defaultFullRuleName, rights: [.listen, .send, .manage]),
            ],
            reservedTagPrefixes: reservedTagPrefixes
        )
        let stored = try await storage.createDefinition(named: name, document: try Self.encode(definition))
        remember(definition, revision: stored.revision)
        return definition
    }

    /// Deletes the hub `name`: its definition and everything its store holds.
    ///
    /// - Throws: ``HeraldError`` `notFound` if there is no such hub.
    public func delete(name: String) async throws {
        guard let deleted = try await storage.deleteHub(named: name) else { throw Self.noSuchHub(name) }
        cache.withLock { cache in
            cache = cache.filter { $0.value.definition.name.caseInsensitiveCompare(deleted) != .orderedSame }
        }
    }

    /// Replaces one key of a rule with a new random key; the other key keeps working, so
    /// clients can move to it first.
    ///
    /// - Throws: ``HeraldError`` `notFound` if there is no such hub or rule.
    @discardableResult
    public func rotate(name: String, rule: String, key: SharedAccessRule.KeySlot) async throws -> HubDefinition {
        try await update(name) { (definition) throws(HeraldError) in
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
    public func addRule(name: String, rule: String, rights: Set<AccessRight>) async throws -> HubDefinition {
        try SharedAccessRule.validate(name: rule, rights: rights)
        return try await update(name) { (definition) throws(HeraldError) in
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
    public func removeRule(name: String, rule: String) async throws -> HubDefinition {
        try await update(name) { (definition) throws(HeraldError) in
            definition.rules.remove(at: try Self.ruleIndex(rule, in: definition))
        }
    }

    /// Changes the hub's push-service credentials. The result is validated before it is saved
    /// (``HubCredentials/validate()``); nothing changes if `update` or the validation throws.
    ///
    /// - Throws: ``HeraldError`` `notFound` if there is no such hub, `badRequest` for invalid
    ///   credentials, or what `update` throws.
    @discardableResult
    public func setCredentials(name: String, _ update: (inout HubCredentials) throws -> Void) async throws -> HubDefinition {
        var failure: (any Error)?
        let result = try await self.update(name) { (definition) throws(HeraldError) in
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

    /// Sets the tag prefixes that only keys with Send or Manage may claim on the hub (an empty
    /// list reserves none). A prefix is 1 to 120 characters without spaces.
    public func setReservedTagPrefixes(name: String, _ prefixes: [String]) async throws -> HubDefinition {
        for prefix in prefixes where prefix.isEmpty || prefix.count > 120 || prefix.contains(where: \.isWhitespace) {
            throw HeraldError.badRequest("'\(prefix)' is not a tag prefix: 1 to 120 characters, no spaces")
        }
        return try await update(name) { (definition) throws(HeraldError) in
            definition.reservedTagPrefixes = Array(Set(prefixes)).sorted()
        }
    }

    /// Sets how long the idempotency keys of the hub's sends are kept: 1 second to 30 days, or
    /// `nil` for the default (24 hours).
    public func setIdempotencyRetention(name: String, _ retention: Duration?) async throws -> HubDefinition {
        if let retention { try IdempotencyKey.validate(retention: retention) }
        return try await update(name) { (definition) throws(HeraldError) in
            definition.idempotencyRetention = retention
        }
    }

    /// Sets (or, for `nil`, returns to the default) the send budget of each platform named.
    public func setSendRates(name: String, _ rates: [Platform: SendRate?]) async throws -> HubDefinition {
        try await update(name) { definition in
            for (platform, rate) in rates { definition.sendRates[platform] = rate }
        }
    }

    /// Reads the hub's definition under the storage's lock, applies `change` and writes the
    /// result. Nothing is written if `change` throws or leaves the definition unchanged.
    private func update(
        _ name: String,
        _ change: (inout HubDefinition) throws(HeraldError) -> Void
    ) async throws -> HubDefinition {
        var result: HubDefinition?
        let stored = try await storage.updateDefinition(named: name) { stored in
            let current = try Self.decode(stored)
            var definition = current
            try change(&definition)
            result = definition
            return definition == current ? nil : try Self.encode(definition)
        }
        guard let stored, let result else { throw Self.noSuchHub(name) }
        remember(result, revision: stored.revision)
        return result
    }

    /// The document a storage keeps: pretty-printed JSON (a data directory's `hub.json` is
    /// read by people too), keys sorted.
    static func encode(_ definition: HubDefinition) throws(HeraldError) -> Data {
        do {
            return try encoder.encode(definition) + Data("\n".utf8)
        } catch {
            throw .init(code: .internalError, message: "cannot encode hub \(definition.name)'s definition")
        }
    }

    static func decode(_ stored: StoredHubDefinition) throws(HeraldError) -> HubDefinition {
        var definition: HubDefinition
        do {
            definition = try decoder.decode(HubDefinition.self, from: stored.document)
        } catch {
            // Never quote the document: it holds keys.
            throw .init(code: .internalError, message: "hub \(stored.name)'s definition is not a valid hub definition")
        }
        // The storage names the hub; a copied directory keeps working under its new name.
        if definition.name.caseInsensitiveCompare(stored.name) != .orderedSame { definition.name = stored.name }
        return definition
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
