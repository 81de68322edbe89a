import HeraldStore
import Logging
public import ServiceLifecycle

/// Delivers accepted notifications: claims them from the store one at a time per lane and
/// hands them to the ``HubEngine``; one more lane runs the hub's export and import jobs. Several nodes sharing one store each run a worker; the store's
/// leases make sure each notification has one owner at a time.
///
/// An idle lane waits until a notification is enqueued on this node or announced by the
/// store (``HeraldStore/workAnnouncements()``: PostgreSQL's `NOTIFY`, for work enqueued or handed
/// back on other nodes), until ``HubEngine/Configuration/pollInterval`` has passed (the
/// fallback, since an announcement can be lost), or until the earliest scheduled notification
/// falls due (the store's `nextScheduledTime()`, read each time the lane goes idle), whichever
/// comes first.
public struct DeliveryWorker: Service {
    let engine: HubEngine
    /// Notifications delivered at once.
    let lanes: Int

    public init(engine: HubEngine, lanes: Int = 2) {
        self.engine = engine
        self.lanes = max(1, lanes)
    }

    /// Runs the lanes until graceful shutdown, after which each lane sends the rest of its
    /// current page and hands its notification back (``HubEngine/interruptDelivery()``), or
    /// until cancelled.
    public func run() async throws {
        let engine = self.engine
        await engine.resumeLeasesOfEarlierRuns()
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                if let announcements = engine.store.workAnnouncements() {
                    group.addTask {
                        for await _ in announcements { engine.wakeWorkers() }
                    }
                }
                await withDiscardingTaskGroup { lanes in
                    for _ in 0..<self.lanes {
                        lanes.addTask { await lane() }
                    }
                    lanes.addTask { await jobLane() }
                }
                group.cancelAll()
            }
        } onGracefulShutdown: {
            engine.interruptDelivery()
            engine.wakeJobWorker()
        }
    }

    /// Runs the hub's export and import jobs one at a time: those submitted on this node at
    /// once, those submitted elsewhere (or left by a worker that died) within
    /// ``jobPollInterval``.
    private func jobLane() async {
        await loop(failure: "A job failed to run; it will be resumed", next: { try await engine.runNextJob() }) {
            await engine.waitForJobs(timeout: Self.jobPollInterval)
        }
    }

    /// How often an idle job lane looks for jobs submitted on other nodes.
    static let jobPollInterval: Duration = .seconds(2)

    private func lane() async {
        await loop(failure: "Delivery failed; the notification will be retried", next: { try await engine.deliverNext() }) {
            await engine.waitForWork()
        }
    }

    /// Does `next` until it finds nothing to do, then waits with `idle`, until shutdown; a
    /// failure is logged and tried again a second later.
    private func loop(failure: Logger.Message, next: () async throws -> Bool, idle: () async -> Void) async {
        while !Task.isCancelled, !engine.isStopped, !engine.isInterrupted {
            do {
                if try await next() { continue }
            } catch is CancellationError {
                return
            } catch {
                engine.logger.error(failure, metadata: ["error": "\(error)"])
                try? await Task.sleep(for: .seconds(1))
            }
            await idle()
        }
    }
}
