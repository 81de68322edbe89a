import Foundation
public import HeraldClient
import HeraldCore
import Synchronization

/// The emulated devices confirming what they receive, as an app does (Herald's receipts): for
/// each notification a confirming device accepts, the id its payload carries under `herald.id`
/// is posted to the hub (`POST /{hub}/receipts` with the device's platform and push channel,
/// through the SDK's `NotificationHubClient`).
///
/// Which devices confirm is decided by their token, the same way every time: a `fraction` of
/// 0.99 makes 99 in 100 devices confirm (each of them everything it receives) and the rest
/// never, so a test can tell "sent 1,000, confirmed 990" apart from a lost receipt. Payloads
/// without the key (WNS, a Live Activity push) are not confirmed.
public final class DeviceReceipts: Sendable {
    /// Where receipts go, and which devices send them.
    public struct Configuration: Sendable {
        public var hub: NotificationHubClient
        /// The share of devices that confirm, 0…1.
        public var fraction: Double
        /// How many receipts are posted at once.
        public var concurrency: Int

        public init(hub: NotificationHubClient, fraction: Double = 1, concurrency: Int = 8) {
            self.hub = hub
            self.fraction = min(1, max(0, fraction))
            self.concurrency = max(1, concurrency)
        }
    }

    /// Receipts posted (answered `204`), and posts that failed.
    public struct Counts: Sendable, Hashable, Codable {
        public var confirmed = 0
        public var failed = 0
    }

    private struct Pending: Sendable {
        var id: String
        var platform: Platform
        var token: String
    }

    private struct State {
        var configuration: Configuration?
        var queue: AsyncStream<Pending>.Continuation?
        var posting: Task<Void, Never>?
        var counts = Counts()
    }

    private let state = Mutex(State())

    public init() {}

    deinit {
        state.withLock { state in
            state.queue?.finish()
            state.posting?.cancel()
        }
    }

    /// Starts confirming with `configuration`, or stops (`nil`). Receipts still queued under the
    /// previous configuration are posted as it said.
    public func configure(_ configuration: Configuration?) {
        state.withLock { state in
            state.queue?.finish()
            state.queue = nil
            state.posting = nil
            state.configuration = configuration
            guard let configuration else { return }
            let (stream, continuation) = AsyncStream<Pending>.makeStream()
            state.queue = continuation
            state.posting = Task { [weak self] in
                await withTaskGroup(of: Void.self) { group in
                    for _ in 0..<configuration.concurrency {
                        group.addTask {
                            for await receipt in stream {
                                await self?.post(receipt, to: configuration.hub)
                            }
                        }
                    }
                }
            }
        }
    }

    public var counts: Counts { state.withLock { $0.counts } }

    /// Whether the device of `token` confirms, under a `fraction`: decided by its token alone.
    public static func confirms(token: String, fraction: Double) -> Bool {
        // FNV-1a: stable across runs and machines, unlike `Hasher`.
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in token.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return Double(hash % 10_000) < fraction * 10_000
    }

    /// A device accepted `payload`: queues its receipt if it confirms and the payload carries an id.
    func received(_ payload: some Collection<UInt8>, platform: Platform, token: String) {
        guard let (queue, fraction) = state.withLock({ state in state.queue.map { ($0, state.configuration?.fraction ?? 0) } }),
            Self.confirms(token: token, fraction: fraction),
            let id = Receipt.notificationID(inPayload: payload)
        else { return }
        queue.yield(Pending(id: id, platform: platform, token: token))
    }

    private func post(_ receipt: Pending, to hub: NotificationHubClient) async {
        do {
            try await hub.acknowledge([receipt.id], platform: receipt.platform, pushChannel: receipt.token)
            state.withLock { $0.counts.confirmed += 1 }
        } catch {
            state.withLock { $0.counts.failed += 1 }
        }
    }
}
