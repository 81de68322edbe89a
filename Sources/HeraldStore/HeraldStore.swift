public import Foundation
public import HeraldCore

/// Where Herald keeps its state: registrations, accounts, sessions, notifications, the
/// secure and rich content devices fetch, and export and import jobs.
///
/// The contract every store implementation meets, and that the conformance suite
/// (HeraldStoreConformance) checks: `SQLiteStore` (HeraldSQLite, the embedded default, one
/// file per hub in the data directory) passes it. Every method is a single transaction;
/// nothing is cached in memory that a restart would lose.
///
/// A store speaks of what happened in its own terms: ``StoreError`` when a worker lost its
/// lease, the database is unavailable for a moment (closed, busy, unreachable) or its disk is
/// full; ``HeraldError`` for what a caller asked that the data refuses (an id taken, a rule
/// of the device registry that does not hold), which reaches the caller as it is.
public protocol HeraldStore: RegistrationStore, InstallationStore, AppBackendStore, NotificationStore, JobStore, WebhookStore, ReceiptStore {
    /// Returns once the store answers a read (for readiness checks); throws if it cannot.
    func ping() async throws

    /// Closes connections. Calls after this throw.
    func close() async throws

    /// Tells, as it happens, that a notification was enqueued or handed back by any process
    /// on this store, so that idle workers start at once; `nil` for a store that cannot (its
    /// workers then find new work by polling, which they do anyway, since an announcement may
    /// be lost).
    func workAnnouncements() -> AsyncStream<Void>?
}

extension HeraldStore {
    public func workAnnouncements() -> AsyncStream<Void>? { nil }
}

/// Registrations and the ids reserved for them.
public protocol RegistrationStore: Sendable {
    /// Records a newly issued registration id so that a later ``upsertRegistration(_:ifVersion:)``
    /// of that id is accepted. Reservations that were never used expire after `ttl`.
    func reserveRegistrationID(_ id: String, owner: String?, ttl: Duration) async throws

    /// Whether `id` is a registration or a live reservation.
    func isRegistrationIDValid(_ id: String) async throws -> Bool

    /// Creates or replaces a registration if `condition` holds, checked in the same
    /// transaction as the write, so that no other writer can slip in between.
    ///
    /// Keeps `createdAt` of an existing registration and sets `version` to the previous
    /// version + 1 (1 for a new one) and `updatedAt`. Consumes a reservation of the id. The
    /// store's clock sets `updatedAt` (and `createdAt` of a new registration); tags are stored
    /// unique and sorted; the result equals what ``registration(id:)`` then returns.
    /// Registrations derived from an installation (ids starting with
    /// ``Installation/registrationIDPrefix``) are written by
    /// ``InstallationStore/upsertInstallation(_:ifVersion:)`` only; callers never pass them here
    /// (the hub API's registration ids cannot hold `$`), and this method does not check.
    ///
    /// - Throws: when the condition does not hold, and then nothing changes: ``HeraldError``
    ///   `notFound` (``RegistrationCondition/mustExist``), `gone`
    ///   (``RegistrationCondition/mustBeIssued``) or `forbidden` (``RegistrationCondition/owner``);
    ///   ``StoreError`` `versionMismatch` (``RegistrationCondition/ifVersion``).
    func upsertRegistration(_ registration: Registration, when condition: RegistrationCondition) async throws -> Registration

    func registration(id: String) async throws -> Registration?

    /// Registrations with this handle (and platform, if given), oldest first.
    func registrations(handle: String, platform: Platform?) async throws -> [Registration]

    /// Deletes a registration; `false` if there was none (with or without `ifVersion`).
    /// With `ifVersion`, throws ``StoreError`` `versionMismatch` unless the stored
    /// version equals it; with `owner`, throws ``HeraldError/forbidden(_:)`` unless the
    /// registration belongs to that owner (both checked in the delete's transaction). A
    /// deleted id is no longer valid (``isRegistrationIDValid(_:)`` is `false`), even if it
    /// was only reserved.
    @discardableResult
    func deleteRegistration(id: String, ifVersion: Int?, owner: String?) async throws -> Bool

    /// The registration id a device should use, in one transaction: the oldest registration
    /// that `owner` has of one of `handles` (registrations derived from installations aside),
    /// after deleting the owner's other registrations of those handles (duplicates); or, if
    /// the owner has none, `newID`, reserved for `ttl` as ``reserveRegistrationID(_:owner:ttl:)``
    /// does.
    func registrationID(forHandles handles: [String], owner: String, orReserve newID: String, ttl: Duration) async throws -> String

    /// Deletes many registrations in one transaction (channel-expired feedback). For a
    /// registration derived from an installation, the installation is kept and marked
    /// `pushChannelExpired`, and all of its registrations are deleted (the channel is the
    /// installation's); the next PUT of the installation restores them.
    func deleteRegistrations(ids: [String]) async throws

    /// One page of the registrations an expression targets, ordered by id, strictly after
    /// `cursor` and up to and including `upperBound` (to the end when `nil`): a partition of a
    /// notification reads its own range of ids (``NotificationRecord/upperBound``) and nothing
    /// past it. `expression == nil` targets every registration. Only `platforms` are
    /// returned (all when `nil`), and only registrations of `kind` (both when `nil`): a
    /// native send never reads template registrations, nor a template send native ones.
    /// Expired registrations are not returned. Resolution uses the tag index; a broadcast to
    /// millions is read page by page, never all at once, and a page costs about what it
    /// returns wherever the cursor is, whether or not the database's statistics are current.
    func registrations(
        matching expression: TagExpression?,
        platforms: Set<Platform>?,
        kind: RegistrationKind?,
        after cursor: String?,
        through upperBound: String?,
        limit: Int
    ) async throws -> [Registration]

    /// Upserts many registrations in one transaction; for imports and benchmarks. Versions
    /// as ``upsertRegistration(_:ifVersion:)``, but the given `createdAt` (of a new
    /// registration) and `updatedAt` are kept.
    func insertRegistrations(_ registrations: [Registration]) async throws

    /// Brings what the database knows of the registrations' numbers and spread (its planner
    /// statistics) up to date, after a bulk load filled or changed many of them (an import, a
    /// copy from another store, a benchmark's seeding), so that the next statements are
    /// planned for the rows there are. A store without such statistics does nothing.
    func refreshStatistics() async throws

    /// Number of registrations, for status pages and benchmarks.
    func registrationCount() async throws -> Int

    /// Number of registrations per platform (platforms with none are left out), for metrics.
    func registrationCountsByPlatform() async throws -> [Platform: Int]

    /// Ids that cut the registrations after `cursor` (in id order, every registration of the
    /// store whatever its tags, platform or expiry) into runs of `every`: the `every`-th, the
    /// `2 × every`-th, … id after `cursor`, at most `limit` of them, ascending. The boundaries
    /// a large notification is split at (see ``NotificationStore/splitNotification(id:owner:at:)``).
    func registrationIDBoundaries(after cursor: String?, every: Int, limit: Int) async throws -> [String]

    /// One page of registrations for the hub API's listings, ordered by id, strictly after
    /// `cursor`: all of them, those of one handle (`filter.handle`, compared exactly), or
    /// those carrying one tag (`filter.tag`). Registrations derived from installations are
    /// not listed (they are read through their installation). Expired ones are listed.
    func listRegistrations(_ filter: RegistrationFilter, after cursor: String?, limit: Int) async throws -> [Registration]

    /// One page of the registrations `query` selects, for an operator's device browser:
    /// ordered by id, strictly after `cursor`, expired ones included. The tag expression is
    /// resolved through the tag index, as ``registrations(matching:platforms:kind:after:through:limit:)``
    /// resolves it, so a page of a million registrations reads about a page.
    func browseRegistrations(_ query: RegistrationQuery, after cursor: String?, limit: Int) async throws -> [Registration]

    /// How many registrations `query` selects: as many as
    /// ``browseRegistrations(_:after:limit:)`` returns page by page. Counts through the tag
    /// index where the expression has a tag that every match carries.
    func countRegistrations(_ query: RegistrationQuery) async throws -> Int
}

extension RegistrationStore {
    /// Creates or replaces a registration with no condition but the version, if given (see
    /// ``upsertRegistration(_:when:)``).
    public func upsertRegistration(_ registration: Registration, ifVersion: Int?) async throws -> Registration {
        try await upsertRegistration(registration, when: RegistrationCondition(ifVersion: ifVersion))
    }

    /// Deletes a registration whoever owns it (see ``deleteRegistration(id:ifVersion:owner:)``).
    @discardableResult
    public func deleteRegistration(id: String, ifVersion: Int?) async throws -> Bool {
        try await deleteRegistration(id: id, ifVersion: ifVersion, owner: nil)
    }
}

extension RegistrationStore {
    /// One page of the registrations an expression targets, to the end of the ids (see
    /// ``registrations(matching:platforms:kind:after:through:limit:)``).
    public func registrations(
        matching expression: TagExpression?,
        platforms: Set<Platform>?,
        kind: RegistrationKind?,
        after cursor: String?,
        limit: Int
    ) async throws -> [Registration] {
        try await registrations(matching: expression, platforms: platforms, kind: kind, after: cursor, through: nil, limit: limit)
    }

    /// One page of the registrations an expression targets, native and template alike.
    public func registrations(
        matching expression: TagExpression?,
        platforms: Set<Platform>?,
        after cursor: String?,
        limit: Int
    ) async throws -> [Registration] {
        try await registrations(matching: expression, platforms: platforms, kind: nil, after: cursor, through: nil, limit: limit)
    }
}

/// A native registration (the service's own payload is sent to it) or a template one (each
/// send is rendered from its template).
public enum RegistrationKind: Sendable, Hashable {
    case native
    case template
}

/// Which registrations a listing returns; both `nil` for all.
public struct RegistrationFilter: Sendable, Hashable {
    public var handle: String?
    public var tag: String?

    public init(handle: String? = nil, tag: String? = nil) {
        self.handle = handle
        self.tag = tag
    }
}

/// Installations, each stored whole and expanded into registrations in the same transaction.
public protocol InstallationStore: Sendable {
    /// Creates or replaces an installation and its derived registrations (see
    /// ``Installation``'s expansion), in one transaction: registrations of a template that
    /// is gone are deleted, the others are upserted. Keeps `createdAt` of an existing
    /// installation, sets `version` to the previous + 1 (1 when new) and `updatedAt` by the
    /// store's clock. With `ifVersion`, throws ``StoreError`` `versionMismatch` unless the
    /// stored version equals it. Returns what ``installation(id:)`` then returns.
    func upsertInstallation(_ installation: Installation, ifVersion: Int?) async throws -> Installation

    func installation(id: String) async throws -> Installation?

    /// Deletes an installation and its registrations; `false` if there was none.
    @discardableResult
    func deleteInstallation(id: String) async throws -> Bool

    /// One page of installations ordered by id, strictly after `cursor`: all, or those of
    /// one user, or those carrying a tag (their own tags, not template tags), or both.
    func listInstallations(userId: String?, tag: String?, after cursor: String?, limit: Int) async throws -> [Installation]
}

/// A user of the app backend.
public struct Account: Sendable, Hashable, Codable {
    /// Lowercased user name.
    public var username: String
    /// bcrypt hash of the password.
    public var passwordHash: String
    public var createdAt: Date

    public init(username: String, passwordHash: String, createdAt: Date = Date()) {
        self.username = username
        self.passwordHash = passwordHash
        self.createdAt = createdAt
    }
}

/// A bearer token's record. The store keeps only the SHA-256 of the token.
public struct Session: Sendable, Hashable, Codable {
    public var tokenHash: String
    public var username: String
    public var expiresAt: Date

    public init(tokenHash: String, username: String, expiresAt: Date) {
        self.tokenHash = tokenHash
        self.username = username
        self.expiresAt = expiresAt
    }
}

/// Accounts and sign-in sessions of the app backend.
public protocol AccountStore: Sendable {
    /// Creates an account; throws ``HeraldError/conflict(_:)`` if the name is taken.
    func createAccount(_ account: Account) async throws
    func account(username: String) async throws -> Account?
    func createSession(_ session: Session) async throws
    /// The session for a token hash, if it exists and has not expired at `now`.
    func session(tokenHash: String, now: Date) async throws -> Session?
    func deleteSession(tokenHash: String) async throws
}

/// Accepted notifications: the durable delivery queue and their outcomes.
public protocol NotificationStore: Sendable {
    /// Persists a new notification in the state it has: ``NotificationState/enqueued``, or
    /// ``NotificationState/scheduled`` for one whose `scheduledAt` is to come. Once this
    /// returns, the notification survives a crash. Throws ``HeraldError/conflict(_:)`` if the
    /// id is taken, ``HeraldError/badRequest(_:)`` for a scheduled one without `scheduledAt`.
    func enqueueNotification(_ notification: NotificationRecord) async throws

    /// Persists a new notification as ``enqueueNotification(_:)`` does, sent under an
    /// idempotency key, unless another notification holds that key in its scope: then nothing
    /// is written, and the notification the key was first sent with is returned to be answered
    /// with again (`nil` when this one was stored). The key is held from the notification's
    /// `enqueuedAt` for the key's retention; a key whose retention ended by then is taken over
    /// (forgotten by the other notification) in the same transaction.
    ///
    /// Concurrent sends under the same key, from any number of nodes, store one notification:
    /// a uniqueness constraint of the store decides, and the others get it as a replay. A
    /// partition (``splitNotification(id:owner:at:)``) holds no key.
    ///
    /// - Throws: ``StoreError/Code/idempotencyKeyReused`` when the key is held by a
    ///   notification sent with another request (another ``IdempotencyKey/digest``);
    ///   otherwise as ``enqueueNotification(_:)``.
    func enqueueNotification(_ notification: NotificationRecord, idempotencyKey: IdempotencyKey) async throws -> IdempotentReplay?

    /// Forgets the idempotency keys whose retention ended at or before `now` (the
    /// notifications stay): a later send with such a key is a new notification. Returns how
    /// many were forgotten.
    func forgetIdempotencyKeys(expiredBy now: Date) async throws -> Int

    /// Claims the oldest notification that is enqueued, scheduled with `scheduledAt <= now`,
    /// or processing with an expired lease (its worker died): sets it processing,
    /// `startedAt` if unset, and a lease held by `owner` until `now + lease`. `nil` if there is
    /// none. Concurrent claims (by any number of workers on any number of nodes) never get the
    /// same notification while its lease runs.
    func claimNotification(now: Date, lease: Duration, owner: String) async throws -> NotificationRecord?

    /// Records progress: counts so far and the cursor to resume from; sets the lease's end.
    /// This and ``finishNotification(id:owner:state:counts:endedAt:)`` change the notification
    /// only while it is processing under `owner`'s lease: they throw ``StoreError/Code/leaseLost``
    /// when another worker has claimed it since (the lease ran out) or it was finished, so no
    /// worker overwrites what another did, and
    /// ``HeraldError/notFound(_:)`` for an unknown id.
    func saveProgress(id: String, owner: String, cursor: String?, counts: OutcomeCounts, leaseUntil: Date) async throws

    /// Extends `owner`'s lease to `until` without recording progress: the heartbeat of a worker
    /// that is still sending. Throws as ``saveProgress(id:owner:cursor:counts:leaseUntil:)``
    /// does when the lease was lost.
    func renewLease(id: String, owner: String, until: Date) async throws

    /// Ends, as of `now`, the leases of the notifications in progress whose owner starts with
    /// `ownerPrefix` but is not `owner`: what an earlier run of the same node held when it was
    /// killed, so that they are claimed at once instead of when their leases run out. Returns
    /// how many leases were ended.
    func endLeases(ownerPrefix: String, except owner: String, now: Date) async throws -> Int

    /// Records the final state, counts and `endedAt`, and ends the lease.
    func finishNotification(id: String, owner: String, state: NotificationState, counts: OutcomeCounts, endedAt: Date) async throws

    /// Splits what is left of a notification's delivery into partitions that any worker may
    /// claim, in one transaction, while `owner` holds its lease (throws as
    /// ``saveProgress(id:owner:cursor:counts:leaseUntil:)`` does otherwise): the claimed record
    /// keeps the registration ids up to and including `boundaries[0]` (its
    /// ``NotificationRecord/upperBound``), and a new partition is enqueued for each further
    /// range: after `boundaries[i]` up to and including `boundaries[i + 1]`, the last one to the
    /// end of the claimed record's range. Partitions are records of their own in the queue
    /// (``NotificationRecord/partOf`` names the notification; the same payloads, enqueue and
    /// scheduled times), claimed, saved and finished like any record, and announced like a
    /// new notification. Throws ``HeraldError/badRequest(_:)`` unless `boundaries` ascend
    /// strictly, lie after the record's cursor and before its upper bound, and the record is
    /// not a partition or split already.
    func splitNotification(id: String, owner: String, at boundaries: [String]) async throws

    /// A notification as its senders see it, partitions added up (see
    /// ``NotificationRecord/combined(withPartitions:)``); `nil` for an unknown id or the id of a
    /// partition.
    func notification(id: String) async throws -> NotificationRecord?

    /// Cancels a notification that is still ``NotificationState/scheduled``: sets it
    /// ``NotificationState/cancelled`` with `endedAt = now`. Returns `false` if there is no
    /// such notification; throws ``HeraldError/conflict(_:)`` if it is no longer scheduled.
    func cancelScheduledNotification(id: String, now: Date) async throws -> Bool

    /// The earliest `scheduledAt` of a scheduled notification, so a worker knows when to wake.
    func nextScheduledTime() async throws -> Date?

    /// The queue as it is at `now`: what waits for a worker (due, unclaimed), what workers
    /// hold, and since when the oldest waiting one has been due (the later of its acceptance
    /// and its scheduled time). Reads only the notifications not finished.
    func queueStatistics(now: Date) async throws -> QueueStatistics

    /// One page of the notifications accepted, for an operator: newest first by
    /// (`enqueuedAt`, `id`) descending, whole notifications only (their partitions' counts
    /// added, as ``notification(id:)`` adds them), only those whose state so combined is in
    /// `states` (all when `nil`), strictly after `cursor` in that order (the last of the previous
    /// page). Each carries its lease while a worker holds it (the whole notification's own row,
    /// not its partitions'). Reads an index in that order (see `NotificationHistoryPlan`); a
    /// page reads about a page of rows, however long the history.
    func notificationHistory(states: Set<NotificationState>?, before cursor: NotificationHistoryCursor?, limit: Int) async throws -> [NotificationListing]

    /// One page of the broadcasts sent to the APNs broadcast channel `channel` (those whose
    /// ``NotificationRecord/broadcastChannel`` it is), newest first by (`enqueuedAt`, `id`)
    /// descending, strictly after `cursor` in that order. Reads an index of each channel's
    /// sends: a page reads about a page of rows.
    func broadcasts(toChannel channel: String, before cursor: NotificationHistoryCursor?, limit: Int) async throws -> [NotificationRecord]

    /// The delivery queue as it is, read-only: every row, whole notification or partition,
    /// that is ``NotificationState/enqueued`` or ``NotificationState/processing`` (neither
    /// scheduled nor finished), oldest first in the order workers claim them, at most `limit`.
    /// Each carries its own counts, cursor and ``NotificationRecord/partOf`` (not combined),
    /// and its lease while processing.
    func queueEntries(limit: Int) async throws -> [NotificationListing]
}
