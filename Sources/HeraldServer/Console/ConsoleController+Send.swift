import Foundation
import HeraldCore
import HeraldHub
import HeraldHubWire
import HeraldStore
import Hummingbird
import Logging

/// Test send: a payload for one platform to at most 10 devices (those a tag expression
/// targets, or one device), sent at once with each device's outcome shown, as the cloud
/// hub's portal does; or a send to every matching device through the queue, now or later,
/// after a confirmation that shows how many devices match.
extension ConsoleController {
    /// A payload to start from, per platform.
    static let sampleTemplates: [Platform: String] = [
        .apns: #"{"aps":{"alert":{"title":"Hello","body":"A test from the Herald console"}}}"#,
        .fcm: #"{"message":{"notification":{"title":"Hello","body":"A test from the Herald console"}}}"#,
        .wns: #"<toast><visual><binding template="ToastGeneric"><text>Hello</text><text>A test from the Herald console</text></binding></visual></toast>"#,
        .webpush: #"{"title":"Hello","body":"A test from the Herald console"}"#,
    ]

    /// What the platform menu offers: each push service, and APNs' Live Activity pushes
    /// (`apns-push-type: liveactivity`, to activities' update or push-to-start tokens).
    struct SendKind {
        var value: String
        var platform: Platform
        var liveActivity: Bool

        static let all: [SendKind] =
            Platform.allCases.map { SendKind(value: $0.rawValue, platform: $0, liveActivity: false) }
            + [SendKind(value: "apns-liveactivity", platform: .apns, liveActivity: true)]

        /// The kind a form names; `400` for one the menu does not offer.
        init(parsing value: String) throws {
            if let kind = Self.all.first(where: { $0.value == value }) {
                self = kind
            } else {
                self.init(value: value, platform: try Platform(parsing: value), liveActivity: false)
            }
        }

        private init(value: String, platform: Platform, liveActivity: Bool) {
            self.value = value
            self.platform = platform
            self.liveActivity = liveActivity
        }

        var label: String { liveActivity ? "apns: Live Activity" : platform.rawValue }

        /// A payload to start from.
        var sample: String {
            liveActivity ? ConsoleController.sampleBroadcast() : ConsoleController.sampleTemplates[platform] ?? ""
        }

        /// The payload typed, as the hub API would take it; `400` with the reason otherwise.
        func payload(_ text: String) throws -> PlatformPayload {
            var payload = try ConsoleController.payload(platform: platform, text: text)
            if liveActivity { payload.headers.append(.init(name: "apns-push-type", value: "liveactivity")) }
            return payload
        }
    }

    /// When a full send may be scheduled: now, or after one of these.
    static let delays: [(value: String, label: String, seconds: Int)] = [
        ("", "Now", 0), ("300", "In 5 minutes", 300), ("3600", "In an hour", 3600), ("86400", "In a day", 86_400),
    ]

    func addSendRoutes(to group: RouterGroup<AppRequestContext>) {
        group.get("hubs/:hub/send", use: sendPage)
        group.post("hubs/:hub/send", use: send)
    }

    private func sendValues(_ fields: [String: String]) -> [String: Any] {
        let chosen = (try? SendKind(parsing: fields["platform"] ?? "")) ?? SendKind.all[0]
        var values: [String: Any] = [
            "platforms": SendKind.all.map { kind -> [String: Any] in
                [
                    "value": kind.value, "label": kind.label,
                    "template": kind.sample,
                    "limit": PayloadLimits.limit(for: kind.platform),
                    "kind": kind.platform == .wns ? "xml" : "json",
                    "selected": kind.value == chosen.value,
                ]
            },
            "delays": Self.delays.map { ["value": $0.value, "label": $0.label, "selected": fields["delay"] == $0.value] },
            "expression": fields["expression"] ?? "",
            "payload": fields["payload"] ?? chosen.sample,
        ]
        // Set only when there is one: an empty string still opens a Mustache section.
        if let device = fields["device"], !device.isEmpty { values["device"] = device }
        return values
    }

    @Sendable func sendPage(_ request: Request, context: AppRequestContext) async throws -> Response {
        let name = try context.parameters.require("hub")
        return await handling(context, hub: name) {
            _ = try await definitionAndEngine(name)
            let fields = ConsolePages.form(request.uri.query ?? "")
            return pages.page("send", title: "Test send", sendValues(fields), context: context, hub: name, nav: "Send")
        }
    }

    @Sendable func send(_ request: Request, context: AppRequestContext) async throws -> Response {
        let name = try context.parameters.require("hub")
        let fields = context.consoleForm
        var values = sendValues(fields)
        let render = { (status: HTTPResponse.Status, error: String?) in
            pages.page("send", title: "Test send", values, context: context, hub: name, nav: "Send", status: status, error: error)
        }
        do {
            let (_, engine) = try await definitionAndEngine(name)
            let kind = try SendKind(parsing: fields["platform"] ?? "")
            let platform = kind.platform
            let payload = try kind.payload(fields["payload"] ?? "")
            let device = fields["target"] == "device" ? fields["device"]?.trimmingSpaces() : nil
            let expressionText = fields["expression"]?.trimmingSpaces() ?? ""
            let tags = expressionText.isEmpty ? nil : try Self.parse(expressionText)
            if fields["mode"] == "full" {
                guard device == nil || device == "" else {
                    throw HeraldError.badRequest("a send to one device is a test send")
                }
                var query = RegistrationQuery()
                query.platform = platform
                query.expression = tags?.expression
                query.handleKind = HandleKind(reachedBy: payload)
                let matching = try await engine.countRegistrations(query)
                let delay = Self.delays.first { $0.value == (fields["delay"] ?? "") }?.seconds ?? 0
                guard let confirmed = fields["confirmed"], Int(confirmed) == matching else {
                    // First the count, then the send: a confirmation of a different count asks again.
                    values["confirm"] = true
                    values["matching"] = matching
                    values["matchingNoun"] = matching == 1 ? "device" : "devices"
                    values["platform"] = kind.value
                    values["platformLabel"] = kind.label
                    values["expressionLabel"] = tags?.text ?? "every device"
                    values["delay"] = fields["delay"] ?? ""
                    values["when"] = Self.delays.first { $0.seconds == delay }?.label.lowercased() ?? "now"
                    return render(.ok, fields["confirmed"] == nil ? nil : "The number of matching devices changed: check it again.")
                }
                let record = try await engine.send(
                    SendRequest(
                        target: .tags(tags), content: .native([payload]),
                        options: SendRequest.Options(scheduledAt: delay > 0 ? Date().addingTimeInterval(Double(delay)) : nil)
                    )
                ).record
                audit("sent a notification", context, hub: name, ["herald.notification.id": "\(record.id)", "herald.devices": "\(matching)"])
                return ConsolePages.redirect("/console/hubs/\(ConsolePages.segment(name))/notifications/\(ConsolePages.segment(record.id))?done=sent")
            }
            let target: SendRequest.Target =
                if let device, !device.isEmpty { .registration(device) } else { .test(device == nil ? tags : nil, limit: SendRequest.testLimit) }
            let result = try await engine.send(SendRequest(target: target, content: .native([payload])))
            audit("made a test send", context, hub: name, ["herald.notification.id": "\(result.record.id)", "herald.devices": "\(result.results.count)"])
            values["results"] = true
            values["notification"] = result.record.id
            values["rows"] = result.results.map { item -> [String: Any] in
                [
                    "hub": name, "id": item.registration.id, "path": ConsolePages.segment(item.registration.id),
                    "platform": item.registration.platform.rawValue,
                    "handle": item.registration.handle, "handleShort": ConsolePages.short(item.registration.handle),
                    "outcome": item.outcome.rawValue, "tone": ConsolePages.tone(item.outcome),
                ]
            }
            return render(.ok, nil)
        } catch {
            if let error = HeraldError(reporting: error) {
                return render(.init(code: error.code.httpStatus), error.message)
            }
            return pages.error(error, context: context, hub: name)
        }
    }

    /// The payload typed, as the hub API would take it for `platform`; `400` with the reason
    /// otherwise (not JSON or XML, too large).
    static func payload(platform: Platform, text: String) throws -> PlatformPayload {
        let body = Data(text.utf8)
        try PayloadLimits.check(byteCount: body.count, for: platform)
        if platform != .wns, (try? JSONSerialization.jsonObject(with: body)) == nil {
            throw HeraldError.badRequest("the payload is not valid JSON")
        }
        return try PlatformPayload.hubNative(platform: platform, legacyGCM: false, body: body, headers: [])
    }

    /// A tag expression typed into the console, parsed once for its count and its send; `400`
    /// with what is wrong otherwise.
    static func parse(_ expression: String) throws -> SendRequest.Tags {
        do throws(TagExpressionSyntaxError) {
            return try SendRequest.Tags(parsing: expression)
        } catch {
            throw HeraldError.badRequest("the tag expression is not valid: \(error.message)")
        }
    }
}
