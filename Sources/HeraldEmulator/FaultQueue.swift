import Synchronization

/// Injected faults, consumed one per request. The common case (nothing injected) costs one
/// relaxed atomic load and no lock.
final class FaultQueue: Sendable {
    private let pending = Atomic<Int>(0)
    private let queue = Mutex<[(fault: Fault, remaining: Int)]>([])

    /// Queues `fault` for the next `count` requests, after any faults already queued.
    func inject(_ fault: Fault, count: Int) {
        guard count > 0 else { return }
        queue.withLock { $0.append((fault, count)) }
        pending.add(count, ordering: .releasing)
    }

    func clear() {
        queue.withLock { queue in
            let total = queue.reduce(0) { $0 + $1.remaining }
            queue.removeAll()
            pending.subtract(total, ordering: .releasing)
        }
    }

    /// The fault for this request, if one is queued.
    @inline(__always)
    func next() -> Fault? {
        guard pending.load(ordering: .acquiring) > 0 else { return nil }
        return queue.withLock { queue -> Fault? in
            guard !queue.isEmpty else { return nil }
            let fault = queue[0].fault
            queue[0].remaining -= 1
            if queue[0].remaining == 0 { queue.removeFirst() }
            pending.subtract(1, ordering: .releasing)
            return fault
        }
    }
}
