import Foundation
import HeraldCore
import HeraldHub
import HeraldPush
import HeraldSQLite
import Synchronization
import Testing

/// A provider whose service throttles its first sends, then accepts everything: the whole
/// credential (FCM's `429 QUOTA_EXCEEDED` with `Retry-After`), or, with `perDevice`, only the
/// device sent to (as WNS's `200` with `X-WNS-Status: channelthrottled`).
final class ThrottledProvider: PushProvider {
    let platform: Platform = .fcm
    private let refusals: Atomic<Int>
    private let handles = Mutex<[String]>([])
    let retryAfter: Double
    let perDevice: Bool

    init(refusing count: Int, retryAfter: Double, perDevice: Bool = false) {
        self.refusals = Atomic(count)
        self.retryAfter = retryAfter
        self.perDevice = perDevice
    }

    var delivered: [String] { handles.withLock { $0 } }

    func send(_ notification: PushNotification, to target: PushTarget) async -> PushResult {
        if refusals.subtract(1, ordering: .relaxed).newValue >= 0 {
            if perDevice {
                return PushResult(disposition: .retryable(retryAfter: retryAfter), outcome: .throttled, status: 200, reason: "channelthrottled")
            }
            return PushResult(disposition: .credentialThrottled(retryAfter: retryAfter), outcome: .throttled, status: 429, reason: "QUOTA_EXCEEDED")
        }
        handles.withLock { $0.append(target.handle) }
        return .delivered
    }

    func shutdown() async throws {}
}

@Suite("Hub: send budgets per credential")
struct HubSendBudgetTests {
    static let apnsPayload = PlatformPayload(platform: .apns, body: Data(#"{"aps":{"alert":"paced"}}"#.utf8))
    static let fcmPayload = PlatformPayload(platform: .fcm, body: Data(#"{"message":{"notification":{"title":"paced"}}}"#.utf8))

    /// An engine on the fixture's store and configuration that sends through `provider`,
    /// drawing from `budget`.
    static func engine(_ f: HubFixture, _ provider: any PushProvider, budget: SendBudget) -> HubEngine {
        HubEngine(
            store: f.store, providers: [provider], budgets: [provider.platform: budget], configuration: f.engine.configuration, logger: hubTestLogger)
    }

    static func fcm(_ n: Int) -> Registration {
        Registration(id: String(format: "fcm-%05d", n), platform: .fcm, handle: "fcm-token-\(n)")
    }

    @Test func aBroadcastGoesAtItsCredentialsRate() async throws {
        try await HubFixture.with(platforms: [.apns]) { f in
            try await f.store.insertRegistrations((0..<25).map { Registration.apns($0) })
            let budget = SendBudgets().budget(platform: .apns, credential: "TEAM.KEY", rate: try SendRate(perMinute: 600))
            let engine = Self.engine(f, f.apns, budget: budget)
            let record = try await engine.enqueue(tagExpression: nil, payloads: [Self.apnsPayload])
            let start = ContinuousClock.now
            #expect(try await engine.deliverNext())
            let elapsed = ContinuousClock.now - start
            #expect(try await f.stored(record.id).counts.total(.success) == 25)
            #expect(Set(f.apns.sent.map(\.handle)).count == 25)
            // Ten at once (a second's worth), then fifteen more at ten a second.
            #expect(elapsed >= .milliseconds(1400), "25 sends at 10 a second took \(elapsed)")
            #expect(budget.snapshot().waited >= .milliseconds(1400))
        }
    }

    @Test func aThrottledCredentialWaitsInsteadOfUsingUpEachDevicesAttempts() async throws {
        try await HubFixture.with(platforms: []) { f in
            try await f.store.insertRegistrations((0..<20).map(Self.fcm))
            let provider = ThrottledProvider(refusing: 8, retryAfter: 0.3)
            let budget = SendBudgets().budget(platform: .fcm, credential: "project", rate: nil)
            // One attempt per device (the fixture's policy): only the budget's waiting saves them.
            let engine = Self.engine(f, provider, budget: budget)
            let record = try await engine.enqueue(tagExpression: nil, payloads: [Self.fcmPayload])
            #expect(try await engine.deliverNext())
            let stored = try await f.stored(record.id)
            #expect(stored.counts.total(.success) == 20, "\(stored.counts)")
            #expect(stored.counts.total(.throttled) == 0)
            #expect(Set(provider.delivered).count == 20)
            #expect(budget.snapshot().waited >= .milliseconds(300), "the credential paused for its Retry-After")
        }
    }

    /// A throttle of one device (not of the credential) is that device's attempt, budget or not:
    /// the credential's other sends do not wait for it.
    @Test func aThrottledDeviceUsesUpItsAttemptsAndTheCredentialDoesNotWait() async throws {
        try await HubFixture.with(platforms: []) { f in
            try await f.store.insertRegistrations((0..<20).map(Self.fcm))
            let provider = ThrottledProvider(refusing: 8, retryAfter: 0.3, perDevice: true)
            let budget = SendBudgets().budget(platform: .fcm, credential: "project", rate: nil)
            let engine = Self.engine(f, provider, budget: budget)
            let record = try await engine.enqueue(tagExpression: nil, payloads: [Self.fcmPayload])
            #expect(try await engine.deliverNext())
            let stored = try await f.stored(record.id)
            #expect(stored.counts.total(.throttled) == 8)
            #expect(stored.counts.total(.success) == 12)
            #expect(budget.snapshot().waited == .zero)
        }
    }

    @Test func withoutABudgetAThrottledDeviceUsesUpItsAttempts() async throws {
        try await HubFixture.with(platforms: []) { f in
            try await f.store.insertRegistrations((0..<20).map(Self.fcm))
            let provider = ThrottledProvider(refusing: 8, retryAfter: 0.3)
            let engine = HubEngine(store: f.store, providers: [provider], configuration: f.engine.configuration, logger: hubTestLogger)
            let record = try await engine.enqueue(tagExpression: nil, payloads: [Self.fcmPayload])
            #expect(try await engine.deliverNext())
            let stored = try await f.stored(record.id)
            #expect(stored.counts.total(.throttled) == 8)
            #expect(stored.counts.total(.success) == 12)
        }
    }

    @Test func aDeviceStillWaitingForTheBudgetWhenItsNotificationGoesStaleIsAbandoned() async throws {
        try await HubFixture.with(platforms: [.apns], configure: { $0.abandonAfter = .seconds(1) }) { f in
            try await f.store.insertRegistrations((0..<5).map { Registration.apns($0) })
            let budget = SendBudgets().budget(platform: .apns, credential: "TEAM.KEY", rate: try SendRate(perMinute: 60))
            let engine = Self.engine(f, f.apns, budget: budget)
            let record = try await engine.enqueue(tagExpression: nil, payloads: [Self.apnsPayload])
            #expect(try await engine.deliverNext())
            let stored = try await f.stored(record.id)
            // One a second, stale after one: the first one or two go, the rest wait too long.
            #expect(stored.state == .abandoned)
            #expect(stored.counts.total(.abandoned) >= 3, "\(stored.counts)")
            #expect(stored.counts.total(.success) == f.apns.sent.count)
            #expect(stored.counts.total(.abandoned) + stored.counts.total(.success) == 5)
        }
    }

    @Test func aWaitInterruptedByShutdownBooksWhatWasSentAndHandsTheRestBack() async throws {
        try await HubFixture.with(platforms: [.apns]) { f in
            try await f.store.insertRegistrations((0..<6).map { Registration.apns($0) })
            let budget = SendBudgets().budget(platform: .apns, credential: "TEAM.KEY", rate: try SendRate(perMinute: 60))
            let engine = Self.engine(f, f.apns, budget: budget)
            let record = try await engine.enqueue(tagExpression: nil, payloads: [Self.apnsPayload])
            let delivering = Task { try await engine.deliverNext() }
            try await Task.sleep(for: .milliseconds(1500))
            engine.interruptDelivery()
            _ = await delivering.result
            let sentBefore = f.apns.sent.count
            #expect(sentBefore < 6, "one a second: the shutdown came before every device was reached")
            let handedBack = try await f.stored(record.id)
            #expect(handedBack.state == .processing, "handed back, not finished")
            // What the page had sent is booked; the rest of it goes back.
            #expect(handedBack.counts.total(.success) == sentBefore)

            // The next worker (no budget here) resumes it: every device is reached, once.
            let next = HubEngine(store: f.store, providers: [f.apns], configuration: f.engine.configuration, logger: hubTestLogger)
            #expect(try await next.deliverNext())
            #expect(try await f.stored(record.id).state == .completed)
            #expect(try await f.stored(record.id).counts.total(.success) == 6)
            #expect(Set(f.apns.sent.map(\.handle)).count == 6)
            #expect(f.apns.sent.count == 6, "no device sent twice")
        }
    }
}
