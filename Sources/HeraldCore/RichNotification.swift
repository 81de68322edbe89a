import Foundation

/// How a rich notification reaches the device.
///
/// An open set: parse with ``init(parsing:)``; new styles may be added.
public struct RichNotificationStyle: Sendable, Hashable, Codable, CustomStringConvertible {
    public let rawValue: String

    private init(_ rawValue: String) { self.rawValue = rawValue }

    /// A silent notification with `richId`, `richType`, `richContentType` and `richMessage` on
    /// every platform: the app fetches the content and shows it itself.
    public static let silent = RichNotificationStyle("silent")
    /// A visible notification whose text is the message, with `richId`, `richType`,
    /// `richContentType` and `richUrl` as data. On APNs it is `mutable-content`, so that a notification service
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

/// The notification of rich push: the id, kind and media type of content the device fetches
/// from Herald, and a short message — never the content itself.
///
/// It carries what the rich-push tutorial's device code reads: `richId` (a decimal number, read
/// with `intValue`), `richType` (`img` for a picture, which it fetches with
/// `GET /api/notifications/{id}`) and `richMessage`; and `richContentType`, the media type,
/// for apps that want it.
///
/// ```swift
/// let rich = RichNotification(id: "1364025482", contentType: "image/png", message: "New photo", url: url, style: .alert)
/// let payload = try rich.payload(for: .apns)
/// ```
public struct RichNotification: Sendable, Hashable {
    /// The content's id (`GET /api/notifications/{id}`).
    public var id: String
    /// The content's media type, such as `image/png`; sent as `richContentType`.
    public var contentType: String
    /// The short text that goes with the content.
    public var message: String
    /// The absolute URL of the content; sent as `richUrl` in the alert style.
    public var url: String?
    public var style: RichNotificationStyle

    public init(id: String, contentType: String, message: String, url: String? = nil, style: RichNotificationStyle = .silent) {
        self.id = id
        self.contentType = contentType
        self.message = message
        self.url = url
        self.style = style
    }

    /// The kind of content, sent as `richType`: ``richType(forContentType:)`` of
    /// ``contentType``.
    public var richType: String { Self.richType(forContentType: contentType) }

    /// The kind of content of a media type, as `richType` says it: `img` for images (the
    /// tutorial's device code fetches and shows the content only then), `audio`, `video`,
    /// `url` for `text/uri-list`, `text` for other text, `json`, and `file` for anything else.
    public static func richType(forContentType contentType: String) -> String {
        let type = contentType.lowercased()
        if type.hasPrefix("image/") { return "img" }
        if type.hasPrefix("audio/") { return "audio" }
        if type.hasPrefix("video/") { return "video" }
        if type == "text/uri-list" { return "url" }
        if type.hasPrefix("text/") { return "text" }
        if type == "application/json" || type.hasSuffix("+json") { return "json" }
        return "file"
    }

    /// Renders the notification for one platform.
    ///
    /// - ``RichNotificationStyle/silent``: ``SilentNotification`` with `richId`, `richType`,
    ///   `richContentType` and `richMessage` (APNs background push, FCM data message, WNS raw,
    ///   Web Push JSON).
    /// - ``RichNotificationStyle/alert``: on APNs
    ///   `{"aps":{"alert":{"body":message},"mutable-content":1},"richId","richType","richContentType","richUrl"}`
    ///   with `apns-push-type: alert`, `apns-priority: 10`; on the others a
    ///   ``NotificationContent`` with the message as its body and `richId`, `richType`,
    ///   `richContentType`, `richUrl` as data.
    ///
    /// Every value is a string, the id too: FCM data values can only be strings, and the
    /// tutorial's backend sends the id as a string, which `intValue` reads.
    ///
    /// - Throws: `400` for an empty message (alert style); `413` when the payload is too large.
    public func payload(for platform: Platform) throws(HeraldError) -> PlatformPayload {
        var data = [
            NotificationDataKey.richID: id,
            NotificationDataKey.richType: richType,
            NotificationDataKey.richContentType: contentType,
        ]
        guard style == .alert else {
            data[NotificationDataKey.richMessage] = message
            return try SilentNotification(data: data).payload(for: platform)
        }
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
