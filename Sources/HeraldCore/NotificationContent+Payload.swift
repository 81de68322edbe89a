package import Foundation

extension NotificationContent {
    /// Renders the content for one platform: the body the push service receives, and its
    /// headers.
    ///
    /// - ``Platform/apns``: `{"aps":{"alert":{"body","title"},"badge","sound"}, <data>}`;
    ///   without a title, `alert` is the body text. Headers `apns-push-type: alert`,
    ///   `apns-priority: 10`.
    /// - ``Platform/fcm``: an FCM v1 `message` without `token`:
    ///   `{"data":{…},"notification":{"body","title"}}` (`data` left out when empty); with
    ///   ``fcmDataOnly``, `{"android":{"priority":"high"},"data":{…,"message":<body>,"title"}}`.
    /// - ``Platform/wns``: a `ToastGeneric` toast with the title and the body as `<text>`
    ///   elements; `data`, if any, as JSON in the toast's `launch` attribute. Headers
    ///   `X-WNS-Type: wns/toast`, `Content-Type: text/xml`.
    /// - ``Platform/webpush``: `{"body","data","title"}` in plaintext (the provider encrypts
    ///   it). Headers `TTL: 86400`, `Urgency: normal`.
    ///
    /// JSON keys are sorted, so equal contents render to equal bytes. `badge` and `sound`
    /// are used by APNs only; an empty `title` or `sound` is left out.
    ///
    /// - Throws: `400` for an empty body, a negative badge, a data key the push service
    ///   reserves (`aps` for APNs; `from`, `message_type`, `google…`, `gcm…` for FCM) or, for
    ///   WNS, a character XML cannot carry; `413` when the payload is larger than
    ///   ``PayloadLimits/limit(for:)``.
    public func payload(for platform: Platform) throws(HeraldError) -> PlatformPayload {
        try validate()
        let body: Data
        let headers: [PlatformPayload.Header]
        switch platform {
        case .apns:
            body = try apnsBody()
            headers = [.init(name: "apns-push-type", value: "alert"), .init(name: "apns-priority", value: "10")]
        case .fcm:
            body = try fcmBody()
            headers = []
        case .wns:
            body = try wnsBody()
            headers = [.init(name: "X-WNS-Type", value: "wns/toast"), .init(name: "Content-Type", value: "text/xml")]
        case .webpush:
            body = try webPushBody()
            headers = [.init(name: "TTL", value: "86400"), .init(name: "Urgency", value: "normal")]
        }
        try PayloadLimits.check(byteCount: body.count, for: platform)
        return PlatformPayload(platform: platform, body: body, headers: headers)
    }

    private func validate() throws(HeraldError) {
        if body.isEmpty { throw .badRequest("a notification needs a body; 'body' is empty") }
        if let badge, badge < 0 { throw .badRequest("'badge' must be 0 or more; it is \(badge)") }
    }

    private var shownTitle: String? { title.flatMap { $0.isEmpty ? nil : $0 } }
    private var shownSound: String? { sound.flatMap { $0.isEmpty ? nil : $0 } }

    // MARK: APNs

    private func apnsBody() throws(HeraldError) -> Data {
        if data["aps"] != nil {
            throw .badRequest("data key 'aps' is reserved by APNs for the notification itself")
        }
        let alert: APNsPayload.Alert = shownTitle.map { .titled(title: $0, body: body) } ?? .text(body)
        return try Self.encodeJSON(
            APNsPayload(aps: .init(alert: alert, badge: badge, sound: shownSound), custom: data)
        )
    }

    // MARK: FCM

    private func fcmBody() throws(HeraldError) -> Data {
        for key in data.keys.sorted() where Self.isReservedByFCM(key) {
            throw .badRequest(
                "data key '\(key)' is reserved by FCM; keys may not be 'from', 'message_type' or start with 'google' or 'gcm'"
            )
        }
        guard fcmDataOnly else {
            return try Self.encodeJSON(
                FCMMessage(notification: .init(title: shownTitle, body: body), data: data.isEmpty ? nil : data)
            )
        }
        var fcmData = data
        if fcmData["message"] == nil { fcmData["message"] = body }
        if let shownTitle, fcmData["title"] == nil { fcmData["title"] = shownTitle }
        return try Self.encodeJSON(FCMMessage(android: .init(priority: "high"), data: fcmData))
    }

    package static func isReservedByFCM(_ key: String) -> Bool {
        key == "from" || key == "message_type" || key.hasPrefix("google") || key.hasPrefix("gcm")
    }

    // MARK: WNS

    private func wnsBody() throws(HeraldError) -> Data {
        let launch = data.isEmpty ? [] : [(name: "launch", value: try Self.encodeJSONString(data))]
        var xml = XMLWriter()
        do throws(XMLWriter.InvalidCharacter) {
            try xml.start("toast", attributes: launch)
            try xml.start("visual")
            try xml.start("binding", attributes: [("template", "ToastGeneric")])
            if let shownTitle { try xml.element("text", text: shownTitle) }
            try xml.element("text", text: body)
            xml.end()
            xml.end()
            xml.end()
        } catch {
            throw .badRequest("the wns payload cannot carry the character \(error.name): XML 1.0 does not allow it")
        }
        return Data(xml.output.utf8)
    }

    // MARK: Web Push

    private func webPushBody() throws(HeraldError) -> Data {
        try Self.encodeJSON(WebPushPayload(title: shownTitle, body: body, data: data.isEmpty ? nil : data))
    }

    // MARK: Encoding

    /// Every payload's JSON: sorted keys (encoders do not promise to keep the order of keys, so
    /// equal payloads encode to equal bytes) and unescaped slashes.
    package static func encodeJSON(_ value: some Encodable) throws(HeraldError) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return try encoder.encode(value)
        } catch {
            throw HeraldError(code: .internalError, message: "could not encode the notification payload")
        }
    }

    private static func encodeJSONString(_ value: some Encodable) throws(HeraldError) -> String {
        String(decoding: try encodeJSON(value), as: UTF8.self)
    }
}

/// `{"aps": {…}, <custom keys>}`.
private struct APNsPayload: Encodable {
    enum Alert: Encodable {
        case text(String)
        case titled(title: String, body: String)

        private enum CodingKeys: String, CodingKey { case title, body }

        func encode(to encoder: any Encoder) throws {
            switch self {
            case .text(let text):
                var container = encoder.singleValueContainer()
                try container.encode(text)
            case .titled(let title, let body):
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(title, forKey: .title)
                try container.encode(body, forKey: .body)
            }
        }
    }

    struct APS: Encodable {
        var alert: Alert
        var badge: Int?
        var sound: String?
    }

    var aps: APS
    /// Top-level keys beside `aps`; never `aps` itself.
    var custom: [String: String]

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ string: String) { stringValue = string }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(aps, forKey: Key("aps"))
        for (key, value) in custom { try container.encode(value, forKey: Key(key)) }
    }
}

/// An FCM v1 `message` without `token`.
private struct FCMMessage: Encodable {
    struct Notification: Encodable {
        var title: String?
        var body: String
    }

    struct Android: Encodable {
        var priority: String
    }

    var android: Android?
    var notification: Notification?
    var data: [String: String]?
}

private struct WebPushPayload: Encodable {
    var title: String?
    var body: String
    var data: [String: String]?
}
