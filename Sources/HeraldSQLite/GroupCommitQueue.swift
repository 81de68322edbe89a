/// The requests that wait for the writer's lock to be applied together, and the results of
/// those that a batch started by another request has applied.
///
/// A caller enqueues its request and takes the lock. If, by then, a batch started by another
/// caller has applied it, its result is waiting; otherwise the caller applies everything queued
/// (its own request and those behind it) and hands the others their results
/// (``SQLiteWriter/groupCommitted(_:in:apply:)``). Owned by the writer, and used only on it.
final class GroupCommitQueue<Request: Sendable, Value: Sendable> {
    struct Ticket: Hashable { fileprivate let number: Int }

    private var next = 0
    private var pending: [(ticket: Ticket, request: Request)] = []
    private var finished: [Ticket: Result<Value, any Error>] = [:]

    /// How many requests wait for a batch.
    var count: Int { pending.count }

    /// Queues `request`; the ticket that claims its result.
    func enqueue(_ request: Request) -> Ticket {
        let ticket = Ticket(number: next)
        next &+= 1
        pending.append((ticket, request))
        return ticket
    }

    /// The result of `ticket`'s request if another caller's batch has applied it.
    func takeResult(_ ticket: Ticket) -> Result<Value, any Error>? {
        finished.removeValue(forKey: ticket)
    }

    /// Everything queued, taken off the queue, for the caller to apply.
    func takeBatch() -> [(ticket: Ticket, request: Request)] {
        defer { pending.removeAll(keepingCapacity: true) }
        return pending
    }

    /// Keeps the results of `batch` (one per request, in order) for their callers and returns
    /// `ticket`'s.
    func finish(
        _ batch: [(ticket: Ticket, request: Request)],
        with results: [Result<Value, any Error>],
        returning ticket: Ticket
    ) -> Result<Value, any Error> {
        var mine: Result<Value, any Error>?
        for ((owner, _), result) in zip(batch, results) {
            if owner == ticket {
                mine = result
            } else {
                finished[owner] = result
            }
        }
        guard let mine else { preconditionFailure("a group-committed request was lost") }
        return mine
    }
}
