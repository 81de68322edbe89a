import NIOCore

/// The life of one connection slot of an ``HTTP2Client``, as a value with no I/O.
///
/// A slot connects lazily (on the first request), sends over its connection while it is up,
/// and opens a new one after a GOAWAY or a loss. A connection that fails before the server's
/// SETTINGS arrived counts as a failed attempt: the slot then refuses requests at once for a
/// backoff that doubles with each consecutive failure, so that an unreachable service costs
/// callers no waiting; the first request after the backoff tries again. A connection that was
/// up and is lost is replaced at once.
///
/// Each connection attempt gets an id; events about an older connection (one that is going
/// away or already replaced) do not change the slot.
struct HTTP2ClientConnectionState: Sendable {
    enum State: Hashable, Sendable {
        case idle
        case connecting(id: Int)
        /// The connection is set up; `ready` once the server's SETTINGS arrived.
        case connected(id: Int, ready: Bool)
        case backingOff(until: NIODeadline)
        case shutDown
    }

    /// What to do with requests that arrived.
    enum RequestAction: Hashable, Sendable {
        /// Hand them to the current connection.
        case send
        /// Keep them until the connection attempt in progress ends.
        case queue
        /// Keep them and open connection `id`.
        case connect(id: Int)
        /// Fail them: the last attempt failed and the backoff has not passed.
        case failBackingOff
        /// Fail them: the client is shut down.
        case failShutDown
    }

    /// What to do when a connection went away or closed.
    enum LossAction: Hashable, Sendable {
        /// Nothing: the event is about an older connection.
        case none
        /// Forget the slot's current connection; new requests open another.
        case detach
        /// The attempt failed before its connection was registered: fail the queued requests.
        case failQueued
    }

    private(set) var state: State = .idle
    private(set) var consecutiveFailures = 0
    private var lastID = 0
    let initialBackoff: TimeAmount
    let maximumBackoff: TimeAmount

    init(initialBackoff: TimeAmount, maximumBackoff: TimeAmount) {
        self.initialBackoff = initialBackoff
        self.maximumBackoff = max(initialBackoff, maximumBackoff)
    }

    mutating func requestsArrived(now: NIODeadline) -> RequestAction {
        switch state {
        case .idle:
            return startConnecting()
        case .connecting:
            return .queue
        case .connected:
            return .send
        case .backingOff(let until):
            return now < until ? .failBackingOff : startConnecting()
        case .shutDown:
            return .failShutDown
        }
    }

    /// Connection `id` is set up. Returns whether to use it (send the queued requests); if
    /// not, it is stale or the client shut down, and it should be closed.
    mutating func connectSucceeded(id: Int) -> Bool {
        guard state == .connecting(id: id) else { return false }
        state = .connected(id: id, ready: false)
        return true
    }

    /// Connection attempt `id` failed. Returns whether the queued requests should be failed.
    mutating func connectFailed(id: Int, now: NIODeadline) -> Bool {
        guard state == .connecting(id: id) else { return false }
        backOff(now: now)
        return true
    }

    /// The server's SETTINGS arrived on connection `id`: the attempt succeeded.
    mutating func connectionReady(id: Int) {
        guard case .connected(id, ready: false) = state else { return }
        state = .connected(id: id, ready: true)
        consecutiveFailures = 0
    }

    /// Connection `id` takes no new streams (GOAWAY, stream ids used up); it serves what it has.
    mutating func connectionGoingAway(id: Int) -> LossAction {
        guard case .connected(id, _) = state else { return .none }
        state = .idle
        return .detach
    }

    /// Connection `id` closed.
    mutating func connectionClosed(id: Int, now: NIODeadline) -> LossAction {
        switch state {
        case .connected(id, let ready):
            if ready {
                state = .idle
            } else {
                backOff(now: now)
            }
            return .detach
        case .connecting(id):
            // Closed before the connect callback ran.
            backOff(now: now)
            return .failQueued
        default:
            return .none
        }
    }

    /// Returns `false` if the slot was already shut down.
    mutating func shutDown() -> Bool {
        guard state != .shutDown else { return false }
        state = .shutDown
        return true
    }

    /// The wait after `failures` consecutive failed attempts: the initial backoff, doubling.
    func backoff(afterFailures failures: Int) -> TimeAmount {
        let doublings = min(max(failures - 1, 0), 30)
        let nanoseconds = initialBackoff.nanoseconds.multipliedReportingOverflow(by: 1 << doublings)
        if nanoseconds.overflow { return maximumBackoff }
        return min(.nanoseconds(nanoseconds.partialValue), maximumBackoff)
    }

    private mutating func startConnecting() -> RequestAction {
        lastID += 1
        state = .connecting(id: lastID)
        return .connect(id: lastID)
    }

    private mutating func backOff(now: NIODeadline) {
        consecutiveFailures += 1
        state = .backingOff(until: now + backoff(afterFailures: consecutiveFailures))
    }
}
