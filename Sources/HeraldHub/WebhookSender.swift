import Foundation
import HeraldCore
import HeraldPush
public import ServiceLifecycle
import Logging

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
    let hub: HubEngine

    public init(hub: HubEngine) {
        self.hub = hub
    }

    public func run() async throws {
        let hub = self.hub
        guard hub.configuration.webhookPoster != nil else { return }
        await cancelWhenGracefulShutdown {
            var lastPurge = ContinuousClock.now - .seconds(3600)
            var credentials: [Platform: PushCredentialHealth.Status] = [:]
            while !Task.isCancelled, !hub.isStopped {
                var claimed = 0
                await hub.recordCredentialEvents(previous: &credentials)
                do {
                    claimed = try await hub.sendDueWebhooks()
                    if ContinuousClock.now - lastPurge >= .seconds(3600) {
                        try await hub.purgeWebhookLog()
                        lastPurge = .now
                    }
                } catch is CancellationError {
                    return
                } catch {
                    hub.logger.error("Sending webhook events failed; it will be tried again", metadata: ["error": "\(error)"])
                }
                if claimed == 0 { await hub.waitForWebhooks() }
            }
        }
    }
}
