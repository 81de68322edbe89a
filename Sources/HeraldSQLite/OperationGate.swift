import HeraldStore
import Synchronization

/// Counts the operations in progress so that closing waits for them, and refuses new ones
/// once closed.
final class OperationGate: Sendable {
    private struct State {
        var closed = false
        var active = 0
        var drained: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    /// Starts an operation; `false` once the gate is closed.
    func enter() -> Bool {
        state.withLock { state in
            guard !state.closed else { return false }
            state.active += 1
            return true
        }
    }

    /// Ends an operation started by a successful ``enter()``.
    func leave() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.active -= 1
            guard state.active == 0, state.closed else { return [] }
            defer { state.drained = [] }
            return state.drained
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Closes the gate and waits until no operation is in progress. `false` if it was
    /// already closed (by this or an earlier call).
    func close() async -> Bool {
        let first = state.withLock { state -> Bool in
            defer { state.closed = true }
            return !state.closed
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let idle = state.withLock { state -> Bool in
                if state.active == 0 { return true }
                state.drained.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
        return first
    }
}
