public import Foundation
import HeraldCore

/// The `Retry-After` response header (RFC 9110 §10.2.3), as push services send it with
/// 429 and 5xx answers.
public enum RetryAfter {
    /// Seconds to wait, from either form of the header: a number of seconds (`120`) or an
    /// HTTP-date (`Wed, 21 Oct 2015 07:28:00 GMT`, also the obsolete RFC 850 and asctime
    /// forms), relative to `now`. A date in the past gives 0. Anything else gives `nil`.
    public static func parse(_ header: String, now: Date) -> Double? {
        let value = header.trimmingSpaces()
        guard let first = value.utf8.first else { return nil }
        if first >= UInt8(ascii: "0"), first <= UInt8(ascii: "9") {
            guard value.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
                let seconds = Double(value)
            else { return nil }
            return seconds
        }
        guard let date = httpDate(value) else { return nil }
        return max(0, date.timeIntervalSince(now))
    }

    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// Parses the three HTTP-date forms of RFC 9110 §5.6.7.
    static func httpDate(_ value: String) -> Date? {
        let parts = value.split(whereSeparator: { $0 == " " || $0 == "," }).map(String.init)
        let day: Int?
        let month: Int?
        var year: Int?
        let time: String
        switch parts.count {
        case 6:  // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
            guard parts[5] == "GMT" else { return nil }
            day = Int(parts[1])
            month = monthNumber(parts[2])
            year = Int(parts[3])
            time = parts[4]
        case 4:  // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
            guard parts[3] == "GMT" else { return nil }
            let date = parts[1].split(separator: "-").map(String.init)
            guard date.count == 3, date[2].count == 2 else { return nil }
            day = Int(date[0])
            month = monthNumber(date[1])
            year = Int(date[2]).map { $0 < 70 ? 2000 + $0 : 1900 + $0 }
            time = parts[2]
        case 5:  // asctime: Sun Nov  6 08:49:37 1994
            month = monthNumber(parts[1])
            day = Int(parts[2])
            time = parts[3]
            year = Int(parts[4])
        default:
            return nil
        }
        let clock = time.split(separator: ":").map { Int($0) }
        guard let day, let month, let year, (1...31).contains(day), (1970...9999).contains(year),
            clock.count == 3, let hour = clock[0], let minute = clock[1], let second = clock[2],
            (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second)
        else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        return Date(timeIntervalSince1970: Double(days * 86_400 + hour * 3_600 + minute * 60 + second))
    }

    private static func monthNumber(_ name: String) -> Int? {
        months.firstIndex(of: name.lowercased()).map { $0 + 1 }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
