/// The message a hub user sends: what a person sees, and data for the app.
///
/// One content is rendered for each platform with ``payload(for:)``:
///
/// ```swift
/// let content = NotificationContent.notifyUser(from: "alice", message: "hi")
/// let payload = try content.payload(for: .apns)  // {"aps":{"alert":"From alice: hi"}}
/// ```
public struct NotificationContent: Sendable, Hashable, Codable {
    /// A title shown above the body; `nil` or empty for none.
    public var title: String?
    /// The text shown; must not be empty.
    public var body: String
    /// Key–value data for the app, delivered beside the visible text.
    public var data: [String: String]
    /// The number on the app icon (APNs only); `0` clears it.
    public var badge: Int?
    /// The name of a sound to play (APNs only), such as `default`.
    public var sound: String?
    /// Deliver to FCM as a data message (`data.message` = body, `data.title` = title, high
    /// priority) that the app turns into a notification itself, instead of a notification
    /// message that Android shows on its own. The notify-users tutorial's Android code reads
    /// `data.message`.
    public var fcmDataOnly: Bool = false

    public init(
        title: String? = nil,
        body: String,
        data: [String: String] = [:],
        badge: Int? = nil,
        sound: String? = nil
    ) {
        self.title = title
        self.body = body
        self.data = data
        self.badge = badge
        self.sound = sound
    }

    /// What the notify-users flow sends: "From <sender>: <message>".
    public static func notifyUser(from sender: String, message: String) -> NotificationContent {
        var content = NotificationContent(body: "From \(sender): \(message)")
        content.fcmDataOnly = true
        return content
    }

    private enum CodingKeys: String, CodingKey {
        case title, body, data, badge, sound, fcmDataOnly
    }

    /// Decodes `{"body": …}` with `title`, `data`, `badge` and `sound` optional.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.title = try container.decodeIfPresent(String.self, forKey: .title)
        self.body = try container.decode(String.self, forKey: .body)
        self.data = try container.decodeIfPresent([String: String].self, forKey: .data) ?? [:]
        self.badge = try container.decodeIfPresent(Int.self, forKey: .badge)
        self.sound = try container.decodeIfPresent(String.self, forKey: .sound)
        self.fcmDataOnly = try container.decodeIfPresent(Bool.self, forKey: .fcmDataOnly) ?? false
    }
}
