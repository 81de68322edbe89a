import Crypto
public import Foundation
public import HeraldCore

/// One hub of a deployment: its name, its shared access rules (the keys its clients sign
/// requests with) and the push-service credentials it delivers with.
///
/// Each hub lives in its own directory, `<data-dir>/hubs/<name>/`, with this definition in
/// `hub.json` and its own store beside it (see ``HubCatalog``). Printing a definition never
/// shows a key or a credential: ``redacted`` is what `description` returns.
public struct HubDefinition: Codable, Sendable, Hashable, CustomStringConvertible {
    /// The hub's name, the first segment of its REST paths (`/{hub}/registrations`).
    public var name: String
    public var createdAt: Date
    public var rules: [SharedAccessRule]
    public var credentials: HubCredentials
    /// Tag prefixes (such as `username:`) that only a key with Send or Manage may put on a
    /// registration or an installation: a Listen key, which ships in apps, cannot claim them.
    /// Empty by default, as on the cloud hub, whose Listen keys may claim any tag.
    public var reservedTagPrefixes: [String]
    /// How long the `Idempotency-Key` of a send to the hub is kept (1 second to
    /// ``IdempotencyKey/maxRetention``); `nil` for ``IdempotencyKey/defaultRetention``.
    public var idempotencyRetention: Duration?
    /// The send budget of each platform's credential, as this hub sets it (every hub that
    /// sends with the same credential shares one budget). A platform not named here has
    /// ``defaultSendRate(for:)``.
    public var sendRates: [Platform: SendRate]

    public init(
        name: String, createdAt: Date, rules: [SharedAccessRule], credentials: HubCredentials = HubCredentials(),
        reservedTagPrefixes: [String] = [], idempotencyRetention: Duration? = nil, sendRates: [Platform: SendRate] = [:]
    ) {
        self.name = name
        self.createdAt = createdAt
        self.rules = rules
        self.credentials = credentials
        self.reservedTagPrefixes = reservedTagPrefixes
        self.idempotencyRetention = idempotencyRetention
        self.sendRates = sendRates
    }

    /// A credential's budget unless a hub sets one: FCM's default quota (600,000 a minute per
    /// project); no limit for the other platforms, whose services publish none.
    public static func defaultSendRate(for platform: Platform) -> SendRate? {
        platform == .fcm ? .fcmDefault : nil
    }

    /// The send budget of `platform`'s credential: the hub's own, else the default.
    public func sendRate(for platform: Platform) -> SendRate? {
        sendRates[platform] ?? Self.defaultSendRate(for: platform)
    }

    enum CodingKeys: String, CodingKey {
        case name, createdAt, rules, credentials, reservedTagPrefixes
        case idempotencyRetention = "idempotencyRetentionSeconds"
        case sendRates = "sendRatesPerMinute"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        createdAt = try container.decode(Date.self, forKey: .createdAt)
        rules = try container.decode([SharedAccessRule].self, forKey: .rules)
        credentials = try container.decode(HubCredentials.self, forKey: .credentials)
        // Definitions written before the setting existed reserve nothing.
        reservedTagPrefixes = try container.decodeIfPresent([String].self, forKey: .reservedTagPrefixes) ?? []
        idempotencyRetention = try container.decodeIfPresent(Int64.self, forKey: .idempotencyRetention).map { .seconds($0) }
        var sendRates: [Platform: SendRate] = [:]
        for (name, rate) in try container.decodeIfPresent([String: SendRate].self, forKey: .sendRates) ?? [:] {
            guard let platform = Platform(rawValue: name) else {
                throw DecodingError.dataCorruptedError(forKey: .sendRates, in: container, debugDescription: "'\(name)' is not a platform")
            }
            sendRates[platform] = rate
        }
        self.sendRates = sendRates
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(rules, forKey: .rules)
        try container.encode(credentials, forKey: .credentials)
        if !reservedTagPrefixes.isEmpty { try container.encode(reservedTagPrefixes, forKey: .reservedTagPrefixes) }
        if let idempotencyRetention { try container.encode(idempotencyRetention.components.seconds, forKey: .idempotencyRetention) }
        if !sendRates.isEmpty {
            try container.encode(Dictionary(uniqueKeysWithValues: sendRates.map { ($0.key.rawValue, $0.value) }), forKey: .sendRates)
        }
    }

    /// The first of `tags` that starts with a reserved prefix (compared case-insensitively).
    public func reservedTag(in tags: some Sequence<String>) -> String? {
        guard !reservedTagPrefixes.isEmpty else { return nil }
        let prefixes = reservedTagPrefixes.map { $0.lowercased() }
        return tags.first { tag in
            let lower = tag.lowercased()
            return prefixes.contains { lower.hasPrefix($0) }
        }
    }

    /// The rule a token names in `skn`. Rule names compare case-insensitively, as the cloud hub's do.
    public func rule(named name: String) -> SharedAccessRule? {
        rules.first { $0.name == name } ?? rules.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }
    }

    /// The definition without keys or secrets: the name, the rules and their rights, and
    /// which push-service credentials are set.
    public var redacted: String {
        var lines = ["hub      \(name) (created \(createdAt.formatted(.iso8601)))"]
        lines += rules.map { "rule     \($0)" }
        lines += credentials.redactedLines
        if !reservedTagPrefixes.isEmpty {
            lines.append("reserved tag prefixes (Send or Manage keys only): \(reservedTagPrefixes.joined(separator: ", "))")
        }
        if let idempotencyRetention {
            lines.append("idempotency keys kept \(idempotencyRetention.components.seconds) seconds")
        }
        for platform in Platform.allCases {
            if let rate = sendRates[platform] { lines.append("send rate \(platform) \(rate)") }
        }
        return lines.joined(separator: "\n")
    }

    public var description: String { redacted }
}

/// A shared access rule (a "policy"): a key name, two interchangeable keys, and what a token
/// signed with either key may do.
///
/// Two keys let clients move to the secondary while the primary is replaced, and back.
public struct SharedAccessRule: Codable, Sendable, Hashable, CustomStringConvertible {
    /// The key name (`SharedAccessKeyName` in connection strings, `skn` in tokens).
    public var name: String
    public var primaryKey: String
    public var secondaryKey: String
    public var rights: Set<AccessRight>

    /// Which of a rule's two keys.
    public enum KeySlot: String, Sendable, Hashable, CaseIterable {
        case primary
        case secondary
    }

    /// The rules every new hub gets, as in the cloud hub: one to register devices with
    /// (Listen) and one for the backend (Listen, Send, Manage).
    public static let defaultListenRuleName = "DefaultListenSharedAccessSignature"
    public static let defaultFullRuleName = "DefaultFullSharedAccessSignature"

    /// The most rules a hub may have (the cloud hub's limit per entity).
    public static let maximumRulesPerHub = 12

    /// A rule with two new random keys.
    public init(name: String, rights: Set<AccessRight>) {
        self.init(name: name, primaryKey: Self.generateKey(), secondaryKey: Self.generateKey(), rights: rights)
    }

    public init(name: String, primaryKey: String, secondaryKey: String, rights: Set<AccessRight>) {
        self.name = name
        self.primaryKey = primaryKey
        self.secondaryKey = secondaryKey
        self.rights = rights
    }

    /// A new key: 32 random bytes from the system's secure generator, base64 (44 characters),
    /// the shape of the cloud hub's keys.
    public static func generateKey() -> String {
        SymmetricKey(size: .bits256).withUnsafeBytes { Data($0).base64EncodedString() }
    }

    public func key(_ slot: KeySlot) -> String {
        switch slot {
        case .primary: primaryKey
        case .secondary: secondaryKey
        }
    }

    /// The rights in a stable order: Listen, Send, Manage.
    public var sortedRights: [AccessRight] { AccessRight.allCases.filter(rights.contains) }

    /// Never shows a key.
    public var description: String {
        "\(name) [\(sortedRights.map(\.rawValue).joined(separator: ", "))]"
    }

    /// Checks the name and the rights. The name must survive URL encoding unchanged (it
    /// travels in `skn` and in connection strings); Manage comes only with Listen and Send.
    public static func validate(name: String, rights: Set<AccessRight>) throws(HeraldError) {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._")
        guard (1...256).contains(name.count), name.allSatisfy(allowed.contains) else {
            throw .badRequest(
                "'\(name)' is not a valid rule name: use 1 to 256 letters, digits, '.', '-' or '_'")
        }
        guard !rights.isEmpty else {
            throw .badRequest("rule \(name) needs at least one right: Listen, Send or Manage")
        }
        guard !rights.contains(.manage) || rights.count == AccessRight.allCases.count else {
            throw .badRequest("rule \(name): the Manage right comes only together with Listen and Send")
        }
    }

    enum CodingKeys: String, CodingKey {
        case name, primaryKey, secondaryKey, rights
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        primaryKey = try container.decode(String.self, forKey: .primaryKey)
        secondaryKey = try container.decode(String.self, forKey: .secondaryKey)
        rights = Set(try container.decode([AccessRight].self, forKey: .rights))
    }

    /// Rights in a stable order, so equal rules are equal files.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(primaryKey, forKey: .primaryKey)
        try container.encode(secondaryKey, forKey: .secondaryKey)
        try container.encode(sortedRights, forKey: .rights)
    }
}

/// What a shared access rule allows, named as in the cloud hub.
///
/// - Listen: create, update, read and delete single registrations and installations, and read
///   the registrations of a handle.
/// - Send: send notifications and read their outcome.
/// - Manage: everything else: registrations by tag, credentials, rules.
public enum AccessRight: String, Codable, Sendable, Hashable, CaseIterable, Comparable {
    case listen = "Listen"
    case send = "Send"
    case manage = "Manage"

    /// Accepts the names in any case (`listen`, `Listen`, `LISTEN`).
    public init?(parsing text: String) {
        guard let right = Self.allCases.first(where: { $0.rawValue.caseInsensitiveCompare(text) == .orderedSame }) else {
            return nil
        }
        self = right
    }

    public static func < (lhs: AccessRight, rhs: AccessRight) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}
