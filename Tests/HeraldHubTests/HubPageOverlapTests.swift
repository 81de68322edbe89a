import Foundation
import HeraldCore
import HeraldHub
import HeraldPush
import HeraldSQLite
import Synchronization
import Testing

/// A delivery keeps two pages in flight: the next page is sent while the one before it waits
/// for its last answers, so a slow answer does not hold up the devices after it.
@Suite("Hub: pages in flight")
struct HubPageOverlapTests {
    /// Holds the answer to the first device's send until a device of the next page is sent,
    /// or until `patience` has passed.
    final class SlowFirstAnswer: PushProvider {
        let platform = Platform.apns
        let firstHandle: String
        let secondPage: Set<String>
        let patience: Duration
        private let state = Mutex((nextPageSeen: false, releasedByNextPage: false, sent: [String]()))

        init(firstHandle: String, secondPage: Set<String>, patience: Duration) {
            self.firstHandle = firstHandle
            self.secondPage = secondPage
            self.patience = patience
        }

        var sent: [String] { state.withLock { $0.sent } }

        func send(_ notification: PushNotification, to target: PushTarget) async -> PushResult {
            state.withLock { state in
                state.sent.append(target.handle)
                if secondPage.contains(target.handle) { state.nextPageSeen = true }
            }
            guard target.handle == firstHandle else { return .delivered }
            let deadline = ContinuousClock.now + patience
            while ContinuousClock.now < deadline {
                if state.withLock({ $0.nextPageSeen }) {
                    state.withLock { $0.releasedByNextPage = true }
                    break
                }
                try? await Task.sleep(for: .milliseconds(5))
            }
            return .delivered
        }

        /// Whether a device of the next page was sent while the first answer was held.
        var nextPageWentMeanwhile: Bool { state.withLock { $0.releasedByNextPage } }

        func shutdown() async throws {}
    }

    @Test func theNextPageIsSentWhileTheOneBeforeWaitsForAnAnswer() async throws {
        try await HubFixture.with(platforms: [.apns], configure: { $0.pageSize = 10 }) { f in
            let registrations = (0..<25).map { Registration.apns($0) }
            try await f.store.insertRegistrations(registrations)
            let provider = SlowFirstAnswer(
                firstHandle: registrations[0].handle, secondPage: Set(registrations[10..<20].map(\.handle)), patience: .seconds(10))
            var configuration = f.engine.configuration
            configuration.pageSize = 10
            let engine = HubEngine(store: f.store, providers: [provider], configuration: configuration, logger: hubTestLogger)
            let record = try await engine.enqueue(tagExpression: nil, payloads: [HubShutdownTests.payload])

            let started = ContinuousClock.now
            #expect(try await engine.deliverNext())
            #expect(provider.nextPageWentMeanwhile, "the second page was sent while the first waited for its answer")
            #expect(ContinuousClock.now - started < .seconds(5), "the first answer was not waited out")

            let finished = try await f.stored(record.id)
            #expect(finished.state == .completed)
            #expect(finished.counts.total(.success) == 25)
            #expect(provider.sent.count == 25 && Set(provider.sent).count == 25, "each device once")
        }
    }
}
