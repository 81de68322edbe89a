public import HeraldCore

/// What the store contract refuses in its own terms, for the engine to act on: a worker that
/// lost its lease, a database that is away for a moment (unavailable), a disk that is full, a
/// name that is taken.
///
/// These are not a caller's mistakes, and they carry no HTTP status: the engine decides what
/// each means for a delivery (stop, try again, report), and HeraldServer alone chooses the
/// status a caller sees when one reaches it. Equality compares the code only (``CodedError``).
public struct StoreError: CodedError {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case leaseLost, databaseUnavailable, storageFull, nameTaken, idempotencyKeyReused
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The worker no longer holds the notification's lease: it ran out while the worker
        /// stalled and another took the notification over, or the notification ended. Nothing
        /// was changed.
        public static let leaseLost = Code(.leaseLost)
        /// The database cannot answer now (closed, busy, restarting, unreachable). Nothing was
        /// written; the same operation may succeed when tried again.
        public static let databaseUnavailable = Code(.databaseUnavailable)
        /// The store cannot write: its disk is full. Nothing was written; retry once there is room.
        public static let storageFull = Code(.storageFull)
        /// Something is created under a name that another of its kind has, in some case (a
        /// hub, when two nodes create the same one at once). Nothing was written.
        public static let nameTaken = Code(.nameTaken)
        /// A notification was sent under the idempotency key before, with another request
        /// (its digest differs), and the key's retention has not ended. Nothing was written.
        public static let idempotencyKeyReused = Code(.idempotencyKeyReused)

        /// A short name, safe as a metric label.
        public var description: String { base.rawValue }
    }

    public let code: Code
    public let message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    /// What ``NotificationStore/saveProgress(id:owner:cursor:counts:leaseUntil:)``,
    /// ``NotificationStore/finishNotification(id:owner:state:counts:endedAt:)`` and the other
    /// writes of a lease's holder throw when the worker no longer holds it.
    package static func leaseLost(_ id: String, state: String) -> StoreError {
        StoreError(
            code: .leaseLost,
            message: "the notification '\(id)' is no longer leased by this worker (it is \(state)): another worker took it over, or it was finished"
        )
    }

    public static func databaseUnavailable(_ message: String) -> StoreError { StoreError(code: .databaseUnavailable, message: message) }

    /// A hub named `existing` (the name as it is stored) exists already.
    package static func hubNameTaken(_ existing: String) -> StoreError {
        StoreError(code: .nameTaken, message: "a hub named \(existing) already exists")
    }

    /// The idempotency key `key` was used for another request within its retention. The
    /// message names the key (which is not a secret) and nothing of either request.
    package static func idempotencyKeyReused(_ key: String) -> StoreError {
        StoreError(
            code: .idempotencyKeyReused,
            message: "the Idempotency-Key '\(key)' was used for a different request (another body, path or send headers); "
                + "repeat that request exactly to get its answer again, or send this one under a new key"
        )
    }

    /// The one message of a full disk, whichever store reports it.
    package static let storageFull = StoreError(
        code: .storageFull,
        message: "the server's storage is full, so nothing was written; retry once the operator has freed space"
    )
}
