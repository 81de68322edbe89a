import Foundation
import HeraldCore
import HeraldHubWire
import HeraldPush

/// A template send's properties, prepared once per notification.
struct TemplateProperties: Sendable {
    let values: [String: String]
    /// The names of `values`, lowercased: property names match case-insensitively.
    let lowercasedNames: Set<String>
    let templateName: String?

    init(_ send: TemplateSend) {
        values = send.properties
        lowercasedNames = Set(send.properties.keys.map { $0.lowercased() })
        templateName = send.templateName
    }

    /// The properties one device renders with: its push variables, overridden by the send's
    /// properties (names compared case-insensitively).
    func merged(over pushVariables: [String: String]) -> [String: String] {
        guard !pushVariables.isEmpty else { return values }
        var merged = pushVariables.filter { !lowercasedNames.contains($0.key.lowercased()) }
        merged.merge(values) { _, send in send }
        return merged
    }
}

/// One device's notification from its registration's template.
struct TemplateRendering: Sendable {
    /// The template body, compiled once per notification (or why it does not compile).
    let compiled: Result<NotificationTemplate, HeraldError>
    let template: RegistrationTemplate
    let pushVariables: [String: String]
    let properties: TemplateProperties
    let platform: Platform
    let legacyGCM: Bool

    /// Renders the body, the headers and (for APNs) the expiry and priority, and checks the
    /// result as a native send of the registration's platform would be checked.
    func notification() -> Result<PushNotification, HeraldError> {
        Result { () throws(HeraldError) in
            let values = properties.merged(over: pushVariables)
            let body = try compiled.get().render(values)
            var headers: [PlatformPayload.Header] = []
            headers.reserveCapacity(template.headers.count + 2)
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
            let payload = try PlatformPayload.hubNative(
                platform: platform, legacyGCM: legacyGCM, body: Data(body.utf8), headers: headers
            )
            do {
                return try HubEngine.prepare(payload)
            } catch {
                throw .badRequest("the rendered template is not a valid \(platform) notification")
            }
        }
    }
}
