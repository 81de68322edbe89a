import Foundation
import HeraldCore

/// `-[NSString intValue]` and `-[NSNumber intValue]`, as the tutorials' iOS code applies them to
/// a value of `userInfo` (which holds an `NSString` for a JSON string, an `NSNumber` for a JSON
/// number).
enum ObjCIntValue {
    /// `-[NSString intValue]`: skips leading white space, reads an optional sign and the
    /// decimal digits that follow, and stops at the first other character; `INT_MAX` or
    /// `INT_MIN` when the number does not fit; 0 when the string does not begin with a number.
    static func ofString(_ string: String) -> Int32 {
        var scalars = Substring(string).unicodeScalars[...]
        while let first = scalars.first, CharacterSet.whitespacesAndNewlines.contains(first) { scalars.removeFirst() }
        var negative = false
        if let sign = scalars.first, sign == "+" || sign == "-" {
            negative = sign == "-"
            scalars.removeFirst()
        }
        var magnitude: Int64 = 0
        var overflow = false
        for scalar in scalars {
            guard ("0"..."9").contains(scalar) else { break }
            if !overflow { magnitude = magnitude * 10 + Int64(scalar.value - 48) }
            if magnitude > Int64(Int32.max) + 1 { overflow = true }
        }
        if negative { return overflow || magnitude > Int64(Int32.max) + 1 ? .min : Int32(-magnitude) }
        return overflow || magnitude > Int64(Int32.max) ? .max : Int32(magnitude)
    }

    /// `-[NSNumber intValue]` of a number `NSJSONSerialization` made: an integer is truncated to
    /// its low 32 bits, a fraction toward zero.
    static func ofNumber(_ number: Double) -> Int32 {
        guard number.isFinite, number.magnitude < 0x1p63 else { return 0 }
        return Int32(truncatingIfNeeded: Int64(number.rounded(.towardZero)))
    }

    /// `[[userInfo objectForKey:key] intValue]` of a JSON value: a string or a number; 0 for
    /// anything else (`nil` answers 0 to any message).
    static func of(_ value: JSONValue?) -> Int32 {
        switch value {
        case .string(let string): ofString(string)
        case .number(let number): ofNumber(number)
        case .bool(let flag): flag ? 1 : 0
        default: 0
        }
    }
}
