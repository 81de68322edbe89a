import Foundation
import HeraldCore

/// The pace of a notification sent over a time (``HeraldCore/NotificationRecord/spread``):
/// of the `devices` it is expected to reach, the n-th is due `n / devices` of the way through
/// the spread, which starts when its delivery first started. A delivery resumed after a
/// restart keeps the pace it had (the devices booked before count), and one that fell behind
/// catches up at the speed its budgets allow.
struct SendSpread: Sendable {
    /// The reason given for sends that waited for their turn and were not made.
    static let waitReason = "spread"

    let start: ContinuousClock.Instant
    let length: Duration
    /// The devices the notification is expected to reach (at least 1): its targets' count when
    /// delivery started.
    let devices: Int

    init(startedAt: Date, length: Duration, devices: Int, now: Date = Date(), clock: ContinuousClock.Instant = .now) {
        self.start = clock - .seconds(now.timeIntervalSince(startedAt))
        self.length = length
        self.devices = max(1, devices)
    }

    /// When the send to the notification's `ordinal`-th device (from 0) may go.
    func due(_ ordinal: Int) -> ContinuousClock.Instant {
        start + length * (Double(min(ordinal, devices)) / Double(devices))
    }

    /// The most sends to launch at once: a tenth of a second's worth of the pace, so that they
    /// are spread within each second too.
    var batchLimit: Int {
        max(1, Int(Double(devices) / max(length.seconds, 0.001) / 10))
    }

    /// A page's place in the spread: the notification's devices sent before it.
    struct Position: Sendable {
        var spread: SendSpread
        var sent: Int
    }
}
