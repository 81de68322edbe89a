import HeraldCore
import NIOCore

extension TimeAmount {
    /// The whole nanoseconds of a `Duration`, truncated toward zero.
    init(_ duration: Duration) {
        self = .nanoseconds(duration.wholeNanoseconds)
    }

    /// The time one connection may take to set up: a provider's `connectTimeout`, but never
    /// more than its `timeout` for a whole request.
    static func connectionSetup(_ connectTimeout: Duration, within timeout: Duration) -> TimeAmount {
        TimeAmount(min(connectTimeout, timeout))
    }
}
