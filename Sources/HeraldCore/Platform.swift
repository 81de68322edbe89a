/// A push notification service that Herald delivers through.
public enum Platform: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// Apple Push Notification service.
    case apns
    /// Firebase Cloud Messaging, HTTP v1 API.
    case fcm
    /// Windows Push Notification Services.
    case wns
    /// Web Push (RFC 8030) with VAPID and aes128gcm.
    case webpush

    public var description: String { rawValue }

    /// Parses a platform name as clients send it.
    ///
    /// Accepts the names Herald uses and the aliases existing clients send: `gcm` and `fcmv1`
    /// for FCM, `apple` for APNs, `windows` for WNS, `browser` for Web Push. Matching is
    /// case-insensitive. A retired service (`mpns`, `windowsphone`) or an unknown name throws
    /// a ``HeraldError`` whose message says which names are accepted.
    public init(parsing name: String) throws(HeraldError) {
        switch name.lowercased() {
        case "apns", "apple", "ios": self = .apns
        case "fcm", "gcm", "fcmv1", "android": self = .fcm
        case "wns", "windows": self = .wns
        case "webpush", "browser", "web": self = .webpush
        case "mpns", "windowsphone":
            throw .badRequest(
                "platform '\(name)' is the Microsoft Push Notification Service for Windows Phone, which was retired; use 'wns' for Windows devices"
            )
        case "":
            throw .badRequest("a platform is required; use one of apns, fcm, wns, webpush")
        default:
            throw .badRequest("unknown platform '\(name)'; use one of apns, fcm (alias gcm), wns, webpush")
        }
    }
}
