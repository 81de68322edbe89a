package import Foundation
import Synchronization

/// Counts the sends an emulator accepted and keeps when each happened, so that a test can ask
/// afterwards when sends resumed after a moment it names and how long they stood still since:
/// figures that polling the count cannot give once the emulator is so busy that a poll waits
/// seconds for its answer.
///
/// It keeps the times of the last ``capacity`` sends (8 bytes each); when full, it forgets the
/// older half.
package final class AcceptLog: Sendable {
    /// When sends resumed after a moment, and how long they stood still since.
    package struct Pauses: Equatable, Sendable {
        /// The first send accepted at or after the moment, if any.
        package var firstAccepted: Date?
        /// The last send accepted at or after the moment, if any.
        package var lastAccepted: Date?
        /// The longest time without a send between the moment and the last send accepted
        /// (the moment itself counts as a send): 0 without any send since.
        package var longestPause: TimeInterval
    }

    package let capacity: Int

    private struct State {
        var count = 0
        /// Milliseconds since 1970, oldest first.
        var times: [Int64] = []
    }

    private let state = Mutex(State())

    package init(capacity: Int = 1 << 20) {
        precondition(capacity >= 2, "an accept log keeps at least two times")
        self.capacity = capacity
    }

    package var count: Int { state.withLock { $0.count } }

    /// Books one accepted send, now.
    package func record(at date: Date = Date()) {
        let now = Int64((date.timeIntervalSince1970 * 1000).rounded())
        state.withLock { state in
            state.count += 1
            if state.times.count == capacity { state.times.removeFirst(capacity / 2) }
            state.times.append(now)
        }
    }

    /// The sends from `moment` on (see ``Pauses``); sends older than the log's capacity are
    /// forgotten.
    package func pauses(since moment: Date) -> Pauses {
        let since = Int64((moment.timeIntervalSince1970 * 1000).rounded())
        return state.withLock { state in
            var low = 0
            var high = state.times.count
            while low < high {
                let middle = (low + high) / 2
                if state.times[middle] < since { low = middle + 1 } else { high = middle }
            }
            guard low < state.times.count else { return Pauses(firstAccepted: nil, lastAccepted: nil, longestPause: 0) }
            var previous = since
            var longest: Int64 = 0
            for time in state.times[low...] {
                longest = max(longest, time - previous)
                previous = time
            }
            return Pauses(
                firstAccepted: Date(timeIntervalSince1970: Double(state.times[low]) / 1000),
                lastAccepted: Date(timeIntervalSince1970: Double(previous) / 1000),
                longestPause: Double(longest) / 1000
            )
        }
    }
}
