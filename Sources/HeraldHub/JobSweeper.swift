import Foundation
import HeraldStore
import Logging
public import ServiceLifecycle

/// Deletes one hub's finished jobs, their outputs and its job files once they have outlived
/// ``HubEngine/Configuration/jobRetention``, every ``HubEngine/Configuration/jobSweepInterval``
/// (and once at start), until graceful shutdown or until the hub stops; and with them the
/// idempotency keys of its sends whose retention ended and the receipts past their
/// de-duplication window.
///
/// Every node runs one for every open hub: the store's purge deletes each row once, whichever
/// node gets there first (``JobStore/purgeJobs(finishedBefore:filesBefore:uploadsBefore:)``).
public struct JobSweeper: Service {
    let engine: HubEngine

    public init(engine: HubEngine) {
        self.engine = engine
    }

    public func run() async throws {
        let engine = self.engine
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled, !engine.isStopped {
                do {
                    try await engine.sweepJobs()
                    try await engine.forgetIdempotencyKeys()
                    try await engine.forgetReceipts()
                } catch is CancellationError {
                    return
                } catch {
                    engine.logger.error("Sweeping old jobs failed; it will be tried again", metadata: ["error": "\(error)"])
                }
                await engine.waitForSweep(timeout: engine.configuration.jobSweepInterval)
            }
        }
    }
}
