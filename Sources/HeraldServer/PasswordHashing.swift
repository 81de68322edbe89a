import HeraldCore
import NIOPosix
public import ServiceLifecycle
import Synchronization

/// Where bcrypt runs: a thread pool of its own, so that a flood of sign-ups or sign-ins takes
/// neither the threads of the store's queries (`NIOThreadPool.singleton`) nor more than its
/// share of the CPU, with a bounded queue: past it, ``Throttled`` (`unavailable`) (503 with `Retry-After`)
/// at once instead of an ever longer wait.
///
/// A service: its pool starts at the first hash and stops when the service shuts down (after
/// the HTTP server, which is listed after it). ``unmanaged`` runs on `NIOThreadPool.singleton`
/// for commands that hash outside a server (`herald admin`).
public final class PasswordHashing: Service, Sendable {
    /// Hashes at once (the pool's threads).
    public let threads: Int
    /// Hashes waiting for a thread at most.
    public let queue: Int
    private let pool: NIOThreadPool
    private let owned: Bool
    private let state = Mutex(State())

    private struct State {
        var started = false
        var stopped = false
        /// Hashes running or waiting.
        var inFlight = 0
    }

    /// - Parameters:
    ///   - threads: the pool's threads (bcrypt at cost 12 takes about 0.25 s of one core).
    ///   - queue: hashes that may wait for a thread; one more gets ``Throttled`` (`unavailable`).
    public init(threads: Int = 1, queue: Int = 16) {
        self.threads = max(1, threads)
        self.queue = max(0, queue)
        self.pool = NIOThreadPool(numberOfThreads: self.threads)
        self.owned = true
    }

    private init(unmanagedQueue queue: Int) {
        self.threads = NIOThreadPool.singleton.numberOfThreads
        self.queue = queue
        self.pool = .singleton
        self.owned = false
        state.withLock { $0.started = true }
    }

    /// On `NIOThreadPool.singleton`, with no service to run: for hashing outside a server.
    public static let unmanaged = PasswordHashing(unmanagedQueue: 1_000)

    /// Runs `work` on the pool, or throws ``Throttled`` (`unavailable`) when `threads + queue` hashes are
    /// already running or waiting, or the pool has stopped.
    func perform<T: Sendable>(_ work: @escaping @Sendable () -> T) async throws -> T {
        let admitted = state.withLock { state -> Bool in
            guard !state.stopped, state.inFlight < threads + queue else { return false }
            if !state.started {
                pool.start()
                state.started = true
            }
            state.inFlight += 1
            return true
        }
        guard admitted else {
            throw Throttled(retryAfterSeconds: 1, message: "the server is busy checking passwords; retry in a second", code: .unavailable)
        }
        defer { state.withLock { $0.inFlight -= 1 } }
        return try await pool.runIfActive(work)
    }

    public func run() async throws {
        guard owned else { return }
        // Until the server shuts down (or the group is cancelled).
        try? await gracefulShutdown()
        let started = state.withLock { state in
            state.stopped = true
            return state.started
        }
        if started { try await pool.shutdownGracefully() }
    }
}
