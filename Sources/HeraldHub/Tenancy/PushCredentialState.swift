public import HeraldCore
public import HeraldPush

/// The state of the push credentials a hub delivers with on one platform, for an operator
/// console: how they sign in, whether the push service last accepted them, and the last
/// error, in words safe to show (a status, an error code, a key id; never a token, a key or
/// a secret).
@dynamicMemberLookup
public struct PushCredentialState: Sendable, Hashable, Codable {
    /// `configured` (not used yet), `working` or `failing`.
    public typealias Status = PushCredentialHealth.Status

    /// Whose credentials they are.
    public enum Source: String, Sendable, Hashable, Codable {
        /// The hub's own (`herald hub set-credentials`).
        case hub
        /// The server's, which every hub without its own for the platform uses: their state
        /// is shared by those hubs.
        case server
    }

    public var platform: Platform
    public var source: Source
    /// How they sign in, whether they work, the last error and the expiry, as the provider
    /// keeps them; read through the state as well (`state.status`, `state.lastError`, …).
    public var health: PushCredentialHealth

    public init(platform: Platform, source: Source, health: PushCredentialHealth) {
        self.platform = platform
        self.source = source
        self.health = health
    }

    public subscript<Value>(dynamicMember keyPath: KeyPath<PushCredentialHealth, Value>) -> Value {
        health[keyPath: keyPath]
    }
}
