public import Foundation
public import HeraldCore
public import HeraldPush

/// The state of the push credentials a hub delivers with on one platform, for an operator
/// console: how they sign in, whether the push service last accepted them, and the last
/// error, in words safe to show (a status, an error code, a key id; never a token, a key or
/// a secret).
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
    /// How they sign in, in words: `token (.p8 key)`, `certificate`, `service account`,
    /// `client credentials`, `VAPID`.
    public var method: String
    public var status: Status
    /// Why their last use failed; kept after a later success, with ``lastErrorAt``.
    public var lastError: String?
    public var lastErrorAt: Date?
    /// When they last worked (to the second).
    public var lastSuccessAt: Date?
    /// When they expire by themselves: an APNs client certificate's notAfter.
    public var expiresAt: Date?

    public init(platform: Platform, source: Source, health: PushCredentialHealth) {
        self.platform = platform
        self.source = source
        self.method = health.method
        self.status = health.status
        self.lastError = health.lastError
        self.lastErrorAt = health.lastErrorAt
        self.lastSuccessAt = health.lastSuccessAt
        self.expiresAt = health.expiresAt
    }
}
