package import Foundation
import HeraldCore

/// The date forms of the hub API's documents and headers: `xsd:dateTime` and Atom dates.
///
/// Writing is always UTC with `Z`: `2024-05-01T12:30:45Z`, or with milliseconds
/// (`2024-05-01T12:30:45.25Z`, trailing zeros dropped) where the service writes fractions.
/// Parsing is tolerant: any number of fraction digits, `Z`, a `±hh:mm` or `±hhmm` offset, or
/// no zone at all (read as UTC, as the service means it), and `T`, `t` or a space between date
/// and time. Calendar arithmetic is done here, without a `Calendar` or a `DateFormatter`.
package enum XSDDateTime {
    /// How much of the second to write.
    package enum Precision: Sendable {
        /// Whole seconds, truncated: Atom's `published` and `updated`.
        case seconds
        /// Up to milliseconds, rounded, trailing zeros dropped, none when zero.
        case milliseconds
    }

    /// `date` as `yyyy-MM-ddTHH:mm:ss[.fff]Z`.
    package static func string(from date: Date, precision: Precision = .seconds) -> String {
        let interval = date.timeIntervalSince1970.isFinite ? date.timeIntervalSince1970 : 0
        let seconds: Int64
        var millisecond: Int64 = 0
        switch precision {
        case .seconds:
            seconds = Int64(interval.rounded(.down))
        case .milliseconds:
            let milliseconds = Int64((interval * 1000).rounded())
            seconds = floorDivide(milliseconds, 1000)
            millisecond = milliseconds - seconds * 1000
        }
        let days = floorDivide(seconds, 86_400)
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = civil(fromDays: days)
        var result =
            pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2) + "T"
            + pad(secondOfDay / 3600, 2) + ":" + pad(secondOfDay / 60 % 60, 2) + ":" + pad(secondOfDay % 60, 2)
        if millisecond != 0 {
            var fraction = pad(millisecond, 3)
            while fraction.hasSuffix("0") { fraction.removeLast() }
            result += "." + fraction
        }
        return result + "Z"
    }

    /// Parses an `xsd:dateTime`; `nil` if `string` is not one.
    package static func date(from string: String) -> Date? {
        var scanner = Scanner(Array(string.trimmingWhitespace().utf8))
        guard let year = scanner.number(minDigits: 4, maxDigits: 9), scanner.take("-"),
            let month = scanner.number(minDigits: 2, maxDigits: 2), scanner.take("-"),
            let day = scanner.number(minDigits: 2, maxDigits: 2),
            scanner.take("T") || scanner.take("t") || scanner.take(" "),
            let hour = scanner.number(minDigits: 2, maxDigits: 2), scanner.take(":"),
            let minute = scanner.number(minDigits: 2, maxDigits: 2)
        else { return nil }
        var second: Int64 = 0
        var fraction = 0.0
        if scanner.take(":") {
            guard let s = scanner.number(minDigits: 2, maxDigits: 2) else { return nil }
            second = s
            if scanner.take(".") || scanner.take(",") {
                // Nine digits (nanoseconds) are more than a Date holds; further ones are read and dropped.
                var numerator: Int64 = 0
                var denominator: Int64 = 1
                var digits = 0
                while let digit = scanner.digit() {
                    if digits < 9 {
                        numerator = numerator * 10 + digit
                        denominator *= 10
                    }
                    digits += 1
                }
                guard digits > 0 else { return nil }
                fraction = Double(numerator) / Double(denominator)
            }
        }
        var offset: Int64 = 0
        if scanner.take("Z") || scanner.take("z") {
            offset = 0
        } else if let sign = scanner.sign() {
            guard let hours = scanner.number(minDigits: 2, maxDigits: 2) else { return nil }
            _ = scanner.take(":")
            guard let minutes = scanner.number(minDigits: 2, maxDigits: 2), hours <= 14, minutes < 60 else {
                return nil
            }
            offset = sign * (hours * 3600 + minutes * 60)
        }
        guard scanner.isAtEnd else { return nil }
        guard (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day),
            hour < 24, minute < 60, second < 60
        else { return nil }
        let days = days(fromCivil: year, month, day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset
        return Date(timeIntervalSince1970: Double(seconds) + fraction)
    }

    // MARK: - Calendar arithmetic (proleptic Gregorian, days since 1970-01-01)

    static func days(fromCivil year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = floorDivide(y, 400)
        let yearOfEra = y - era * 400
        let shiftedMonth = (month + 9) % 12
        let dayOfYear = (153 * shiftedMonth + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func civil(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = floorDivide(z, 146_097)
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    private static func floorDivide(_ a: Int64, _ b: Int64) -> Int64 {
        a >= 0 ? a / b : -((-a + b - 1) / b)
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }

    private struct Scanner {
        let bytes: [UInt8]
        var index = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var isAtEnd: Bool { index == bytes.count }

        mutating func take(_ character: Unicode.Scalar) -> Bool {
            guard index < bytes.count, bytes[index] == UInt8(character.value) else { return false }
            index += 1
            return true
        }

        mutating func digit() -> Int64? {
            guard index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) else {
                return nil
            }
            defer { index += 1 }
            return Int64(bytes[index] - UInt8(ascii: "0"))
        }

        mutating func number(minDigits: Int, maxDigits: Int) -> Int64? {
            let start = index
            var value: Int64 = 0
            while index - start < maxDigits, let digit = digit() { value = value * 10 + digit }
            return index - start >= minDigits ? value : nil
        }

        mutating func sign() -> Int64? {
            if take("+") { return 1 }
            if take("-") { return -1 }
            return nil
        }
    }
}
