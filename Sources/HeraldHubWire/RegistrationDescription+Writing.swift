import Foundation
import HeraldCore

extension RegistrationDescription {
    /// The `ExpirationTime` of a registration that does not expire, as the service writes it.
    static let noExpiry = "9999-12-31T23:59:59.999Z"

    /// One Atom entry. Inside a feed the entry inherits the Atom namespace; on its own it
    /// declares it (`declaresAtom`).
    static func writeEntry(
        _ r: Registration,
        hubURL: String,
        apiVersion: String,
        declaresAtom: Bool,
        into xml: inout WireXMLWriter
    ) {
        var attributes: [(name: String, value: String)] = [("a:etag", "W/\"\(r.version)\"")]
        if declaresAtom { attributes.append(("xmlns", HubWireNamespace.atom)) }
        attributes.append(("xmlns:a", HubWireNamespace.dataServicesMetadata))
        xml.start("entry", attributes: attributes)
        let url = "\(hubURL)/registrations/\(r.id)?api-version=\(apiVersion)"
        xml.element("id", url)
        xml.start("title", attributes: [("type", "text")])
        xml.text(r.id)
        xml.end()
        xml.element("published", XSDDateTime.string(from: r.createdAt))
        xml.element("updated", XSDDateTime.string(from: r.updatedAt))
        xml.empty("link", attributes: [("rel", "self"), ("href", url)])
        xml.start("content", attributes: [("type", "application/xml")])
        writeDescription(r, response: true, into: &xml)
        xml.end()
        xml.end()
    }

    /// The description element, its members in the order of the .NET SDK's data contracts:
    /// `ETag`, `ExpirationTime`, `RegistrationId`, `Tags`, `PushVariables`, the platform's
    /// fields, then the template's; then Herald's `PushChannelKind` and `ActivityType` for a
    /// Live Activity's or push-to-start token (``HandleKind``).
    ///
    /// A response (`response: true`) always carries `ETag`, `ExpirationTime` and
    /// `RegistrationId`, and an APNs template its `Expiry` (`i:nil` when unset) and
    /// `ApnsHeaders`, as the service does; a request carries only what is set.
    static func writeDescription(_ r: Registration, response: Bool, into xml: inout WireXMLWriter, bodyAsText: Bool = false) {
        let kind = Kind(r)
        xml.start(elementName(r), attributes: HubWireNamespace.descriptionAttributes)
        if response {
            xml.element("ETag", String(r.version))
            xml.element("ExpirationTime", expirationText(r.expiresAt))
            xml.element("RegistrationId", r.id)
        } else {
            if let expiresAt = r.expiresAt { xml.element("ExpirationTime", expirationText(expiresAt)) }
            if !r.id.isEmpty { xml.element("RegistrationId", r.id) }
        }
        if !r.tags.isEmpty { xml.element("Tags", r.tags.joined(separator: ",")) }
        if !r.pushVariables.isEmpty { xml.element("PushVariables", pushVariablesJSON(r.pushVariables)) }
        switch kind {
        case .apple:
            // The service keeps device tokens in upper case, and SDKs filter by that form.
            xml.element("DeviceToken", r.handle.uppercased())
        case .browser:
            xml.element("Endpoint", r.handle)
            xml.element("P256DH", r.webPushKeys?.p256dh ?? "")
            xml.element("Auth", r.webPushKeys?.auth ?? "")
        case .fcmV1, .gcm, .fcm, .windows:
            xml.element(kind.handleElement, r.handle)
        }
        if let template = r.template { writeTemplate(template, kind: kind, response: response, bodyAsText: bodyAsText, into: &xml) }
        // Herald's own, last (a client that does not know them reads the rest as before).
        xml.element("PushChannelKind", ifPresent: r.handleKind.wireName)
        xml.element("ActivityType", ifPresent: r.handleKind.activityType)
        xml.end()
    }

    /// `BodyTemplate` (CDATA), then per platform: APNs `Expiry`, `TemplateName`, `Priority`,
    /// `ApnsHeaders`; WNS `WnsHeaders` (always: the .NET SDK requires it), `TemplateName`;
    /// the others `TemplateName`.
    static func writeTemplate(
        _ template: RegistrationTemplate,
        kind: Kind,
        response: Bool,
        bodyAsText: Bool = false,
        into xml: inout WireXMLWriter
    ) {
        if bodyAsText {
            xml.element("BodyTemplate", template.body)
        } else {
            xml.cdataElement("BodyTemplate", template.body)
        }
        switch kind {
        case .apple:
            if let expiry = template.expiry {
                xml.element("Expiry", expiry)
            } else if response {
                xml.nilElement("Expiry")
            }
            xml.element("TemplateName", ifPresent: template.name)
            xml.element("Priority", ifPresent: template.priority)
            if response || !template.headers.isEmpty {
                writeHeaders(template.headers, list: "ApnsHeaders", item: "ApnsHeader", into: &xml)
            }
        case .windows:
            writeHeaders(template.headers, list: "WnsHeaders", item: "WnsHeader", into: &xml)
            xml.element("TemplateName", ifPresent: template.name)
        case .fcmV1, .gcm, .fcm, .browser:
            xml.element("TemplateName", ifPresent: template.name)
        }
    }

    static func writeHeaders(
        _ headers: [PlatformPayload.Header],
        list: String,
        item: String,
        into xml: inout WireXMLWriter
    ) {
        guard !headers.isEmpty else {
            xml.empty(list)
            return
        }
        xml.start(list)
        for header in headers {
            xml.start(item)
            xml.element("Header", header.name)
            xml.element("Value", header.value)
            xml.end()
        }
        xml.end()
    }

    static func expirationText(_ date: Date?) -> String {
        guard let date, date < noExpiryThreshold else { return noExpiry }
        return XSDDateTime.string(from: date, precision: .milliseconds)
    }

    /// `{"name":"value"}`, keys sorted so the same variables always read the same.
    static func pushVariablesJSON(_ variables: [String: String]) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(variables) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }
}
