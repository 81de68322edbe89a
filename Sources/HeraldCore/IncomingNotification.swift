public import Foundation

/// A notification as an app receives it, classified: plain text, a secure payload to fetch, or
/// rich content to fetch.
///
/// Reads what Herald sends on every platform — an APNs `userInfo`, an FCM data map, or a JSON
/// body (an APNs payload, an FCM message, a WNS raw or Web Push body):
///
/// ```swift
/// func application(_ app: UIApplication, didReceiveRemoteNotification userInfo: [AnyHashable: Any]) async
///     -> UIBackgroundFetchResult {
///     switch IncomingNotification(userInfo: userInfo) {
///     case .secure(let id): show(try? await client.fetchSecurePayload(id: id))
///     case .rich(let id, _, _, _): show(try? await client.fetchRichContent(id: id))
///     case .plain: break
///     }
///     return .newData
/// }
/// ```
public enum IncomingNotification: Sendable, Hashable {
    /// A notification with no Herald content id: its title and text, if it has any.
    case plain(title: String?, body: String?)
    /// A secure push: fetch the payload with `GET /api/notifications/{id}`.
    case secure(id: String)
    /// A rich push: fetch the content with `GET /api/notifications/{id}`. `type` is its media
    /// type (`richContentType`, such as `image/png`; `richType`, such as `img`, when a sender
    /// gave no media type); `message` is the text sent with it (`richMessage`, or the text the
    /// notification shows); `url` is `richUrl`, if sent.
    case rich(id: String, type: String, message: String?, url: String?)

    /// Classifies an APNs `userInfo` dictionary (Herald's keys are beside `aps`), or the
    /// `userInfo` of an FCM message delivered to iOS (its data keys are top-level).
    public init(userInfo: [AnyHashable: Any]) {
        var fields = Fields()
        for (key, value) in userInfo {
            if let key = key.base as? String, let value = value as? String { fields.values[key] = value }
        }
        if let aps = userInfo["aps"] as? [AnyHashable: Any] {
            if let alert = aps["alert"] as? String {
                fields.alertBody = alert
            } else if let alert = aps["alert"] as? [AnyHashable: Any] {
                fields.alertTitle = alert["title"] as? String
                fields.alertBody = alert["body"] as? String
            }
        }
        self = fields.classified
    }

    /// Classifies an FCM data map (`RemoteMessage.data` on Android).
    public init(data: [String: String]) {
        self = Fields(values: data).classified
    }

    /// Classifies a JSON body: an APNs payload, an FCM `message` (or a request wrapping one in
    /// `"message"`), or the JSON of a WNS raw or Web Push notification.
    public init(payload: JSONValue) {
        var top = payload
        if let message = payload["message"], case .object = message { top = message }
        var fields = Fields()
        fields.addStrings(of: top)
        if let data = top["data"] { fields.addStrings(of: data) }
        if let alert = top["aps"]?["alert"] {
            if case .string(let text) = alert {
                fields.alertBody = text
            } else {
                fields.alertTitle = alert["title"]?.string
                fields.alertBody = alert["body"]?.string
            }
        }
        if let notification = top["notification"] {
            fields.alertTitle = fields.alertTitle ?? notification["title"]?.string
            fields.alertBody = fields.alertBody ?? notification["body"]?.string
        }
        self = fields.classified
    }

    /// Classifies a JSON body given as bytes; throws if it is not JSON.
    public init(json: Data) throws {
        self.init(payload: try JSONValue(parsing: json))
    }

    /// The content id to fetch, if this is a secure or rich notification.
    public var contentID: String? {
        switch self {
        case .plain: nil
        case .secure(let id): id
        case .rich(let id, _, _, _): id
        }
    }

    /// What every source is reduced to: the data's string values and the shown alert.
    private struct Fields {
        var values: [String: String] = [:]
        var alertTitle: String?
        var alertBody: String?

        mutating func addStrings(of object: JSONValue) {
            guard case .object(let members) = object else { return }
            for (key, value) in members {
                if case .string(let text) = value { values[key] = text }
            }
        }

        /// The text shown: an APNs alert or FCM notification body, else a data `message`
        /// (notify-users on FCM) or a Web Push `body`.
        var shownBody: String? { alertBody ?? values["message"] ?? values["body"] }

        var classified: IncomingNotification {
            if let id = values[NotificationDataKey.secureID], !id.isEmpty {
                return .secure(id: id)
            }
            if let id = values[NotificationDataKey.richID], !id.isEmpty,
                let type = values[NotificationDataKey.richContentType] ?? values[NotificationDataKey.richType]
            {
                return .rich(
                    id: id,
                    type: type,
                    message: values[NotificationDataKey.richMessage] ?? shownBody,
                    url: values[NotificationDataKey.richURL]
                )
            }
            return .plain(title: alertTitle ?? values["title"], body: shownBody)
        }
    }
}

extension JSONValue {
    fileprivate var string: String? {
        if case .string(let text) = self { return text }
        return nil
    }
}
