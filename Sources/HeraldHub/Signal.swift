import Foundation
import Synchronization

/// Wakes tasks that wait on a key: the delivery worker when work is enqueued, and callers
/// waiting for a notification to finish. A wait also ends at its timeout, so a missed ring
/// (or one rung on another node) costs at most one timeout.
final class Signal: Sendable {
    private struct State {
        var waiters: [String: [UInt64: CheckedContinuation<Void, Never>]] = [:]
        /// Numbers waits, so that each has an id of its own (a counter: no randomness, which
        /// could fail, and no collision that would drop a waiter).
        var lastID: UInt64 = 0
        /// Keys rung while nobody waited, for keys whose rings are remembered.
        var pending: Set<String> = []
    }

    private let state = Mutex(State())

    /// Wakes every waiter of `key`. With `remember`, a ring with no waiter wakes the next wait.
    func ring(_ key: String, remember: Bool = false) {
        let woken: [CheckedContinuation<Void, Never>] = state.withLock { state in
            guard let waiters = state.waiters.removeValue(forKey: key), !waiters.isEmpty else {
                if remember { state.pending.insert(key) }
                return []
            }
            return Array(waiters.values)
        }
        for continuation in woken { continuation.resume() }
    }

    /// Returns when `key` is rung or `timeout` has passed, whichever is first.
    func wait(_ key: String, timeout: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await Task.sleep(for: timeout) }
            group.addTask { await self.waitForRing(key) }
            await group.next()
            group.cancelAll()
        }
    }

    private func waitForRing(_ key: String) async {
        let id = state.withLock { state in
            state.lastID += 1
            return state.lastID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state in
                    if state.pending.remove(key) != nil || Task.isCancelled { return true }
                    state.waiters[key, default: [:]][id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let continuation = state.withLock { state -> CheckedContinuation<Void, Never>? in
                let removed = state.waiters[key]?.removeValue(forKey: id)
                if state.waiters[key]?.isEmpty == true { state.waiters[key] = nil }
                return removed
            }
            continuation?.resume()
        }
    }
}
