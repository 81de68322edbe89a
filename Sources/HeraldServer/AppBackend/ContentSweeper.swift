import Foundation
import HeraldCore
public import HeraldStore
public import Logging
public import ServiceLifecycle

/// Deletes expired secure payloads and rich content every
/// ``ServerConfiguration/contentSweepInterval``.
///
/// Expired content is already unreadable when it expires; this reclaims the space. Several
/// nodes sharing one store may each run a sweeper: a purge deletes each row once.
public struct ContentSweeper: Service {
    let store: any ContentStore
    let interval: Duration
    let now: @Sendable () -> Date
    let logger: Logger

    public init(store: any ContentStore, configuration: ServerConfiguration, logger: Logger) {
        self.store = store
        self.interval = configuration.contentSweepInterval
        self.now = configuration.now
        self.logger = logger
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await sweep()
                } catch is CancellationError {
                    return
                } catch {
                    logger.error("Sweeping expired content failed; it will be tried again", metadata: ["error": "\(error)"])
                }
                do {
                    try await Task.sleep(for: interval)
                } catch {
                    return
                }
            }
        }
    }

    /// Deletes what expired by now; returns how many secure payloads and rich contents.
    @discardableResult
    public func sweep() async throws -> (secureMessages: Int, richContent: Int) {
        let now = now()
        let secure = try await store.purgeExpiredSecureMessages(now: now)
        let rich = try await store.purgeExpiredRichContent(now: now)
        if secure > 0 || !rich.isEmpty {
            logger.debug("Deleted expired content", metadata: ["herald.secure.count": "\(secure)", "herald.rich.count": "\(rich.count)"])
        }
        return (secure, rich.count)
    }
}
