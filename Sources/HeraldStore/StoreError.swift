public import HeraldCore

/// The one error of every store, in the store contract's terms: what the engine acts on — a
/// worker that lost its lease, a database that is away for a moment (unavailable), a disk that
/// is full, a name that is taken, an idempotency key reused, a version that changed since it was
/// read — and a store's own failures, which
/// are not the caller's fault (``isInternal``): a database that cannot be opened or reached,
/// one written by a newer Herald, a failure inside the database, a stored value that cannot be
/// read back.
///
/// These are not a caller's mistakes, and they carry no HTTP status: the engine decides what
/// each means for a delivery (stop, try again, report), and HeraldServer alone chooses the
/// status a caller sees when one reaches it (a store's own failure is an internal error).
/// Messages never contain SQL, a password or values a caller sent; the database's own message
/// is logged by the store instead. Equality compares the code only (``CodedError``).
public struct StoreError: CodedError {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case leaseLost, databaseUnavailable, storageFull, nameTaken, idempotencyKeyReused, versionMismatch
            case cannotOpen, cannotConnect, schemaTooNew, database, corruptData
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
        /// A write conditioned on a version (`ifVersion`) found another version stored, or
        /// nothing stored: someone wrote it since it was read. Nothing was written.
        public static let versionMismatch = Code(.versionMismatch)
        /// The store's file could not be opened or is not a Herald database (SQLite).
        public static let cannotOpen = Code(.cannotOpen)
        /// The database server could not be reached, or refused the user, password or database
        /// (PostgreSQL; see ``StoreError/refusedByServer``).
        public static let cannotConnect = Code(.cannotConnect)
        /// The database was migrated by a newer version of Herald; this version refuses to touch it.
        public static let schemaTooNew = Code(.schemaTooNew)
        /// The database reported an error (I/O, a constraint, …).
        public static let database = Code(.database)
        /// A stored value could not be read back (an unknown platform, malformed JSON).
        public static let corruptData = Code(.corruptData)

        /// A store's own failure rather than one of the contract's terms (see
        /// ``StoreError/isInternal``).
        var isInternal: Bool {
            switch base {
            case .cannotOpen, .cannotConnect, .schemaTooNew, .database, .corruptData: true
            case .leaseLost, .databaseUnavailable, .storageFull, .nameTaken, .idempotencyKeyReused, .versionMismatch: false
            }
        }

        /// A short name, safe as a metric label.
        public var description: String { base.rawValue }
    }

    public let code: Code
    public let message: String
    /// For ``Code/cannotConnect``: the server answered and refused the user, the password or
    /// the database (nothing to wait for), rather than could not be reached.
    package let refusedByServer: Bool

    public init(code: Code, message: String) {
        self.init(code: code, message: message, refusedByServer: false)
    }

    package init(code: Code, message: String, refusedByServer: Bool) {
        self.code = code
        self.message = message
        self.refusedByServer = refusedByServer
    }

    /// Whether this is a store's own failure (``Code/cannotOpen``, ``Code/cannotConnect``,
    /// ``Code/schemaTooNew``, ``Code/database``, ``Code/corruptData``), which nothing above the
    /// store acts on and a caller sees as an internal error, rather than one of the contract's
    /// terms the engine acts on.
    package var isInternal: Bool {
        code.isInternal
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

    /// A stored value that cannot be read back, as `message` says.
    package static func corruptData(_ message: String) -> StoreError { StoreError(code: .corruptData, message: message) }

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

    /// A conditioned write found another version (or nothing) stored, as `message` says.
    package static func versionMismatch(_ message: String) -> StoreError { StoreError(code: .versionMismatch, message: message) }

    /// The one message of a full disk, whichever store reports it.
    package static let storageFull = StoreError(
        code: .storageFull,
        message: "the server's storage is full, so nothing was written; retry once the operator has freed space"
    )
}
