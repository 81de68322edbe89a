import Foundation
import HeraldCore
import HeraldEmulator
import HeraldHub
import HeraldSQLite
import Testing

/// A push service that throttles the whole credential — WNS's `406` (the cloud service over its
/// limit), a Web Push service's `429` — with a `Retry-After`, through the real providers and
/// emulators: the credential's send budget pauses for it, and the device tries again after the
/// pause without using up an attempt, so every device is reached and none counts `Throttled`.
@Suite struct CredentialThrottleTests {
    @Test(arguments: [Platform.wns, .webpush])
    func aThrottledCredentialPausesAndEveryDeviceIsReached(platform: Platform) async throws {
        try await TestHerald.withHerald { herald in
            let devices = 6
            var handles: [String] = []
            var subscriptions: [WebPushSubscription] = []
            var registrations: [Registration] = []
            for n in 0..<devices {
                switch platform {
                case .wns:
                    let channel = herald.wns.registerChannel()
                    handles.append(channel)
                    registrations.append(Registration(id: "\(n)-1-1", platform: .wns, handle: channel, tags: ["paced"]))
                default:
                    let subscription = herald.webPush.subscribe()
                    subscriptions.append(subscription)
                    registrations.append(
                        Registration(id: "\(n)-1-1", platform: .webpush, handle: subscription.endpoint, webPushKeys: subscription.keys, tags: ["paced"]))
                }
            }
            try await herald.store.insertRegistrations(registrations)
            let payload =
                platform == .wns
                ? PlatformPayload(platform: .wns, body: Data("paced".utf8), headers: [.init(name: "X-WNS-Type", value: "wns/raw")])
                : PlatformPayload(platform: .webpush, body: Data("paced".utf8), headers: [.init(name: "TTL", value: "60")])
            // The tests' retry policy gives a device 3 attempts: 4 refusals would use them up.
            let refusals = 4
            switch platform {
            case .wns: herald.wns.injectFaults(Fault.throttled.withRetryAfter(1), count: refusals)
            default: herald.webPush.injectFaults(Fault.throttled.withRetryAfter(1), count: refusals)
            }

            let sent = try await herald.appHubEngine.send(
                SendRequest(target: .tags(try SendRequest.Tags(parsing: "paced")), content: .native([payload])))
            while try await herald.appHubEngine.deliverNext() {}
            let stored = try #require(try await herald.appHubEngine.notification(id: sent.record.id))
            #expect(stored.state == .completed, "\(stored.counts)")
            #expect(stored.counts.total(.success) == devices, "\(stored.counts)")
            #expect(stored.counts.total(.throttled) == 0, "\(stored.counts)")
            let budget = try #require(herald.registry.sendBudgets.all.first { $0.platform == platform })
            #expect(budget.snapshot().waited >= .seconds(1), "the credential paused for the Retry-After")
            let reached =
                platform == .wns
                ? handles.filter { !herald.wns.notifications(for: $0).isEmpty }.count
                : subscriptions.filter { !herald.webPush.notifications(for: $0).isEmpty }.count
            #expect(reached == devices)
        }
    }
}
