import Foundation
import HeraldCore
import HeraldHubWire
import HeraldPush
import NIOCore
import Synchronization

/// A registration's template compiled for its platform and a send's properties, once per
/// notification: the body's program, the headers the platform keeps (their names mapped and
/// their values parsed), and whatever can be checked without rendering. Per device only the
/// rendered values are checked.
///
/// The notifications it makes are those ``PlatformPayload/hubNative(platform:legacyGCM:body:headers:)``
/// makes of the rendered body and headers, and it refuses what that refuses:
/// - APNs: rendering replaces values in JSON strings (and a number for `#(p)`), so whether the
///   body is a JSON object is decided once, on the body rendered without values. `apns-*`
///   headers are kept (names lowercased), `ServiceBusNotification-Apns-Expiry` and the
///   template's expiry become `apns-expiration`, `X-Apns-Priority` and its priority
///   `apns-priority`, unless an `apns-*` header gives them.
/// - FCM: the rendered body is parsed and checked per device, as a native send's.
/// - WNS: the root element comes before any value, so it is found once; `X-WNS-*` headers are
///   kept, `X-WNS-Type` checked against it.
/// - Web Push: `TTL`, `Urgency` and `Topic` are kept.
final class CompiledTemplate: Sendable {
    /// A header value, rendered per device unless it holds no expression (then it is checked
    /// once), and checked as a native send's header would be.
    struct Value: Sendable {
        enum Check: Sendable {
            /// No line break or other control character, in the header named so.
            case headerValue(String)
            /// An `apns-expiration` value (unix seconds or a date); `header` names a header whose value is
            /// checked as a header value first.
            case apnsExpiration(header: String?)
            /// An `apns-priority` value of the header named `header`, checked as a header
            /// value first when `isHeader`.
            case apnsPriority(header: String, isHeader: Bool)
            /// An `X-WNS-Type` value of the header named so.
            case wnsType(String)

            func apply(_ value: String) throws(HeraldError) -> String {
                switch self {
                case .headerValue(let name):
                    try PlatformPayload.checkHeaderValue(.init(name: name, value: value))
                    return value
                case .apnsExpiration(let header):
                    if let header { try PlatformPayload.checkHeaderValue(.init(name: header, value: value)) }
                    return try PlatformPayload.apnsExpiration(value)
                case .apnsPriority(let header, let isHeader):
                    if isHeader { try PlatformPayload.checkHeaderValue(.init(name: header, value: value)) }
                    return try PlatformPayload.apnsPriority(value, header: header)
                case .wnsType(let name):
                    try PlatformPayload.checkHeaderValue(.init(name: name, value: value))
                    return try PlatformPayload.wnsType(value)
                }
            }
        }

        /// The text, when it holds expressions.
        private let text: NotificationTemplate.Text?
        private let binding: PropertyBinding?
        let check: Check
        /// The text, when it holds no expression.
        let constant: String?
        /// The checked value, when the text holds no expression.
        let fixed: Result<String, HeraldError>?

        init(_ text: NotificationTemplate.Text, check: Check, properties: TemplateProperties) {
            self.check = check
            constant = text.constant
            if let constant {
                self.text = nil
                binding = nil
                fixed = Result { () throws(HeraldError) in try check.apply(constant) }
            } else {
                self.text = text
                binding = properties.binding(text.orderedPropertyNames)
                fixed = nil
            }
        }

        /// A value given as it is, without expressions.
        init(constant: String, check: Check) {
            text = nil
            binding = nil
            self.check = check
            self.constant = constant
            fixed = Result { () throws(HeraldError) in try check.apply(constant) }
        }

        /// The text rendered for a device, unchecked.
        func rendered(_ pushVariables: [String: String]) -> String {
            guard let text, let binding else { return constant ?? "" }
            return text.render { binding.value($0, pushVariables: pushVariables) }
        }

        /// The checked value for a device.
        func value(_ pushVariables: [String: String]) throws(HeraldError) -> String {
            if let fixed { return try fixed.get() }
            return try check.apply(rendered(pushVariables))
        }
    }

    /// A header sent under `name`.
    struct Header: Sendable {
        let name: String
        let value: Value
    }

    /// Where an APNs notification's `apns-expiration` comes from when no `apns-expiration`
    /// header gives it: the template's expiry when it renders to more than white space,
    /// otherwise the last `ServiceBusNotification-Apns-Expiry` header.
    struct APNsExpiry: Sendable {
        /// The template's expiry, when it holds expressions (a constant one is folded into
        /// `otherwise` or left out when blank).
        let expiry: Value?
        let otherwise: Value?
    }

    enum Rules: Sendable {
        case apns(
            headers: [Header], pushType: Int?, fixedVoIP: Bool, fixedLiveActivity: Bool, expiry: APNsExpiry?, priority: Value?
        )
        case fcm(legacyGCM: Bool)
        case wns(headers: [Header], types: [Value], fixedType: Result<String, HeraldError>?, root: String?)
        case webpush(headers: [Header])
    }

    /// The compiled template, or why no device gets a notification from it, when that is
    /// known before rendering: a body or a header value that does not compile, an APNs body
    /// that is not a JSON object.
    private let compiled: Result<Compiled, HeraldError>
    /// The notification of every device without push variables, made for the first of them:
    /// a rendering depends on the send and the device's push variables only, so these devices
    /// share one, as a native send's devices do.
    private let withoutVariables = Mutex<Result<PushNotification, HeraldError>?>(nil)

    private struct Compiled: Sendable {
        let body: NotificationTemplate
        let binding: PropertyBinding
        let rules: Rules
        /// The notification's id, which each rendering carries for receipts.
        let receiptID: ReceiptID?
    }

    /// Compiles `template` (whose `body` is compiled already) for `platform` and `properties`.
    init(
        _ template: RegistrationTemplate,
        body: Result<NotificationTemplate, HeraldError>,
        platform: Platform,
        legacyGCM: Bool,
        properties: TemplateProperties
    ) {
        compiled = Result { () throws(HeraldError) in
            let compiledBody = try body.get()
            var texts: [(name: String, text: NotificationTemplate.Text)] = []
            for header in template.headers { texts.append((header.name, try NotificationTemplate.Text(header.value))) }
            var expiry: NotificationTemplate.Text?
            if platform == .apns, let given = template.expiry { expiry = try NotificationTemplate.Text(given) }
            // The body without values: what every rendering has before its first value.
            var skeleton: [UInt8] = []
            compiledBody.render(into: &skeleton) { _ in nil }
            let rules: Rules
            switch platform {
            case .apns:
                guard case .object? = try? JSONValue(parsing: skeleton) else {
                    throw .badRequest("an APNs notification body must be a JSON object, such as {\"aps\":{\"alert\":\"Hello\"}}")
                }
                rules = CompiledTemplate.apnsRules(texts, expiry: expiry, priority: template.priority, properties: properties)
            case .fcm:
                rules = .fcm(legacyGCM: legacyGCM)
            case .wns:
                rules = CompiledTemplate.wnsRules(texts, root: PlatformPayload.rootElement(of: Data(skeleton)), properties: properties)
            case .webpush:
                rules = CompiledTemplate.webPushRules(texts, properties: properties)
            }
            return Compiled(
                body: compiledBody, binding: properties.binding(compiledBody.orderedPropertyNames), rules: rules,
                receiptID: properties.receiptID
            )
        }
    }

    private static func apnsRules(
        _ texts: [(name: String, text: NotificationTemplate.Text)],
        expiry: NotificationTemplate.Text?,
        priority: String?,
        properties: TemplateProperties
    ) -> Rules {
        var headers: [Header] = []
        var pushType: Int?
        var legacyExpiry: NotificationTemplate.Text?
        var legacyPriority: NotificationTemplate.Text?
        for (name, text) in texts {
            let lowercased = name.lowercased()
            if lowercased.hasPrefix("apns-") {
                let check: Value.Check =
                    switch lowercased {
                    case "apns-expiration": .apnsExpiration(header: name)
                    case "apns-priority": .apnsPriority(header: name, isHeader: true)
                    default: .headerValue(name)
                    }
                if lowercased == "apns-push-type" { pushType = headers.count }
                headers.append(Header(name: lowercased, value: Value(text, check: check, properties: properties)))
            } else if lowercased == "servicebusnotification-apns-expiry" {
                legacyExpiry = text
            } else if lowercased == "x-apns-priority" {
                legacyPriority = text
            }
        }
        var expiryRule: APNsExpiry?
        if !headers.contains(where: { $0.name == "apns-expiration" }) {
            let expiryCheck = Value.Check.apnsExpiration(header: nil)
            let header = legacyExpiry.map { Value($0, check: expiryCheck, properties: properties) }
            if let expiry, let constant = expiry.constant {
                let given = constant.trimmingSpaces().isEmpty ? header : Value(expiry, check: expiryCheck, properties: properties)
                expiryRule = given.map { APNsExpiry(expiry: nil, otherwise: $0) }
            } else if let expiry {
                expiryRule = APNsExpiry(expiry: Value(expiry, check: expiryCheck, properties: properties), otherwise: header)
            } else {
                expiryRule = header.map { APNsExpiry(expiry: nil, otherwise: $0) }
            }
        }
        var priorityRule: Value?
        if !headers.contains(where: { $0.name == "apns-priority" }) {
            let check = Value.Check.apnsPriority(header: "X-Apns-Priority", isHeader: false)
            if let priority, !priority.isEmpty {
                // The priority is used as it is: it holds no expressions.
                priorityRule = Value(constant: priority, check: check)
            } else if let legacyPriority {
                priorityRule = Value(legacyPriority, check: check, properties: properties)
            }
        }
        let fixedVoIP = pushType.flatMap { headers[$0].value.constant }.map(Self.isVoIP) ?? false
        let fixedLiveActivity = pushType.flatMap { headers[$0].value.constant }.map(Self.isLiveActivity) ?? false
        // A repeat of the notification replaces its first copy (a push type that varies per
        // device is taken as one that has a collapse id).
        if let id = properties.notificationID, !headers.contains(where: { $0.name == "apns-collapse-id" }),
            ReplacingCopies.takesCollapseID(apnsPushType: pushType.flatMap { headers[$0].value.constant }),
            let header = ReplacingCopies.header(for: id, on: .apns)
        {
            headers.append(Header(name: header.name, value: Value(constant: header.value, check: .headerValue(header.name))))
        }
        return .apns(
            headers: headers,
            pushType: pushType.flatMap { headers[$0].value.fixed == nil ? $0 : nil },
            fixedVoIP: fixedVoIP,
            fixedLiveActivity: fixedLiveActivity,
            expiry: expiryRule,
            priority: priorityRule
        )
    }

    private static func wnsRules(
        _ texts: [(name: String, text: NotificationTemplate.Text)],
        root: String?,
        properties: TemplateProperties
    ) -> Rules {
        var headers: [Header] = []
        var types: [Value] = []
        for (name, text) in texts {
            let lowercased = name.lowercased()
            guard lowercased.hasPrefix("x-wns-") else { continue }
            if lowercased == "x-wns-type" {
                types.append(Value(text, check: .wnsType(name), properties: properties))
            } else {
                headers.append(Header(name: name, value: Value(text, check: .headerValue(name), properties: properties)))
            }
        }
        var fixedType: Result<String, HeraldError>?
        if types.allSatisfy({ $0.fixed != nil }) {
            fixedType = Result { () throws(HeraldError) in
                var type: String?
                for value in types { type = try value.value([:]) }
                return try PlatformPayload.wnsType(type, root: root)
            }
        }
        return .wns(headers: headers, types: types, fixedType: fixedType, root: root)
    }

    private static func webPushRules(_ texts: [(name: String, text: NotificationTemplate.Text)], properties: TemplateProperties) -> Rules {
        var headers: [Header] = []
        for (name, text) in texts {
            let canonical: String
            switch name.lowercased() {
            case "ttl": canonical = "TTL"
            case "urgency": canonical = "Urgency"
            case "topic": canonical = "Topic"
            default: continue
            }
            headers.append(Header(name: canonical, value: Value(text, check: .headerValue(name), properties: properties)))
        }
        if let id = properties.notificationID, !headers.contains(where: { $0.name == "Topic" }),
            let header = ReplacingCopies.header(for: id, on: .webpush)
        {
            headers.append(Header(name: header.name, value: Value(constant: header.value, check: .headerValue(header.name))))
        }
        return .webpush(headers: headers)
    }

    private static func isVoIP(_ pushType: String) -> Bool {
        pushType.lowercased().trimmingSpaces() == "voip"
    }

    private static func isLiveActivity(_ pushType: String) -> Bool {
        pushType.lowercased().trimmingSpaces() == "liveactivity"
    }

    /// The notification of a device with `pushVariables`.
    ///
    /// - Throws: `400` when the rendering is not a valid notification of the platform, `413`
    ///   when it is larger than the platform accepts (only once it is valid otherwise).
    func notification(pushVariables: [String: String]) throws(HeraldError) -> PushNotification {
        guard pushVariables.isEmpty else { return try render(pushVariables: pushVariables) }
        if let made = withoutVariables.withLock({ $0 }) { return try made.get() }
        let made = Result { () throws(HeraldError) in try render(pushVariables: [:]) }
        withoutVariables.withLock { $0 = made }
        return try made.get()
    }

    private func render(pushVariables: [String: String]) throws(HeraldError) -> PushNotification {
        let compiled = try compiled.get()
        var bytes: [UInt8] = []
        compiled.body.render(into: &bytes) { compiled.binding.value($0, pushVariables: pushVariables) }
        switch compiled.rules {
        case .apns(let rules, let pushType, let fixedVoIP, let fixedLiveActivity, let expiry, let priority):
            var headers: [(name: String, value: String)] = []
            let count = rules.count + (expiry == nil ? 0 : 1) + (priority == nil ? 0 : 1)
            if count > 0 { headers.reserveCapacity(count) }
            var isVoIP = fixedVoIP
            var isLiveActivity = fixedLiveActivity
            for (index, header) in rules.enumerated() {
                let value = try header.value.value(pushVariables)
                if index == pushType {
                    isVoIP = Self.isVoIP(value)
                    isLiveActivity = Self.isLiveActivity(value)
                }
                headers.append((header.name, value))
            }
            if let expiry {
                var value: String?
                if let given = expiry.expiry {
                    let rendered = given.rendered(pushVariables)
                    if !rendered.trimmingSpaces().isEmpty { value = try given.check.apply(rendered) }
                }
                if value == nil, let otherwise = expiry.otherwise { value = try otherwise.value(pushVariables) }
                if let value { headers.append(("apns-expiration", value)) }
            }
            if let priority { headers.append(("apns-priority", try priority.value(pushVariables))) }
            try PayloadLimits.checkAPNs(byteCount: bytes.count, voip: isVoIP)
            if isLiveActivity {
                // A Live Activity update is checked as a native one is: a rendering that
                // ActivityKit would drop is the device's refusal, named.
                try PlatformPayload(
                    platform: .apns, body: Data(bytes), headers: headers.map { PlatformPayload.Header(name: $0.name, value: $0.value) }
                ).checkLiveActivity()
            }
            // The id goes into the rendered bytes before they become the body: one buffer per device.
            let carrying = isLiveActivity ? nil : compiled.receiptID?.inserted(into: bytes, limit: isVoIP ? PayloadLimits.apnsVoIP : PayloadLimits.apns)
            return PushNotification(body: .bytes(ByteBuffer(bytes: carrying ?? bytes)), headers: headers)
        case .fcm(let legacyGCM):
            let message = try PlatformPayload.hubNativeFCMMessage(legacyGCM: legacyGCM, body: Data(bytes))
            return PushNotification(body: .fcmMessage(compiled.receiptID?.inserted(into: message, byteCount: bytes.count) ?? message))
        case .wns(let rules, let types, let fixedType, let root):
            let type: String
            if let fixedType {
                type = try fixedType.get()
            } else {
                var declared: String?
                for value in types { declared = try value.value(pushVariables) }
                type = try PlatformPayload.wnsType(declared, root: root)
            }
            var headers: [(name: String, value: String)] = [("X-WNS-Type", type)]
            for header in rules { headers.append((header.name, try header.value.value(pushVariables))) }
            try PayloadLimits.check(byteCount: bytes.count, for: .wns)
            return PushNotification(body: .bytes(ByteBuffer(bytes: bytes)), headers: headers)
        case .webpush(let rules):
            var headers: [(name: String, value: String)] = []
            for header in rules { headers.append((header.name, try header.value.value(pushVariables))) }
            try PayloadLimits.check(byteCount: bytes.count, for: .webpush)
            let carrying = compiled.receiptID?.inserted(into: bytes, limit: PayloadLimits.webPushPlaintext)
            return PushNotification(body: .bytes(ByteBuffer(bytes: carrying ?? bytes)), headers: headers)
        }
    }
}
