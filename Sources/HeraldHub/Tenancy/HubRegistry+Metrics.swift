public import Foundation
import HeraldCore
import HeraldMetrics
import HeraldPush
import HeraldStore
import Synchronization

/// What the scrape-time gauges remember between scrapes: the hubs they were set for, and
/// when each hub's registrations were last counted.
struct MetricGaugeState: Sendable {
    var hubs: Set<String> = []
    var registrationsCountedAt: [String: ContinuousClock.Instant] = [:]
}

extension HubRegistry {
    /// How long a hub's registration counts stand before a scrape counts them again: counting
    /// reads every registration of the hub, which the queue's figures do not.
    static let registrationCountInterval: Duration = .seconds(30)

    /// Sets the credential gauges of the server's providers (hub `*`) and of those made from
    /// each open hub's own credentials: the expiry of every expiring credential (APNs client
    /// certificates) and whether each credential's last use failed; removes those no longer
    /// in use.
    private func setCredentialGauges(_ metrics: HeraldMetrics) {
        let byHub = ownedProviders().merging([HeraldMetrics.serverCredentialsHub: serverProviders]) { own, _ in own }
        for (hub, providers) in byHub {
            for platform in Platform.allCases {
                let onPlatform = providers.filter { $0.platform == platform }
                let expiry = onPlatform.lazy.compactMap(\.credentialExpiry).min()
                metrics.setCredentialExpiry(platform: platform, hub: hub, expiry: expiry)
                let failing = onPlatform.isEmpty ? nil : onPlatform.contains { $0.credentialHealth.status == .failing }
                metrics.setCredentialFailing(platform: platform, hub: hub, failing: failing)
            }
        }
    }

    /// Sets the gauges that are read at scrape time: the connections open to the push
    /// services, the expiry of client certificates and whether credentials are failing, each open hub's queue (every scrape) and its registrations per platform (at
    /// most every ``registrationCountInterval``), from its store. The gauges of hubs no longer open are removed. A store
    /// that cannot be read counts a store error and keeps its last figures.
    public func updateMetricGauges(now: Date = Date()) async {
        guard let metrics else { return }
        let open = openEngines()
        let names = Set(open.map(\.0))
        let clock = ContinuousClock.now
        let (gone, recount): (Set<String>, Set<String>) = gaugeState.withLock { state in
            let gone = state.hubs.subtracting(names)
            state.hubs = names
            for name in gone { state.registrationsCountedAt[name] = nil }
            let recount = names.filter { name in
                state.registrationsCountedAt[name].map { clock - $0 >= Self.registrationCountInterval } ?? true
            }
            for name in recount { state.registrationsCountedAt[name] = clock }
            return (gone, Set(recount))
        }
        for name in gone { metrics.removeGauges(hub: name) }
        var connections: [Platform: Int] = [:]
        for provider in providersInUse() {
            if let open = provider.openConnections { connections[provider.platform, default: 0] += open }
        }
        metrics.setPushConnections(connections)
        setCredentialGauges(metrics)
        for budget in sendBudgets.all {
            let snapshot = budget.snapshot()
            metrics.setSendBudget(
                platform: budget.platform, credential: budget.credential, perMinute: snapshot.rate?.perMinute,
                available: snapshot.available, pausedFor: snapshot.pausedFor, newlyWaited: budget.unreportedWait())
        }
        await withTaskGroup(of: Void.self) { group in
            for (name, engine) in open {
                let store = engine.store
                let countRegistrations = recount.contains(name)
                group.addTask {
                    do {
                        let queue = try await store.queueStatistics(now: now)
                        let age = queue.oldestWaitingSince.map { Duration.milliseconds(Int64(now.timeIntervalSince($0) * 1000)) } ?? .zero
                        metrics.setQueue(hub: name, waiting: queue.waiting, processing: queue.processing, oldestWaitingAge: age)
                        if countRegistrations {
                            metrics.setRegistrations(hub: name, counts: try await store.registrationCountsByPlatform())
                        }
                    } catch {
                        metrics.storeError(hub: name)
                        // Counted again at the next scrape.
                        self.gaugeState.withLock { $0.registrationsCountedAt[name] = nil }
                    }
                }
            }
        }
    }
}
