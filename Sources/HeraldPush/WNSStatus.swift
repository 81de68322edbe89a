/// The `X-WNS-Status` response header: what WNS did with a notification.
///
/// An open set: an unknown value keeps its raw string.
public struct WNSStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }

    public var description: String { rawValue }

    /// Accepted and queued for the device.
    public static let received = WNSStatus("received")
    /// Dropped: the device is offline and the notification was not to be cached, or the
    /// device refused it.
    public static let dropped = WNSStatus("dropped")
    /// The app sent more than its throttle limit allows (with 406).
    public static let channelThrottled = WNSStatus("channelthrottled")
}
