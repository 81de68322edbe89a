import Foundation
import HeraldCore
import HeraldHubWire
import HeraldPush
import NIOCore
import Testing

@testable import HeraldHub

/// A template compiled once per notification renders each device's notification directly,
/// byte for byte and outcome for outcome what rendering the body and headers to text and
/// reading them as a hub native send made.
@Suite struct TemplateRenderingTests {
    /// One device's rendering: the outcome, as bytes and headers to compare.
    enum Rendered: Equatable, CustomStringConvertible {
        case bytes(String, [String])
        case fcm(JSONValue)
        case refused(HeraldError.Code)

        init(_ result: () throws(HeraldError) -> PushNotification) {
            do {
                let notification = try result()
                switch notification.body {
                case .bytes(let buffer):
                    self = .bytes(String(buffer: buffer), notification.headers.map { "\($0.name): \($0.value)" })
                case .fcmMessage(let message):
                    self = .fcm(message)
                }
            } catch {
                self = .refused(error.code)
            }
        }

        var description: String {
            switch self {
            case .bytes(let body, let headers): "\(body) \(headers)"
            case .fcm(let message): "fcm \(message)"
            case .refused(let code): "refused \(code)"
            }
        }
    }

    static func rendered(
        _ template: RegistrationTemplate,
        platform: Platform,
        legacyGCM: Bool = false,
        send: TemplateSend,
        pushVariables: [String: String] = [:]
    ) -> Rendered {
        var selection = Selection()
        let compiled = selection.compiled(template, platform: platform, legacyGCM: legacyGCM, properties: TemplateProperties(send))
        return Rendered { () throws(HeraldError) in try compiled.notification(pushVariables: pushVariables) }
    }

    @Test func devicesWithoutPushVariablesShareOneRenderingAndTheOthersGetTheirOwn() throws {
        let template = RegistrationTemplate(body: #"{"aps":{"alert":"$(message) $(name)"}}"#)
        var selection = Selection()
        let compiled = selection.compiled(
            template, platform: .apns, legacyGCM: false, properties: TemplateProperties(TemplateSend(properties: ["message": "hi"])))
        func body(_ notification: PushNotification) -> ByteBuffer {
            guard case .bytes(let buffer) = notification.body else { return ByteBuffer() }
            return buffer
        }
        let first = body(try compiled.notification(pushVariables: [:]))
        let second = body(try compiled.notification(pushVariables: [:]))
        #expect(String(buffer: first) == #"{"aps":{"alert":"hi "}}"#)
        // One buffer, made once: the same storage.
        #expect(first.withUnsafeReadableBytes { $0.baseAddress } == second.withUnsafeReadableBytes { $0.baseAddress })
        let ada = body(try compiled.notification(pushVariables: ["name": "Ada"]))
        #expect(String(buffer: ada) == #"{"aps":{"alert":"hi Ada"}}"#)
        #expect(String(buffer: body(try compiled.notification(pushVariables: [:]))) == #"{"aps":{"alert":"hi "}}"#)
    }

    /// How a device's notification was made before templates were compiled per notification:
    /// the body and header values rendered to text with the properties merged over the push
    /// variables, then read as a hub native send.
    static func renderedAsNativeSend(
        _ template: RegistrationTemplate,
        platform: Platform,
        legacyGCM: Bool = false,
        send: TemplateSend,
        pushVariables: [String: String] = [:]
    ) -> Rendered {
        Rendered { () throws(HeraldError) in
            let overridden = Set(send.properties.keys.map { $0.lowercased() })
            var values = pushVariables.filter { !overridden.contains($0.key.lowercased()) }
            values.merge(send.properties) { _, send in send }
            let body = try NotificationTemplate(body: template.body).render(values)
            var headers: [PlatformPayload.Header] = []
            for header in template.headers {
                headers.append(.init(name: header.name, value: try NotificationTemplate.renderText(header.value, properties: values)))
            }
            if platform == .apns {
                if let expiry = template.expiry {
                    let rendered = try NotificationTemplate.renderText(expiry, properties: values)
                    if !rendered.trimmingCharacters(in: .whitespaces).isEmpty {
                        headers.append(.init(name: "ServiceBusNotification-Apns-Expiry", value: rendered))
                    }
                }
                if let priority = template.priority, !priority.isEmpty {
                    headers.append(.init(name: "X-Apns-Priority", value: priority))
                }
            }
            let payload = try PlatformPayload.hubNative(platform: platform, legacyGCM: legacyGCM, body: Data(body.utf8), headers: headers)
            do {
                return try HubEngine.prepare(payload)
            } catch {
                throw .badRequest("not a valid notification")
            }
        }
    }

    // MARK: Expected bytes

    @Test func anAPNsTemplateWithExpiryPriorityAndHeaders() {
        let template = RegistrationTemplate(
            body: ##"{"aps":{"alert":"$(greeting), $(name)!","badge":"#(count)"},"id":"%(id)"}"##,
            headers: [
                .init(name: "apns-collapse-id", value: "{'c-' + $(name)}"),
                .init(name: "APNs-Push-Type", value: "alert"),
                .init(name: "X-Other", value: "dropped"),
            ],
            expiry: "$(expiry)",
            priority: "5"
        )
        let send = TemplateSend(properties: ["Greeting": "Hi", "count": "7", "id": "a b"])
        let variables = ["NAME": "Ann \"A\"", "expiry": "2030-01-01T00:00:00Z", "greeting": "Yo"]
        let expected = Rendered.bytes(
            #"{"aps":{"alert":"Hi, Ann \"A\"!","badge":7},"id":"a%20b"}"#,
            ["apns-collapse-id: c-Ann \"A\"", "apns-push-type: alert", "apns-expiration: 1893456000", "apns-priority: 5"]
        )
        #expect(Self.rendered(template, platform: .apns, send: send, pushVariables: variables) == expected)
        #expect(Self.renderedAsNativeSend(template, platform: .apns, send: send, pushVariables: variables) == expected)

        // No expiry: none is sent; a count that is not a number stays a string.
        let later = Rendered.bytes(
            #"{"aps":{"alert":"Hi, !","badge":"many"},"id":""}"#,
            ["apns-collapse-id: c-", "apns-push-type: alert", "apns-priority: 5"]
        )
        let laterSend = TemplateSend(properties: ["greeting": "Hi", "count": "many"])
        #expect(Self.rendered(template, platform: .apns, send: laterSend) == later)
        #expect(Self.renderedAsNativeSend(template, platform: .apns, send: laterSend) == later)
    }

    @Test func anFCMv1Template() {
        let template = RegistrationTemplate(
            body: #"{"message":{"notification":{"title":"$(title)","body":".(text,10)"},"data":{"id":"$(id)"}}}"#,
            headers: [.init(name: "apns-priority", value: "10")]
        )
        let send = TemplateSend(properties: ["title": "News", "text": "a long story indeed", "id": "42"])
        let expected = Rendered.fcm(
            .object([
                ("data", .object([("id", .string("42"))])),
                ("notification", .object([("body", .string("a long ...")), ("title", .string("News"))])),
            ])
        )
        #expect(Self.rendered(template, platform: .fcm, send: send) == expected)
        #expect(Self.renderedAsNativeSend(template, platform: .fcm, send: send) == expected)
    }

    @Test func aLegacyGCMTemplate() {
        let template = RegistrationTemplate(
            body: ##"{"notification":{"title":"$(title)","icon":"bell"},"data":{"count":"#(count)","m":"$(m)"},"priority":"high","time_to_live":60}"##
        )
        let send = TemplateSend(properties: ["title": "T", "count": "3", "m": "x"])
        let expected = Rendered.fcm(
            .object([
                (
                    "android",
                    .object([
                        ("notification", .object([("icon", .string("bell"))])),
                        ("priority", .string("high")), ("ttl", .string("60s")),
                    ])
                ),
                ("data", .object([("count", .string("3")), ("m", .string("x"))])),
                ("notification", .object([("title", .string("T"))])),
            ])
        )
        #expect(Self.rendered(template, platform: .fcm, legacyGCM: true, send: send) == expected)
        #expect(Self.renderedAsNativeSend(template, platform: .fcm, legacyGCM: true, send: send) == expected)
    }

    @Test func aWNSToastWithHeaders() {
        let template = RegistrationTemplate(
            body: #"<toast launch="$(launch)"><visual><binding template="ToastGeneric"><text>$(m)</text></binding></visual></toast>"#,
            headers: [
                .init(name: "X-WNS-Type", value: "wns/toast"),
                .init(name: "X-WNS-Tag", value: "$(tag)"),
                .init(name: "X-WNS-TTL", value: "60"),
                .init(name: "Content-Type", value: "dropped"),
            ]
        )
        let send = TemplateSend(properties: ["launch": "a\"b", "m": "x<y & z", "tag": "t\n1"])
        let expected = Rendered.bytes(
            #"<toast launch="a&quot;b"><visual><binding template="ToastGeneric"><text>x&lt;y &amp; z</text></binding></visual></toast>"#,
            ["X-WNS-Type: wns/toast", "X-WNS-Tag: t 1", "X-WNS-TTL: 60"]
        )
        #expect(Self.rendered(template, platform: .wns, send: send) == expected)
        #expect(Self.renderedAsNativeSend(template, platform: .wns, send: send) == expected)
    }

    // MARK: The same as a native send

    static let cases: [(String, RegistrationTemplate, Platform, Bool)] = [
        ("apns plain", RegistrationTemplate(body: #"{"aps":{"alert":"$(m)"}}"#), .apns, false),
        ("apns array", RegistrationTemplate(body: #"["$(m)"]"#), .apns, false),
        ("apns xml", RegistrationTemplate(body: "<toast>$(m)</toast>"), .apns, false),
        ("apns bad body", RegistrationTemplate(body: #"{"aps":$(m)}"#), .apns, false),
        (
            "apns headers",
            RegistrationTemplate(
                body: #"{"aps":{"alert":"$(m)"}}"#,
                headers: [
                    .init(name: "apns-expiration", value: "$(when)"),
                    .init(name: "apns-priority", value: "$(p)"),
                    .init(name: "ServiceBusNotification-Apns-Expiry", value: "bad"),
                    .init(name: "X-Apns-Priority", value: "7"),
                ],
                expiry: "also bad",
                priority: "3"
            ),
            .apns, false
        ),
        (
            "apns legacy headers",
            RegistrationTemplate(
                body: #"{"aps":{"alert":"$(m)"}}"#,
                headers: [
                    .init(name: "ServiceBusNotification-Apns-Expiry", value: "$(when)"),
                    .init(name: "X-Apns-Priority", value: "$(p)"),
                    .init(name: "apns-topic", value: "com.example.$(m)"),
                ],
                expiry: "  "
            ),
            .apns, false
        ),
        (
            "apns expiry over header",
            RegistrationTemplate(
                body: #"{"aps":{"alert":"$(m)"}}"#,
                headers: [.init(name: "ServiceBusNotification-Apns-Expiry", value: "not a date")],
                expiry: "$(when)",
                priority: "$(p)"
            ),
            .apns, false
        ),
        (
            "apns constant expiry",
            RegistrationTemplate(body: #"{"aps":{"alert":"$(m)"}}"#, expiry: "07/16/2030 07:20:30 PM", priority: "10"),
            .apns, false
        ),
        (
            "apns bad header",
            RegistrationTemplate(body: #"{"aps":{}}"#, headers: [.init(name: "apns-collapse-id", value: "a\u{1}$(m)")]),
            .apns, false
        ),
        (
            "apns bad header expression",
            RegistrationTemplate(body: #"{"aps":{}}"#, headers: [.init(name: "X-Dropped", value: "$(")]),
            .apns, false
        ),
        (
            "apns voip",
            RegistrationTemplate(
                body: #"{"aps":{},"pad":"$(big)"}"#, headers: [.init(name: "apns-push-type", value: " VoIP ")]
            ),
            .apns, false
        ),
        (
            "apns voip rendered",
            RegistrationTemplate(
                body: #"{"aps":{},"pad":"$(big)"}"#, headers: [.init(name: "apns-push-type", value: "$(type)")]
            ),
            .apns, false
        ),
        ("fcm v1", RegistrationTemplate(body: ##"{"message":{"data":{"m":"$(m)","n":"#(n)"}}}"##), .fcm, false),
        ("fcm bare message", RegistrationTemplate(body: #"{"notification":{"title":"$(m)"}}"#), .fcm, false),
        ("fcm token", RegistrationTemplate(body: #"{"message":{"token":"$(m)"}}"#), .fcm, false),
        ("fcm big", RegistrationTemplate(body: #"{"message":{"data":{"m":"$(big)"}}}"#), .fcm, false),
        (
            "gcm",
            RegistrationTemplate(
                body: ##"{"data":{"m":"$(m)","n":"#(n)"},"priority":"$(p)","time_to_live":"#(n)","collapse_key":"k"}"##
            ),
            .fcm, true
        ),
        ("gcm xml", RegistrationTemplate(body: "<a>$(m)</a>"), .fcm, true),
        (
            "gcm reordered",
            RegistrationTemplate(
                body: #"{"notification":{"title":"$(m)","sound":"$(p)","android_channel_id":"c"},"restricted_package_name":"x","priority":"normal"}"#
            ),
            .fcm, true
        ),
        (
            "wns toast",
            RegistrationTemplate(
                body: #"<?xml version="1.0"?><!-- $(m) --><toast><visual><binding template="ToastGeneric"><text>$(m)</text></binding></visual></toast>"#,
                headers: [.init(name: "x-wns-tag", value: "$(m)")]
            ),
            .wns, false
        ),
        ("wns mismatch", RegistrationTemplate(body: "<tile>$(m)</tile>", headers: [.init(name: "X-WNS-Type", value: "wns/toast")]), .wns, false),
        ("wns unknown root", RegistrationTemplate(body: "<notification>$(m)</notification>"), .wns, false),
        ("wns raw", RegistrationTemplate(body: #"{"m":"$(m)"}"#, headers: [.init(name: "X-WNS-Type", value: "WNS/Raw ")]), .wns, false),
        ("wns no type json", RegistrationTemplate(body: #"{"m":"$(m)"}"#), .wns, false),
        (
            "wns rendered type",
            RegistrationTemplate(
                body: "<badge value=\"$(m)\"/>",
                headers: [.init(name: "X-WNS-Type", value: "wns/tile"), .init(name: "X-WNS-Type", value: "$(type)")]
            ),
            .wns, false
        ),
        ("wns big", RegistrationTemplate(body: "<toast>$(big)</toast>"), .wns, false),
        (
            "webpush",
            RegistrationTemplate(
                body: #"{"title":"$(m)"}"#,
                headers: [.init(name: "ttl", value: "60"), .init(name: "URGENCY", value: "$(p)"), .init(name: "Other", value: "x")]
            ),
            .webpush, false
        ),
        ("webpush big", RegistrationTemplate(body: #"{"title":"$(big)"}"#), .webpush, false),
    ]

    static let sends: [(TemplateSend, [String: String])] = [
        (TemplateSend(properties: ["m": "hello"]), [:]),
        (TemplateSend(properties: ["M": "a\"b\\c\n", "n": "12.5", "p": "5", "when": "2030-07-16T19:20:30+02:00"]), ["m": "device", "Type": "voip"]),
        (TemplateSend(properties: ["m": "x", "n": "not a number", "p": "high", "type": "wns/badge"]), ["P": "10", "when": "1900000000"]),
        (TemplateSend(properties: ["m": "y", "n": "-0", "p": "normal", "when": " "]), ["M": "z", "big": String(repeating: "b", count: 4500)]),
        (TemplateSend(properties: ["big": String(repeating: "é", count: 2300), "type": "VOIP", "p": "1", "n": "60"]), ["m": "<&>"]),
        (TemplateSend(properties: ["Name": "first", "name": "second"]), ["NAME": "device", "m": "\u{212A}"]),
    ]

    @Test(arguments: cases.indices)
    func aTemplateRendersAsItsNativeSendDid(_ index: Int) {
        let (name, template, platform, legacyGCM) = Self.cases[index]
        for (send, variables) in Self.sends {
            let rendered = Self.rendered(template, platform: platform, legacyGCM: legacyGCM, send: send, pushVariables: variables)
            let native = Self.renderedAsNativeSend(template, platform: platform, legacyGCM: legacyGCM, send: send, pushVariables: variables)
            #expect(rendered == native, "\(name) with \(send.properties.keys.sorted()) over \(variables.keys.sorted())")
        }
    }

    @Test func propertiesComeFromTheSendThenTheDeviceWhateverTheirCase() {
        let properties = TemplateProperties(TemplateSend(properties: ["NAME": "send", "Name": "first", "\u{212A}ey": "kelvin"]))
        let binding = properties.binding(["name", "key", "other"])
        #expect(binding.value(0, pushVariables: ["name": "device"]) == "send", "the send's, of its names the first in code-point order")
        #expect(binding.value(1, pushVariables: ["key": "device"]) == nil, "a send's property of that name, lowercased, hides the device's")
        #expect(binding.value(2, pushVariables: ["OTHER": "B", "Other": "A", "x": "y"]) == "B")
        #expect(binding.value(2, pushVariables: [:]) == nil)
    }

    @Test func aTemplateIsCompiledOncePerNotificationForEachPlatformAndHeaders() {
        var selection = Selection()
        let properties = TemplateProperties(TemplateSend(properties: [:]))
        let template = RegistrationTemplate(name: "a", body: #"{"aps":{"alert":"$(m)"}}"#)
        var renamed = template
        renamed.name = "b"
        let first = selection.compiled(template, platform: .apns, legacyGCM: false, properties: properties)
        #expect(selection.compiled(renamed, platform: .apns, legacyGCM: false, properties: properties) === first)
        #expect(selection.compiled(template, platform: .webpush, legacyGCM: false, properties: properties) !== first)
        for n in 0..<(Selection.compiledLimit + 1) {
            _ = selection.compiled(RegistrationTemplate(body: #"{"n":\#(n)}"#), platform: .apns, legacyGCM: false, properties: properties)
        }
        #expect(selection.compiled(template, platform: .apns, legacyGCM: false, properties: properties) !== first, "past the limit, kept templates are dropped")
    }
}
