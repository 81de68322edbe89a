public import Foundation
public import HeraldCore

/// Where a page of ``NotificationStore/notificationHistory(states:before:limit:)`` ends: the
/// acceptance time and id of its last notification. The next page holds what is strictly
/// older in that order.
public struct NotificationHistoryCursor: Sendable, Hashable {
    public var enqueuedAt: Date
    public var id: String

    public init(enqueuedAt: Date, id: String) {
        self.enqueuedAt = enqueuedAt
        self.id = id
    }

    /// The cursor after `listing`, the last of a page.
    public init(after listing: NotificationListing) {
        self.init(after: listing.record)
    }

    /// The cursor after `record`, the last of a page.
    public init(after record: NotificationRecord) {
        self.init(enqueuedAt: record.enqueuedAt, id: record.id)
    }

    /// The cursor as an opaque, URL-safe string (base64url, no padding), for a `next` link.
    /// Dates are kept to the millisecond, as the stores keep them.
    public var token: String {
        Data("\(enqueuedAt.storeMilliseconds).\(id)".utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// The cursor a ``token`` stands for; `nil` for any other string.
    public init?(token: String) {
        guard token.utf8.allSatisfy({ $0.isBase64URLCharacter }) else { return nil }
        var base64 = token.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.utf8.count % 4) % 4)
        guard let data = Data(base64Encoded: base64), let text = String(data: data, encoding: .utf8),
            let dot = text.firstIndex(of: "."), let ms = Int(text[..<dot]), !text[text.index(after: dot)...].isEmpty
        else { return nil }
        self.init(enqueuedAt: Date(storeMilliseconds: ms), id: String(text[text.index(after: dot)...]))
    }
}

extension UInt8 {
    fileprivate var isBase64URLCharacter: Bool {
        switch self {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "_"):
            true
        default: false
        }
    }
}
