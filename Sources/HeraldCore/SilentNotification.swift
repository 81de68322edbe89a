import Foundation

/// A notification that shows nothing: data for the app, which wakes up and does the work
/// itself — fetches a secure payload, downloads rich content.
///
/// Secure push and rich push send only ids this way, so that no content travels through a
/// push service:
///
/// ```swift
/// let payload = try SilentNotification.secure(id: id).payload(for: .apns)
/// // {"aps":{"content-available":1},"secureId":"1364025483"}, apns-push-type: background, apns-priority: 5
/// ```
public struct SilentNotification: Sendable, Hashable, Codable {
    /// Key–value data for the app; at least one key.
    public var data: [String: String]

    public init(data: [String: String]) {
        self.data = data
    }

    /// The id-only notification of secure push: `{"secureId": id}`.
    public static func secure(id: String) -> SilentNotification {
        SilentNotification(data: [NotificationDataKey.secureID: id])
    }

    /// Renders the notification for one platform.
    ///
    /// - ``Platform/apns``: `{"aps":{"content-available":1}, <data>}` with
    ///   `apns-push-type: background` and `apns-priority: 5` (APNs refuses a background push
    ///   with priority 10).
    /// - ``Platform/fcm``: a data message, `{"android":{"priority":"high"},"data":{…}}`, so
    ///   that the app is woken even in Doze.
    /// - ``Platform/wns``: a raw notification whose body is the data as a JSON object;
    ///   `X-WNS-Type: wns/raw`, `Content-Type: application/octet-stream`.
    /// - ``Platform/webpush``: the data as a JSON object in plaintext (the provider encrypts
    ///   it); `TTL: 86400`, `Urgency: normal`.
    ///
    /// - Throws: `400` for empty data or a key the push service reserves (`aps` for APNs;
    ///   `from`, `message_type`, `google…`, `gcm…` for FCM); `413` when the payload is larger
    ///   than ``PayloadLimits/limit(for:)``.
    public func payload(for platform: Platform) throws(HeraldError) -> PlatformPayload {
        guard !data.isEmpty else { throw .badRequest("a silent notification needs at least one data key") }
        let body: Data
        let headers: [PlatformPayload.Header]
        switch platform {
        case .apns:
            guard data["aps"] == nil else {
                throw .badRequest("data key 'aps' is reserved by APNs for the notification itself")
            }
            body = try NotificationContent.encodeJSON(APNsBackground(custom: data))
            headers = [.init(name: "apns-push-type", value: "background"), .init(name: "apns-priority", value: "5")]
        case .fcm:
            for key in data.keys.sorted() where NotificationContent.isReservedByFCM(key) {
                throw .badRequest(
                    "data key '\(key)' is reserved by FCM; keys may not be 'from', 'message_type' or start with 'google' or 'gcm'"
                )
            }
            body = try NotificationContent.encodeJSON(FCMDataMessage(data: data))
            headers = []
        case .wns:
            body = try NotificationContent.encodeJSON(data)
            headers = [
                .init(name: "X-WNS-Type", value: "wns/raw"), .init(name: "Content-Type", value: "application/octet-stream"),
            ]
        case .webpush:
            body = try NotificationContent.encodeJSON(data)
            headers = [.init(name: "TTL", value: "86400"), .init(name: "Urgency", value: "normal")]
        }
        try PayloadLimits.check(byteCount: body.count, for: platform)
        return PlatformPayload(platform: platform, body: body, headers: headers)
    }
}

/// The data keys of Herald's secure and rich notifications, as apps read them (the iOS
/// `userInfo`, the Android `RemoteMessage.data`, a WNS raw or Web Push JSON body).
public enum NotificationDataKey {
    /// The id of a secure payload, a decimal number in a string: fetch it with
    /// `GET /api/notifications/{id}`.
    public static let secureID = "secureId"
    /// The id of rich content, a decimal number in a string: fetch it with
    /// `GET /api/notifications/{id}`.
    public static let richID = "richId"
    /// The kind of rich content: `img` for a picture (see
    /// ``RichNotification/richType(forContentType:)``).
    public static let richType = "richType"
    /// The media type of rich content, such as `image/png`.
    public static let richContentType = "richContentType"
    /// The short text sent with rich content.
    public static let richMessage = "richMessage"
    /// The absolute URL of rich content (alert-style rich notifications).
    public static let richURL = "richUrl"
}

/// `{"aps":{"content-available":1}, <custom keys>}`.
private struct APNsBackground: Encodable {
    struct APS: Encodable {
        var contentAvailable = 1
        enum CodingKeys: String, CodingKey { case contentAvailable = "content-available" }
    }

    var custom: [String: String]

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(APS(), forKey: Key(stringValue: "aps"))
        for (key, value) in custom { try container.encode(value, forKey: Key(stringValue: key)) }
    }
}

/// An FCM v1 data `message` without `token`.
private struct FCMDataMessage: Encodable {
    struct Android: Encodable {
        var priority = "high"
    }

    var android = Android()
    var data: [String: String]
}
