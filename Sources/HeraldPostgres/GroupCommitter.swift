import HeraldStore
import Synchronization

/// Writes applied together: requests that arrive while earlier ones are being written wait,
/// and are then applied as one batch (one transaction, a few statements) instead of one
/// transaction each. PostgreSQL then commits — and flushes its log — once per batch.
///
/// At most `maximumBatches` batches are written at once; a request that arrives when that many
/// are running waits for the next. Each caller gets its own outcome: `apply` returns one result
/// per request, in order, and isolates a request that fails from the others of its batch. A
/// batch is applied in a task of its own, so a caller that is cancelled while it waits still has
/// its write applied (as a write whose answer was lost would be).
final class GroupCommitter<Request: Sendable, Value: Sendable>: Sendable {
    typealias Apply = @Sendable ([Request]) async -> [Result<Value, any Error>]

    private struct State {
        var pending: [(request: Request, continuation: CheckedContinuation<Result<Value, any Error>, Never>)] = []
        var running = 0
    }

    private let state = Mutex(State())
    private let maximumBatches: Int
    private let maximumBatchSize: Int

    init(maximumBatches: Int, maximumBatchSize: Int) {
        self.maximumBatches = max(1, maximumBatches)
        self.maximumBatchSize = max(1, maximumBatchSize)
    }

    /// Applies `request` with those that wait beside it, and returns its own outcome. `apply`
    /// writes a batch; every caller of one committer passes the same.
    func submit(_ request: Request, apply: @escaping Apply) async throws -> Value {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Value, any Error>, Never>) in
            let starts = state.withLock { state in
                state.pending.append((request, continuation))
                guard state.running < maximumBatches else { return false }
                state.running += 1
                return true
            }
            if starts { Task { await self.drain(apply) } }
        }
        return try result.get()
    }

    private static var lost: StoreError {
        StoreError(code: .database, message: "a grouped write was not answered")
    }

    /// Applies batches of what waits until nothing does.
    private func drain(_ apply: Apply) async {
        while true {
            let batch = state.withLock { state in
                guard !state.pending.isEmpty else {
                    state.running -= 1
                    return [(request: Request, continuation: CheckedContinuation<Result<Value, any Error>, Never>)]()
                }
                let count = min(state.pending.count, maximumBatchSize)
                defer { state.pending.removeFirst(count) }
                return Array(state.pending.prefix(count))
            }
            guard !batch.isEmpty else { return }
            let results = await apply(batch.map(\.request))
            for (index, entry) in batch.enumerated() {
                entry.continuation.resume(returning: index < results.count ? results[index] : .failure(Self.lost))
            }
        }
    }
}
