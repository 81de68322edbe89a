import Foundation
import HeraldCore
import HeraldPush
import Logging
public import ServiceLifecycle

/// Sends one hub's webhook events from its outbox, until graceful shutdown or until the hub
/// stops: claims the due ones under a lease, posts them, records each attempt (see
/// ``HubEngine/sendDueWebhooks(now:)``), and sleeps when none is due.
///
/// Every node runs one for every open hub; the store's leases let each event go out from one
/// node at a time, and a node that dies leaves its events to the others when its leases run
/// out. Once an hour it also trims the delivery logs. It also watches the hub's push
/// credentials and records `credential.failing` and `credential.recovered` when their state
/// changes.
public struct WebhookSender: Service {
    let engine: HubEngine

    public init(engine: HubEngine) {
        self.engine = engine
    }

    public func run() async throws {
        let engine = self.engine
        guard engine.configuration.webhookPoster != nil else { return }
        await cancelWhenGracefulShutdown {
            var lastPurge = ContinuousClock.now - .seconds(3600)
            var credentials: [Platform: PushCredentialHealth.Status] = [:]
            while !Task.isCancelled, !engine.isStopped {
                var claimed = 0
                await engine.recordCredentialEvents(previous: &credentials)
                do {
                    claimed = try await engine.sendDueWebhooks()
                    if ContinuousClock.now - lastPurge >= .seconds(3600) {
                        try await engine.purgeWebhookLog()
                        lastPurge = .now
                    }
                } catch is CancellationError {
                    return
                } catch {
                    engine.logger.error("Sending webhook events failed; it will be tried again", metadata: ["error": "\(error)"])
                }
                if claimed == 0 { await engine.waitForWebhooks() }
            }
        }
    }
}
