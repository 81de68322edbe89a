import HeraldCore
import Testing

@Suite struct DurationSecondsTests {
    @Test func secondsKeepTheFraction() {
        #expect(Duration.seconds(2).seconds == 2)
        #expect(Duration.milliseconds(1500).seconds == 1.5)
        #expect(Duration.microseconds(250).seconds == 0.000_25)
        #expect(Duration.milliseconds(-1500).seconds == -1.5)
        #expect(Duration.zero.seconds == 0)
    }

    @Test func wholeMillisecondsTruncateTowardZero() {
        #expect(Duration.milliseconds(1500).wholeMilliseconds == 1500)
        #expect(Duration.microseconds(1999).wholeMilliseconds == 1)
        #expect(Duration.microseconds(-1999).wholeMilliseconds == -1)
        #expect(Duration.nanoseconds(999_999).wholeMilliseconds == 0)
    }

    @Test func wholeNanosecondsTruncateTowardZero() {
        #expect(Duration.seconds(3).wholeNanoseconds == 3_000_000_000)
        #expect(Duration.milliseconds(1).wholeNanoseconds == 1_000_000)
        #expect((Duration.nanoseconds(5) + .init(secondsComponent: 0, attosecondsComponent: 999_999_999)).wholeNanoseconds == 5)
    }

    @Test func wholeUnitsSaturate() {
        let huge = Duration(secondsComponent: .max / 10, attosecondsComponent: 0)
        #expect(huge.wholeMilliseconds == .max)
        #expect(huge.wholeNanoseconds == .max)
        #expect((.zero - huge).wholeMilliseconds == .min)
        #expect((.zero - huge).wholeNanoseconds == .min)
    }
}
