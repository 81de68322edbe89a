import Foundation
import HeraldCore
import HeraldPush
import HeraldStore

/// How one claimed notification is delivered: whom it reaches and what each device gets.
/// Built once per notification; ``step(for:providers:selection:)`` runs once per device, in
/// the fan-out loop, so it does nothing costly for native sends.
struct DeliveryPlan: Sendable {
    enum Mode: Sendable {
        /// To native registrations: one notification per platform, shared by every device.
        case native([Platform: PushNotification])
        /// To template registrations, rendered per device.
        case template(TemplateProperties)
        /// To the given devices; no registration is read.
        case direct(Platform, PushNotification, [DirectTarget])
    }

    let expression: TagExpression?
    /// The platforms to read registrations of; `nil` for all.
    let platforms: Set<Platform>?
    /// The kind of registrations to read: native for native sends, template for template
    /// sends (`nil` for direct sends, which read none).
    let kind: RegistrationKind?
    /// The APNs handles a native send reaches (``HandleKind/init(reachedBy:)``): an alert the
    /// apps on devices, a Live Activity update or end activities' update tokens, a start the
    /// push-to-start tokens of its activity type. Other platforms' handles are all devices'.
    let apnsHandles: HandleKind
    let mode: Mode

    /// The plan of a stored notification, whose tag expression is parsed again.
    ///
    /// - Throws: when the stored notification cannot be delivered (a tag expression or a
    ///   payload that no longer parses, a direct send without its payload).
    init(_ record: NotificationRecord) throws {
        try self.init(record, expression: record.tagExpression.map { try TagExpression(parsing: $0) })
    }

    /// The plan of a notification whose tag expression, `expression`, is parsed already.
    init(_ record: NotificationRecord, expression: TagExpression?) throws {
        self.expression = expression
        // The whole notification's id (a partition's own differs), which repeats share.
        let id = record.partOf ?? record.id
        let receiptID = ReceiptID(id)
        if let targets = record.directTargets {
            guard record.payloads.count == 1, let payload = record.payloads.first else {
                throw HeraldError.badRequest("a direct send has exactly one payload")
            }
            platforms = [payload.platform]
            kind = nil
            apnsHandles = .device
            let notification = try HubEngine.prepare(payload).replacingCopies(of: id, on: payload.platform)
                .carryingReceiptID(receiptID, on: payload.platform, byteCount: payload.body.count)
            mode = .direct(payload.platform, notification.encodedOnceForEveryDevice(), targets)
        } else if let send = record.template {
            platforms = nil
            kind = .template
            apnsHandles = .device
            mode = .template(TemplateProperties(send, notificationID: id, receiptID: receiptID))
        } else {
            var notifications = try HubEngine.prepare(record.payloads)
            for payload in record.payloads {
                guard let notification = notifications[payload.platform] else { continue }
                notifications[payload.platform] = notification.replacingCopies(of: id, on: payload.platform)
                    .carryingReceiptID(receiptID, on: payload.platform, byteCount: payload.body.count)
                    .encodedOnceForEveryDevice()
            }
            platforms = Set(notifications.keys)
            kind = .native
            apnsHandles = record.payloads.first { $0.platform == .apns }.map(HandleKind.init(reachedBy:)) ?? .device
            mode = .native(notifications)
        }
    }

    /// What one device gets: nothing (not a target of this notification), an outcome decided
    /// here (no provider, a duplicate), or a send.
    ///
    /// Native sends reach native registrations only, once per handle, and only handles of the
    /// kind they address (``apnsHandles``): an alert is not sent to a Live Activity's token,
    /// nor an activity's update to a device's. Template sends reach
    /// template registrations only (of the named template, when the send names one), once per
    /// handle and template name: one notification per matching template, as the established
    /// hub does. A direct send reaches its devices, once per handle.
    func step(
        for device: DeliveryDevice,
        providers: [Platform: any PushProvider],
        selection: inout Selection
    ) -> DeliveryStep {
        switch (mode, device) {
        case (.native(let notifications), .registration(let registration)):
            let platform = registration.platform
            guard registration.template == nil, let notification = notifications[platform] else { return .ignore }
            guard registration.handleKind == (platform == .apns ? apnsHandles : .device) else { return .ignore }
            guard let provider = providers[platform] else { return .outcome(platform, .noProvider) }
            // Two registrations of one handle are one device: send once.
            guard selection.firstTime(registration.handle) else { return .outcome(platform, .skipped) }
            let target = PushTarget(handle: registration.handle, webPushKeys: registration.webPushKeys)
            return .send(platform, provider, target, .ready(notification))
        case (.template(let properties), .registration(let registration)):
            let platform = registration.platform
            guard let template = registration.template else { return .ignore }
            if let wanted = properties.templateName, template.name != wanted { return .ignore }
            guard let provider = providers[platform] else { return .outcome(platform, .noProvider) }
            guard selection.firstTime(registration.handle, template: template.name ?? "") else { return .outcome(platform, .skipped) }
            let rendering = TemplateRendering(
                compiled: selection.compiled(template, platform: platform, legacyGCM: registration.legacyGCM, properties: properties),
                pushVariables: registration.pushVariables
            )
            let target = PushTarget(handle: registration.handle, webPushKeys: registration.webPushKeys)
            return .send(platform, provider, target, .template(rendering))
        case (.direct(let platform, let notification, _), .direct(let device, _)):
            guard device.platform == platform else { return .ignore }
            guard let provider = providers[platform] else { return .outcome(platform, .noProvider) }
            guard selection.firstTime(device.handle) else { return .outcome(platform, .skipped) }
            return .send(platform, provider, PushTarget(handle: device.handle, webPushKeys: device.webPushKeys), .ready(notification))
        case (.native, .direct), (.template, .direct), (.direct, .registration):
            return .ignore
        }
    }

    /// The devices of the page after `cursor` (`nil`: the first), at most `pageSize`: the
    /// registrations this plan targets, in the order of their ids up to and including
    /// `upperBound` (a partition's last id; `nil` for no end), read from `store`; or a direct
    /// send's devices, whose cursor is the number of devices done (a direct send has no
    /// partitions).
    func page(after cursor: String?, through upperBound: String? = nil, pageSize: Int, store: any HeraldStore) async throws -> [DeliveryDevice] {
        if case .direct(_, _, let targets) = mode {
            let start = min(max(0, cursor.flatMap { Int($0) } ?? 0), targets.count)
            let end = min(start + pageSize, targets.count)
            return (start..<end).map { .direct(targets[$0], position: $0) }
        }
        return try await store.registrations(
            matching: expression, platforms: platforms, kind: kind, after: cursor, through: upperBound, limit: pageSize
        ).map { .registration($0) }
    }

    /// About how many devices the plan reaches, for the pace of a spread notification: a
    /// direct send's devices, or the registrations on its platforms that its tag expression
    /// matches, of the handles' kind a native send reaches (template and native ones alike,
    /// expired ones included: a spread ends early rather than late).
    func deviceCount(store: any HeraldStore) async throws -> Int {
        if case .direct(_, _, let targets) = mode { return targets.count }
        var count = 0
        for platform in platforms.map({ $0.map(Optional.some) }) ?? [nil] {
            var query = RegistrationQuery(expression: expression, platform: platform)
            if kind == .native { query.handleKind = platform == .apns ? apnsHandles : .device }
            count += try await store.countRegistrations(query)
        }
        return count
    }

    /// Whether a large notification of this plan may be split into partitions: a send to
    /// registrations, which partitions cut by registration id.
    var isPartitionable: Bool { kind != nil }
}

/// One device of a delivery run: a registration the notification targets, or a device of a
/// direct send (at its position among the send's devices).
enum DeliveryDevice: Sendable {
    case registration(Registration)
    case direct(DirectTarget, position: Int)

    /// The registration that holds the device; `nil` for a direct send's device.
    var registrationID: String? {
        if case .registration(let registration) = self { registration.id } else { nil }
    }

    /// Where delivery resumes after this device: its registration id, or for a direct send
    /// the number of devices done.
    var cursor: String {
        switch self {
        case .registration(let registration): registration.id
        case .direct(_, let position): String(position + 1)
        }
    }
}

/// What one device gets, decided in the fan-out loop.
enum DeliveryStep {
    enum Delivery: Sendable {
        /// The notification as it is, shared by every device.
        case ready(PushNotification)
        /// Rendered from the device's template when it is sent.
        case template(TemplateRendering)
    }

    /// Not a target of this notification: not counted.
    case ignore
    /// Counted without a send.
    case outcome(Platform, DeliveryOutcome)
    case send(Platform, any PushProvider, PushTarget, Delivery)
}

/// What the fan-out of one notification has seen so far: the devices served (for
/// de-duplication) and the templates compiled (each distinct body once per notification, and
/// once per platform and set of headers, for the send's properties).
///
/// One selection serves one notification: its compiled templates hold that send's properties.
struct Selection {
    /// The compiled bodies and templates kept, each: a notification to devices with more
    /// distinct templates than that compiles some of them again, in memory that stays bounded.
    static let compiledLimit = 512

    /// What a template is compiled for: all of it but its name, the device's platform and
    /// whether it is legacy GCM.
    private struct TemplateKey: Hashable {
        var body: String
        var headers: [PlatformPayload.Header]
        var expiry: String?
        var priority: String?
        var platform: Platform
        var legacyGCM: Bool
    }

    /// 64-bit digests of the devices served, not the handles themselves: a broadcast to a
    /// million devices remembers them in about 16 MB instead of 160. Two handles with the
    /// same digest (odds about 1 in 30 million for a million devices) would send once.
    private var served = Set<Int>()
    private var bodies: [String: Result<NotificationTemplate, HeraldError>] = [:]
    private var templates: [TemplateKey: CompiledTemplate] = [:]
    /// The template compiled last: devices in a row often share one, and comparing costs
    /// less than hashing.
    private var last: (key: TemplateKey, compiled: CompiledTemplate)?

    /// Whether this device (and template) is served for the first time in this notification.
    mutating func firstTime(_ handle: String, template: String? = nil) -> Bool {
        var hasher = Hasher()
        hasher.combine(handle)
        hasher.combine(template)
        return served.insert(hasher.finalize()).inserted
    }

    /// `template` compiled for a device of `platform` (`legacyGCM`) and the send's
    /// `properties`: once per notification, unless more than ``compiledLimit`` distinct
    /// templates come first (the kept ones are then dropped, and compiled again when needed).
    mutating func compiled(
        _ template: RegistrationTemplate,
        platform: Platform,
        legacyGCM: Bool,
        properties: TemplateProperties
    ) -> CompiledTemplate {
        let key = TemplateKey(
            body: template.body, headers: template.headers, expiry: template.expiry, priority: template.priority,
            platform: platform, legacyGCM: legacyGCM
        )
        if let last, last.key == key { return last.compiled }
        let compiled: CompiledTemplate
        if let kept = templates[key] {
            compiled = kept
        } else {
            if templates.count >= Self.compiledLimit { templates.removeAll(keepingCapacity: true) }
            compiled = CompiledTemplate(
                template, body: compiledBody(template.body), platform: platform, legacyGCM: legacyGCM, properties: properties
            )
            templates[key] = compiled
        }
        last = (key, compiled)
        return compiled
    }

    /// A template body compiled, shared by the templates that differ only in their headers
    /// or platform.
    private mutating func compiledBody(_ body: String) -> Result<NotificationTemplate, HeraldError> {
        if let compiled = bodies[body] { return compiled }
        if bodies.count >= Self.compiledLimit { bodies.removeAll(keepingCapacity: true) }
        let compiled = Result { () throws(HeraldError) in try NotificationTemplate(body: body) }
        bodies[body] = compiled
        return compiled
    }
}
