public import Foundation
import HeraldCore
public import HeraldHubWire
import Synchronization

extension HubCatalog {
    /// Checks that `token` lets its bearer do something that needs `right` on the hub `hub`,
    /// by a request to `requestURL` (the full URL, as the client sent it).
    ///
    /// The token must name a rule of the hub (`skn`), be signed with the rule's primary or
    /// secondary key, not have expired at `now`, and sign a resource (`sr`) that covers the
    /// request URL; the rule must grant `right`. Messages say which check failed and never
    /// contain a key or the signature.
    ///
    /// - Throws: ``HeraldError`` `unauthorized` (401) when the hub or the rule is unknown, the
    ///   signature matches neither key, the token expired or its `sr` does not cover the URL;
    ///   `forbidden` (403) when the rule lacks `right`.
    /// - Returns: the hub's definition, as read for the check.
    @discardableResult
    public func authorize(
        _ token: SharedAccessSignature,
        hub name: String,
        requestURL: String,
        right: AccessRight,
        now: Date
    ) async throws -> HubDefinition {
        let hub = try await hubToAuthorize(name)
        try Self.authorize(token, hub: hub, requestURL: requestURL, right: right, now: now)
        return hub
    }

    /// The hub a signature is checked against; `unauthorized` if there is none.
    private func hubToAuthorize(_ name: String) async throws -> HubDefinition {
        guard let hub = try await hub(named: name) else {
            throw HeraldError.unauthorized("there is no hub named '\(name)'")
        }
        return hub
    }

    /// ``authorize(_:hub:requestURL:right:now:)`` for the `Authorization` header as sent.
    ///
    /// A token whose signature was verified recently (for this hub: the cache is keyed by a
    /// digest of the hub's name and the token's fields, ``SharedAccessSignature/fingerprint``)
    /// has its HMAC not computed again while the key that verified it is still one of its
    /// rule's keys: a rotated key or a removed rule is refused at once. The expiry, the resource
    /// and the rights are checked on every request.
    /// - Returns: the hub's definition, as read for the check, and the rule the request was
    ///   signed with.
    @discardableResult
    public func authorize(
        header: String,
        hub name: String,
        requestURL: String,
        right: AccessRight,
        now: Date
    ) async throws -> (hub: HubDefinition, rule: SharedAccessRule) {
        let token = try parsedToken(header)
        let hub = try await hubToAuthorize(name)
        let cacheKey = VerifiedSignatures.key(hub: hub.name, token: token)
        if let key = verifiedSignatures.withLock({ $0.key(for: cacheKey) }), let rule = hub.rule(named: token.keyName),
            rule.primaryKey == key || rule.secondaryKey == key
        {
            try Self.checkUse(token, rule: rule, hub: hub, requestURL: requestURL, right: right, now: now)
            return (hub, rule)
        }
        let (rule, key) = try Self.authorize(token, hub: hub, requestURL: requestURL, right: right, now: now)
        verifiedSignatures.withLock { $0.insert(cacheKey, key: key) }
        return (hub, rule)
    }

    /// The token of an `Authorization` header: parsed once, then found again while it is one
    /// of the headers sent lately (a client sends one header with every request until it
    /// signs a new one).
    private func parsedToken(_ header: String) throws(HeraldError) -> SharedAccessSignature {
        if let token = verifiedSignatures.withLock({ $0.token(parsedFrom: header) }) { return token }
        let token = try SharedAccessSignature(parsing: header)
        verifiedSignatures.withLock { $0.remember(token, parsedFrom: header) }
        return token
    }

    /// The checks of ``authorize(_:hub:requestURL:right:now:)`` on a definition in hand;
    /// returns the rule the token names and the key that the signature was made with.
    @discardableResult
    static func authorize(
        _ token: SharedAccessSignature,
        hub: HubDefinition,
        requestURL: String,
        right: AccessRight,
        now: Date
    ) throws(HeraldError) -> (rule: SharedAccessRule, key: String) {
        guard let rule = hub.rule(named: token.keyName) else {
            throw .unauthorized("hub \(hub.name) has no shared access rule named '\(token.keyName)' (skn)")
        }
        // The signature first, with the expiry out of the way (one second before `se`), so
        // "expired" is said only of tokens that were really signed with the rule's key.
        let signingTime = Date(timeIntervalSince1970: Double(token.expiry) - 1)
        let key: String
        if token.isValid(key: rule.primaryKey, now: signingTime) {
            key = rule.primaryKey
        } else if token.isValid(key: rule.secondaryKey, now: signingTime) {
            key = rule.secondaryKey
        } else {
            throw .unauthorized("the shared access signature does not match either key of rule \(rule.name) of hub \(hub.name)")
        }
        try checkUse(token, rule: rule, hub: hub, requestURL: requestURL, right: right, now: now)
        return (rule, key)
    }

    /// What is checked of a token whose signature is good, on every request: not expired, its
    /// resource covers the request, its rule grants `right`.
    private static func checkUse(
        _ token: SharedAccessSignature,
        rule: SharedAccessRule,
        hub: HubDefinition,
        requestURL: String,
        right: AccessRight,
        now: Date
    ) throws(HeraldError) {
        guard now.timeIntervalSince1970 < Double(token.expiry) else {
            let expiry = Date(timeIntervalSince1970: Double(token.expiry)).formatted(.iso8601)
            throw .unauthorized("the shared access signature expired at \(expiry) (se=\(token.expiry)); sign a new one")
        }
        guard token.covers(url: requestURL) else {
            throw .unauthorized(
                "the shared access signature was signed for the resource '\(token.resource)' (sr), which does not cover this request's URL")
        }
        guard rule.rights.contains(right) else {
            let rights = rule.sortedRights.map(\.rawValue).joined(separator: ", ")
            throw .forbidden("this operation requires the \(right.rawValue) right; rule \(rule.name) has \(rights)")
        }
    }

    /// The connection string of every rule of `hub` with `endpoint` (such as
    /// `sb://localhost:8443/`), with each rule's primary key or, with `key: .secondary`,
    /// its secondary key. Each string contains a key: show it to the hub's owner, never log it.
    public func connectionStrings(
        of hub: HubDefinition,
        endpoint: String,
        key: SharedAccessRule.KeySlot = .primary
    ) -> [(rule: String, connectionString: String)] {
        hub.rules.map { rule in
            (rule.name, ConnectionString(endpoint: endpoint, keyName: rule.name, key: rule.key(key)).description)
        }
    }
}

/// Tokens verified recently: for each, the key that its signature was made with, under a
/// SHA-256 of the hub's name and the token's fields. Entries are of a fixed size (a digest and
/// a reference to a rule's key), at most ``limit`` of them: the memory a caller can take
/// with tokens of its own is bounded whatever it sends.
///
/// Beside them, the headers parsed lately and their tokens, at most ``headerLimit`` of them
/// (a header is at most ``SharedAccessSignature/maximumHeaderBytes`` long, so that is about a
/// megabyte at most). A token found there is checked as a newly parsed one is: only its
/// parsing is saved.
struct VerifiedSignatures: Sendable {
    /// The most entries kept; past it the cache starts anew.
    static let limit = 10_000
    /// The most headers kept with their tokens; past it they start anew.
    static let headerLimit = 256
    private var entries: [[UInt8]: String] = [:]
    private var parsed: [String: SharedAccessSignature] = [:]

    func token(parsedFrom header: String) -> SharedAccessSignature? { parsed[header] }

    mutating func remember(_ token: SharedAccessSignature, parsedFrom header: String) {
        if parsed.count >= Self.headerLimit { parsed.removeAll(keepingCapacity: true) }
        parsed[header] = token
    }

    var count: Int { entries.count }

    static func key(hub: String, token: SharedAccessSignature) -> [UInt8] {
        token.fingerprint(in: hub.lowercased())
    }

    func key(for entry: [UInt8]) -> String? { entries[entry] }

    mutating func insert(_ entry: [UInt8], key: String) {
        if entries[entry] == nil, entries.count >= Self.limit { entries.removeAll(keepingCapacity: true) }
        entries[entry] = key
    }
}
