import Foundation
import HeraldEmulator
import Testing

@Suite struct AcceptLogTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func pausesAreMeasuredFromTheMomentNamed() {
        let log = AcceptLog()
        for offset in [0.5, 1.0, 3.5, 4.0] { log.record(at: Self.start.addingTimeInterval(offset)) }
        let pauses = log.pauses(since: Self.start)
        #expect(pauses.firstAccepted == Self.start.addingTimeInterval(0.5))
        #expect(pauses.lastAccepted == Self.start.addingTimeInterval(4.0))
        #expect(pauses.longestPause == 2.5)
        let late = log.pauses(since: Self.start.addingTimeInterval(3.6))
        #expect(late.firstAccepted == Self.start.addingTimeInterval(4.0) && late.longestPause == 0.4)
        let after = log.pauses(since: Self.start.addingTimeInterval(5))
        #expect(after.firstAccepted == nil && after.lastAccepted == nil && after.longestPause == 0)
    }

    @Test func aFullLogForgetsItsOlderHalfButKeepsCounting() {
        let log = AcceptLog(capacity: 4)
        for second in 0..<5 { log.record(at: Self.start.addingTimeInterval(Double(second))) }
        #expect(log.count == 5)
        // Full at four times, the two oldest went: the first send it still knows is the third.
        #expect(log.pauses(since: Self.start).firstAccepted == Self.start.addingTimeInterval(2))
        #expect(log.pauses(since: Self.start).longestPause == 2)
    }
}
