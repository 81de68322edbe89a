public import Foundation
import Synchronization

/// What a push provider knows of the credential it signs in with: how it signs in, whether the
/// push service (or its token endpoint) last accepted it, and the last error.
///
/// The error is a short sentence safe to show an operator: a status, the service's error code,
/// a key id, never a token, a key or a secret.
public struct PushCredentialHealth: Sendable, Hashable, Codable {
    public enum Status: String, Sendable, Hashable, Codable {
        /// Set up, and not tried yet: no request has needed it.
        case configured
        /// Its last use worked: the push service answered a request signed with it without
        /// refusing it, or the OAuth token endpoint issued a token for it.
        case working
        /// Its last use failed: see ``PushCredentialHealth/lastError``.
        case failing
    }

    /// How the provider signs in, in words: `token (.p8 key)`, `certificate`,
    /// `service account`, `client credentials`, `VAPID`.
    public var method: String
    public var status: Status
    /// Why its last use failed (kept after a later success, with ``lastErrorAt``).
    public var lastError: String?
    public var lastErrorAt: Date?
    /// When it last worked, to the second.
    public var lastSuccessAt: Date?
    /// When it expires by itself: an APNs client certificate's notAfter; `nil` otherwise.
    public var expiresAt: Date?

    public init(
        method: String,
        status: Status = .configured,
        lastError: String? = nil,
        lastErrorAt: Date? = nil,
        lastSuccessAt: Date? = nil,
        expiresAt: Date? = nil
    ) {
        self.method = method
        self.status = status
        self.lastError = lastError
        self.lastErrorAt = lastErrorAt
        self.lastSuccessAt = lastSuccessAt
        self.expiresAt = expiresAt
    }
}

/// Where a provider records each use of its credential, for ``PushCredentialHealth``.
///
/// A success is recorded on every accepted send, so it costs a clock read and two relaxed
/// atomic loads; it writes only when the status changes or a second has passed. A failure
/// takes a lock.
final class PushCredentialRecorder: Sendable {
    let method: String
    private let now: @Sendable () -> Date
    /// Milliseconds since 1970 of the last success; 0: none yet.
    private let lastSuccess = Atomic<Int64>(0)
    /// Whether the last use recorded was a failure.
    private let failing = Atomic<Bool>(false)
    private let failure = Mutex<(message: String, at: Date)?>(nil)

    init(method: String, now: @escaping @Sendable () -> Date = Date.init) {
        self.method = method
        self.now = now
    }

    /// The push service (or its token endpoint) accepted the credential.
    func succeeded() {
        let milliseconds = Int64((now().timeIntervalSince1970 * 1000).rounded(.down))
        if milliseconds - lastSuccess.load(ordering: .relaxed) >= 1000 {
            lastSuccess.store(milliseconds, ordering: .relaxed)
        }
        if failing.load(ordering: .relaxed) { failing.store(false, ordering: .relaxed) }
    }

    /// The credential was refused, or no token could be had with it. `message` must hold no
    /// token, key or secret.
    func failed(_ message: String) {
        let at = now()
        failure.withLock { $0 = (String(message.prefix(300)), at) }
        failing.store(true, ordering: .relaxed)
    }

    /// What was recorded; an expired `expiresAt` makes it failing even before any send.
    func health(expiresAt: Date? = nil) -> PushCredentialHealth {
        let last = failure.withLock { $0 }
        let success = lastSuccess.load(ordering: .relaxed)
        var health = PushCredentialHealth(
            method: method,
            status: failing.load(ordering: .relaxed) ? .failing : success > 0 ? .working : .configured,
            lastError: last?.message,
            lastErrorAt: last?.at,
            lastSuccessAt: success > 0 ? Date(timeIntervalSince1970: Double(success) / 1000) : nil,
            expiresAt: expiresAt
        )
        if let expiresAt, expiresAt <= now(), health.status != .failing {
            health.status = .failing
            health.lastError = "the certificate expired at \(Self.format(expiresAt))"
            health.lastErrorAt = expiresAt
        }
        return health
    }

    /// `2026-05-01T12:00:00Z`.
    static func format(_ date: Date) -> String {
        date.formatted(.iso8601)
    }
}
