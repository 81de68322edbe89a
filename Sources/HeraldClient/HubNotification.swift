public import Foundation
public import HeraldCore
import HeraldHubWire

/// A notification for ``NotificationHubClient``'s sends: the body in a push service's own
/// format (or a template send's properties), its content type, and the headers that go
/// with it.
///
/// Build one with a factory; each encodes its body with an encoder:
///
/// ```swift
/// let alert = HubNotification.apple(
///     json: .object([("aps", .object([("alert", .string("Goal!"))]))]),
///     headers: ["apns-push-type": "alert", "apns-priority": "10"]
/// )
/// let android = HubNotification.fcmV1(json: .object([("notification", .object([("title", .string("Goal!"))]))]))
/// let toast = HubNotification.windows(xml: toastXML, type: .toast)
/// let everywhere = HubNotification.template(properties: ["message": "Goal!"])
/// ```
public struct HubNotification: Sendable, Hashable {
    /// The value of `ServiceBusNotification-Format`: which push service the body is for, or
    /// `template`. An open set: other values the hub knows can be written as they are.
    public struct Format: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// APNs.
        public static let apple = Format(rawValue: "apple")
        /// FCM HTTP v1: the body is `{"message": {…}}`.
        public static let fcmV1 = Format(rawValue: "fcmv1")
        /// The legacy GCM/FCM JSON, which the hub translates to FCM v1.
        public static let gcm = Format(rawValue: "gcm")
        /// WNS: toast, tile, badge or raw.
        public static let windows = Format(rawValue: "windows")
        /// Web Push.
        public static let browser = Format(rawValue: "browser")
        /// A template send: the body is a JSON object of properties.
        public static let template = Format(rawValue: "template")

        public var description: String { rawValue }

        /// The platform a native format is delivered on; `nil` for `template` and unknown formats.
        public var platform: Platform? {
            (try? HubFormat(parsing: rawValue))?.platform
        }
    }

    /// The `X-WNS-Type` of a Windows notification.
    public struct WindowsType: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        public static let toast = WindowsType(rawValue: "wns/toast")
        public static let tile = WindowsType(rawValue: "wns/tile")
        public static let badge = WindowsType(rawValue: "wns/badge")
        public static let raw = WindowsType(rawValue: "wns/raw")

        public var description: String { rawValue }
    }

    public var format: Format
    public var body: Data
    public var contentType: String
    /// Headers sent with the notification: `apns-*` for APNs, `X-WNS-*` for WNS, `TTL`,
    /// `Urgency` and `Topic` for Web Push, `ServiceBusNotification-TemplateName` for a
    /// template send.
    public var headers: [String: String]

    /// A notification with a body as it is. Prefer the factories, which encode the body.
    public init(format: Format, body: Data, contentType: String, headers: [String: String] = [:]) {
        self.format = format
        self.body = body
        self.contentType = contentType
        self.headers = headers
    }

    package static let jsonContentType = "application/json;charset=utf-8"
    static let templateNameHeader = "ServiceBusNotification-TemplateName"

    /// An APNs notification: `json` is the whole payload (`{"aps": {…}, …}`); `headers` are
    /// APNs headers, each starting with `apns-` (`apns-push-type`, `apns-priority`,
    /// `apns-expiration`, `apns-collapse-id`, …).
    public static func apple(json: JSONValue, headers: [String: String] = [:]) -> HubNotification {
        HubNotification(format: .apple, body: encode(json), contentType: jsonContentType, headers: headers)
    }

    /// An FCM HTTP v1 notification. `json` is the request body, `{"message": {…}}`, without a
    /// `token` (the hub adds each device's); a bare message object (one without a `message`
    /// member) is wrapped in `{"message": …}`.
    public static func fcmV1(json: JSONValue) -> HubNotification {
        let body: JSONValue
        if case .object(let members) = json, members.count == 1, members[0].key == "message" {
            body = json
        } else {
            body = .object([("message", json)])
        }
        return HubNotification(format: .fcmV1, body: encode(body), contentType: jsonContentType)
    }

    /// A notification in the legacy GCM/FCM JSON (`{"notification": …, "data": …}`), which the
    /// hub translates to FCM v1.
    public static func gcm(json: JSONValue) -> HubNotification {
        HubNotification(format: .gcm, body: encode(json), contentType: jsonContentType)
    }

    /// A WNS toast, tile or badge: `xml` is the notification's XML document. `headers` may add
    /// other `X-WNS-*` headers (`X-WNS-TTL`, `X-WNS-Tag`, …).
    public static func windows(xml: String, type: WindowsType, headers: [String: String] = [:]) -> HubNotification {
        var all = headers
        all["X-WNS-Type"] = type.rawValue
        let contentType = type == .raw ? "application/octet-stream" : "application/xml"
        return HubNotification(format: .windows, body: Data(xml.utf8), contentType: contentType, headers: all)
    }

    /// A WNS raw notification: bytes the app receives as they are.
    public static func windowsRaw(_ data: Data, headers: [String: String] = [:]) -> HubNotification {
        var all = headers
        all["X-WNS-Type"] = WindowsType.raw.rawValue
        return HubNotification(format: .windows, body: data, contentType: "application/octet-stream", headers: all)
    }

    /// A Web Push notification: `json` is what the service worker's `push` event reads;
    /// `headers` may hold `TTL`, `Urgency` and `Topic`.
    public static func browser(json: JSONValue, headers: [String: String] = [:]) -> HubNotification {
        HubNotification(format: .browser, body: encode(json), contentType: jsonContentType, headers: headers)
    }

    /// A template send: every template registration (or, with `templateName`, those whose
    /// template has that name) renders its template with these properties, overriding its
    /// own push variables.
    public static func template(properties: [String: String], templateName: String? = nil) -> HubNotification {
        let object = JSONValue.object(properties.sorted { $0.key < $1.key }.map { (key: $0.key, value: JSONValue.string($0.value)) })
        var headers: [String: String] = [:]
        if let templateName { headers[templateNameHeader] = templateName }
        return HubNotification(format: .template, body: encode(object), contentType: jsonContentType, headers: headers)
    }

    /// `json` as compact JSON. Numbers JSON cannot hold (NaN, ±infinity) are written as the
    /// strings `"NaN"`, `"Infinity"` and `"-Infinity"`, so encoding cannot fail.
    static func encode(_ json: JSONValue) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
        return (try? encoder.encode(json)) ?? Data("null".utf8)
    }
}
