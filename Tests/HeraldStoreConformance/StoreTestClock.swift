public import Foundation
import Synchronization

/// A clock the test moves by hand: a store under test reads it as its `now`.
public final class StoreTestClock: Sendable {
    private let current: Mutex<Date>

    public init(_ start: Date = Date(timeIntervalSince1970: 1_700_000_000.123)) {
        current = Mutex(start)
    }

    public var now: Date { current.withLock { $0 } }

    public func advance(by duration: Duration) {
        let (seconds, attoseconds) = duration.components
        current.withLock { $0 += Double(seconds) + Double(attoseconds) / 1e18 }
    }
}
