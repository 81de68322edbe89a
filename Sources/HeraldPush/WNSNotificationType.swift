import Foundation
import HeraldCore

/// The `X-WNS-Type` of a notification: what the device does with it.
///
/// WNS knows four types; a value outside them is kept (so it can be reported) but
/// ``isKnown`` is `false` and ``WNSProvider`` refuses to send it.
public struct WNSNotificationType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public var description: String { rawValue }

    /// A toast: `<toast>` XML.
    public static let toast = WNSNotificationType(rawValue: "wns/toast")
    /// A live tile update: `<tile>` XML.
    public static let tile = WNSNotificationType(rawValue: "wns/tile")
    /// A badge on the tile: `<badge>` XML.
    public static let badge = WNSNotificationType(rawValue: "wns/badge")
    /// Bytes handed to the app as they are (secure and rich push carry an id this way).
    public static let raw = WNSNotificationType(rawValue: "wns/raw")

    public static let allKnown: [WNSNotificationType] = [.toast, .tile, .badge, .raw]

    /// Parses a header value case-insensitively, surrounding spaces ignored.
    public init(header value: String) {
        self.init(rawValue: value.trimmingSpaces().lowercased())
    }

    public var isKnown: Bool { Self.allKnown.contains(self) }

    /// The `Content-Type` WNS requires: `application/octet-stream` for raw, `text/xml` otherwise.
    public var contentType: String { self == .raw ? "application/octet-stream" : "text/xml" }
}
