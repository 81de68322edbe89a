import Foundation
import Testing

@testable import HeraldPush

@Suite struct RetryAfterTests {
    // Sun, 06 Nov 1994 08:49:37 GMT
    static let reference = Date(timeIntervalSince1970: 784_111_777)

    @Test(
        arguments: [
            ("120", 120.0),
            (" 0 ", 0.0),
            ("3600", 3600.0),
            ("Sun, 06 Nov 1994 08:49:37 GMT", 0.0),
            ("Sun, 06 Nov 1994 08:51:37 GMT", 120.0),
            ("Sunday, 06-Nov-94 08:50:37 GMT", 60.0),
            ("Sun Nov  6 08:49:47 1994", 10.0),
            ("Sat, 05 Nov 1994 08:49:37 GMT", 0.0),  // in the past
            ("Tue, 01 Mar 1996 00:00:00 GMT", 41_526_623.0),  // across a leap day
        ] as [(String, Double)])
    func parses(_ header: String, seconds: Double) {
        #expect(RetryAfter.parse(header, now: Self.reference) == seconds)
    }

    @Test(arguments: [
        "", "soon", "-5", "1.5", "12abc", "Sun, 06 Nov 1994 08:49:37 PST", "Sun, 32 Nov 1994 08:49:37 GMT",
        "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 06 Nov 1994 25:49:37 GMT",
    ])
    func rejects(_ header: String) {
        #expect(RetryAfter.parse(header, now: Self.reference) == nil)
    }

    @Test func httpDateMatchesFoundation() throws {
        let date = try #require(RetryAfter.httpDate("Wed, 21 Oct 2015 07:28:00 GMT"))
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = try #require(TimeZone(identifier: "GMT"))
        let expected = try #require(
            calendar.date(from: DateComponents(year: 2015, month: 10, day: 21, hour: 7, minute: 28, second: 0)))
        #expect(date == expected)
    }
}
