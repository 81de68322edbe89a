public import Foundation

extension Date {
    /// As a store keeps dates: to the millisecond.
    public var storeRoundedForTests: Date {
        Date(timeIntervalSince1970: (timeIntervalSince1970 * 1000).rounded() / 1000)
    }
}
