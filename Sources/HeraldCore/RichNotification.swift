import Foundation

/// How a rich notification reaches the device.
///
/// An open set: parse with ``init(parsing:)``; new styles may be added.
public struct RichNotificationStyle: Sendable, Hashable, Codable, CustomStringConvertible {
    public let rawValue: String

    private init(_ rawValue: String) { self.rawValue = rawValue }

    /// A silent notification with `richId`, `richType` and `richMessage` on every platform:
    /// the app fetches the content and shows it itself.
    public static let silent = RichNotificationStyle("silent")
    /// A visible notification whose text is the message, with `richId`, `richType` and
    /// `richUrl` as data. On APNs it is `mutable-content`, so that a notification service
    /// extension downloads the content and attaches it before iOS shows it.
    public static let alert = RichNotificationStyle("alert")

    /// Parses `silent` or `alert` (case-insensitive).
    public init(parsing name: String) throws(HeraldError) {
        switch name.lowercased() {
        case "silent": self = .silent
        case "alert": self = .alert
        default: throw .badRequest("unknown style '\(name)'; use silent or alert")
        }
    }

    public var description: String { rawValue }

    public init(from decoder: any Decoder) throws {
        let name = try decoder.singleValueContainer().decode(String.self)
        do {
            self = try RichNotificationStyle(parsing: name)
        } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: error.message))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// The notification of rich push: the id, media type and a short message of content the
/// device fetches from Herald, never the content itself.
///
/// ```swift
/// let rich = RichNotification(id: id, type: "image/png", message: "New photo", url: url, style: .alert)
/// let payload = try rich.payload(for: .apns)
/// ```
public struct RichNotification: Sendable, Hashable {
    /// The content's id (`GET /api/rich/{id}`).
    public var id: String
    /// The content's media type, such as `image/png`.
    public var type: String
    /// The short text that goes with the content.
    public var message: String
    /// The absolute URL of the content; sent as `richUrl` in the alert style.
    public var url: String?
    public var style: RichNotificationStyle

    public init(id: String, type: String, message: String, url: String? = nil, style: RichNotificationStyle = .silent) {
        self.id = id
        self.type = type
        self.message = message
        self.url = url
        self.style = style
    }

    /// Renders the notification for one platform.
    ///
    /// - ``RichNotificationStyle/silent``: ``SilentNotification`` with `richId`, `richType` and
    ///   `richMessage` (APNs background push, FCM data message, WNS raw, Web Push JSON).
    /// - ``RichNotificationStyle/alert``: on APNs
    ///   `{"aps":{"alert":{"body":message},"mutable-content":1},"richId","richType","richUrl"}`
    ///   with `apns-push-type: alert`, `apns-priority: 10`; on the others a
    ///   ``NotificationContent`` with the message as its body and `richId`, `richType`,
    ///   `richUrl` as data.
    ///
    /// - Throws: `400` for an empty message (alert style); `413` when the payload is too large.
    public func payload(for platform: Platform) throws(HeraldError) -> PlatformPayload {
        guard style == .alert else {
            return try SilentNotification(data: [
                NotificationDataKey.richID: id,
                NotificationDataKey.richType: type,
                NotificationDataKey.richMessage: message,
            ]).payload(for: platform)
        }
        var data = [NotificationDataKey.richID: id, NotificationDataKey.richType: type]
        if let url { data[NotificationDataKey.richURL] = url }
        guard platform == .apns else {
            return try NotificationContent(body: message, data: data).payload(for: platform)
        }
        guard !message.isEmpty else { throw .badRequest("an alert needs a message; 'message' is empty") }
        let body = try NotificationContent.encodeJSON(APNsMutableAlert(body: message, custom: data))
        try PayloadLimits.check(byteCount: body.count, for: .apns)
        return PlatformPayload(
            platform: .apns,
            body: body,
            headers: [.init(name: "apns-push-type", value: "alert"), .init(name: "apns-priority", value: "10")]
        )
    }
}

/// `{"aps":{"alert":{"body":…},"mutable-content":1}, <custom keys>}`.
private struct APNsMutableAlert: Encodable {
    struct Alert: Encodable {
        var body: String
    }

    struct APS: Encodable {
        var alert: Alert
        var mutableContent = 1
        enum CodingKeys: String, CodingKey {
            case alert
            case mutableContent = "mutable-content"
        }
    }

    var body: String
    var custom: [String: String]

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(APS(alert: Alert(body: body)), forKey: Key(stringValue: "aps"))
        for (key, value) in custom { try container.encode(value, forKey: Key(stringValue: key)) }
    }
}
