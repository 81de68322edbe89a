import Foundation
import HeraldCore

extension RegistrationDescription {
    /// The longest template name the hub SDKs accept.
    static let maxTemplateNameLength = 200

    /// Expiration times from the start of the year 9999 on mean "never" (the service writes
    /// `9999-12-31T23:59:59.999`).
    static let noExpiryThreshold = Date(timeIntervalSince1970: 253_370_764_800)

    /// The description inside an entry's `<content>`.
    static func descriptionElement(inEntry entry: ParsedXMLElement) throws(HeraldError) -> ParsedXMLElement {
        guard let content = entry.child("content") else {
            throw .badRequest("the Atom entry has no <content> element; it must hold the registration description")
        }
        guard let description = content.children.first else {
            throw .badRequest("the entry's <content> holds no registration description element")
        }
        return description
    }

    /// A registration from a description element, as ``parse(_:)`` describes.
    static func registration(from description: ParsedXMLElement) throws(HeraldError) -> Registration {
        var typeName = description.name
        if typeName == "RegistrationDescription" {
            // The .NET SDK serializes through the base type: <RegistrationDescription i:type="…">.
            guard let type = description.attributes["type"]?.trimmingSpaces(), !type.isEmpty
            else {
                throw .badRequest(
                    "<RegistrationDescription> needs an i:type attribute naming the description, such as AppleRegistrationDescription"
                )
            }
            typeName = ParsedXMLElement.localName(type)
        }
        let (kind, isTemplate) = try kind(ofElement: typeName)

        guard let rawHandle = description.nonEmptyValue(kind.handleElement) else {
            throw .badRequest("\(typeName) needs a \(kind.handleElement) element with the device's \(kind.handleNoun)")
        }
        let handle: String
        do {
            handle = try Registration.normalizedHandle(rawHandle, platform: kind.platform)
        } catch {
            throw .badRequest("\(kind.handleElement) is invalid: \(error.message)")
        }
        var webPushKeys: WebPushKeys?
        if kind == .browser {
            guard let p256dh = description.nonEmptyValue("P256DH") else {
                throw .badRequest("\(typeName) needs a P256DH element with the subscription's public key")
            }
            guard let auth = description.nonEmptyValue("Auth") else {
                throw .badRequest("\(typeName) needs an Auth element with the subscription's authentication secret")
            }
            webPushKeys = WebPushKeys(p256dh: p256dh, auth: auth)
        }

        let id = description.value("RegistrationId") ?? ""
        if !id.isEmpty, !RegistrationID.isWellFormed(id) {
            throw .badRequest(
                "RegistrationId '\(id.prefix(40))' is not a registration id: 1 to 128 letters, digits, '-', '_' or '.'"
            )
        }
        let handleKind = try HandleKind(
            wireName: description.nonEmptyValue("PushChannelKind"), activityType: description.nonEmptyValue("ActivityType"),
            kindField: "PushChannelKind", typeField: "ActivityType")
        try handleKind.validate(platform: kind.platform, field: "PushChannelKind")
        return Registration(
            id: id,
            platform: kind.platform,
            handle: handle,
            handleKind: handleKind,
            webPushKeys: webPushKeys,
            tags: try tags(description.value("Tags")),
            expiresAt: try expiration(description.value("ExpirationTime")),
            template: isTemplate ? try template(from: description, kind: kind, typeName: typeName) : nil,
            pushVariables: try pushVariables(description.value("PushVariables")),
            legacyGCM: kind.legacyGCM
        )
    }

    /// A registration from an Atom entry the hub answered with.
    static func registration(fromEntry entry: ParsedXMLElement) throws(HeraldError) -> Registration {
        let description = try descriptionElement(inEntry: entry)
        var r = try registration(from: description)
        if r.id.isEmpty, let title = entry.nonEmptyValue("title") { r.id = title }
        if let etag = entry.attributes["etag"], let version = version(fromETag: etag) {
            r.version = version
        } else if let etag = description.nonEmptyValue("ETag"), let version = version(fromETag: etag) {
            r.version = version
        }
        if let published = entry.nonEmptyValue("published").flatMap(XSDDateTime.date(from:)) {
            r.createdAt = published
        }
        if let updated = entry.nonEmptyValue("updated").flatMap(XSDDateTime.date(from:)) {
            r.updatedAt = updated
        }
        return r
    }

    /// `W/"3"`, `"3"` or `3` → 3.
    static func version(fromETag etag: String) -> Int? {
        var value = Substring(etag.trimmingSpaces())
        if value.hasPrefix("W/") { value = value.dropFirst(2) }
        if value.count >= 2, value.first == "\"", value.last == "\"" { value = value.dropFirst().dropLast() }
        return Int(value)
    }

    /// `Tags`: comma-separated, each trimmed and validated.
    static func tags(_ value: String?) throws(HeraldError) -> [String] {
        guard let value, !value.isEmpty else { return [] }
        let tags = value.split(separator: ",", omittingEmptySubsequences: false).map {
            $0.trimmingSpaces()
        }
        if tags.contains("") {
            throw .badRequest("Tags has an empty tag; separate tags with single commas, such as 'sports,news'")
        }
        try Tag.validate(tags: tags)
        return tags
    }

    /// `ExpirationTime`: an `xsd:dateTime`; the year 9999 means none.
    static func expiration(_ value: String?) throws(HeraldError) -> Date? {
        guard let value, !value.isEmpty else { return nil }
        guard let date = XSDDateTime.date(from: value) else {
            throw .badRequest(
                "ExpirationTime '\(value.prefix(40))' is not an xsd:dateTime such as 2030-01-31T12:00:00Z"
            )
        }
        return date >= noExpiryThreshold ? nil : date
    }

    /// `PushVariables`: a JSON object of strings.
    static func pushVariables(_ value: String?) throws(HeraldError) -> [String: String] {
        guard let value, !value.isEmpty else { return [:] }
        guard let variables = try? JSONDecoder().decode([String: String].self, from: Data(value.utf8)) else {
            throw .badRequest(#"PushVariables is not a JSON object of string values, such as {"name":"value"}"#)
        }
        return variables
    }

    /// The template of a `…TemplateRegistrationDescription`.
    static func template(
        from description: ParsedXMLElement,
        kind: Kind,
        typeName: String
    ) throws(HeraldError) -> RegistrationTemplate {
        guard let bodyElement = description.child("BodyTemplate"), !bodyElement.isNil,
            !bodyElement.trimmedText.isEmpty
        else {
            throw .badRequest("\(typeName) needs a BodyTemplate element with the template's body")
        }
        let name = description.nonEmptyValue("TemplateName")
        if let name, name.count > maxTemplateNameLength {
            throw .badRequest(
                "TemplateName is \(name.count) characters long; a template name has at most \(maxTemplateNameLength)"
            )
        }
        let headers: [PlatformPayload.Header]
        switch kind {
        case .apple: headers = try self.headers(in: description, list: "ApnsHeaders", item: "ApnsHeader")
        case .windows: headers = try self.headers(in: description, list: "WnsHeaders", item: "WnsHeader")
        case .fcmV1, .gcm, .fcm, .browser: headers = []
        }
        let template = RegistrationTemplate(
            name: name,
            body: bodyElement.trimmedText,
            headers: headers,
            expiry: kind == .apple ? description.nonEmptyValue("Expiry") : nil,
            priority: kind == .apple ? description.nonEmptyValue("Priority") : nil
        )
        // A template that cannot be rendered (its body, or an expression in a header value or
        // the expiry) is refused now, not at send time.
        try template.validate()
        return template
    }

    /// `<WnsHeaders><WnsHeader><Header>X-WNS-Type</Header><Value>wns/toast</Value></WnsHeader></WnsHeaders>`.
    static func headers(
        in description: ParsedXMLElement,
        list: String,
        item: String
    ) throws(HeraldError) -> [PlatformPayload.Header] {
        guard let listElement = description.child(list), !listElement.isNil else { return [] }
        var headers: [PlatformPayload.Header] = []
        for element in listElement.children(item) {
            guard let name = element.nonEmptyValue("Header") else {
                throw .badRequest("each \(item) in \(list) needs a Header element with the header's name")
            }
            headers.append(PlatformPayload.Header(name: name, value: element.value("Value") ?? ""))
        }
        return headers
    }
}

extension RegistrationDescription.Kind {
    /// What the handle element holds, for messages.
    var handleNoun: String {
        switch self {
        case .apple: "APNs device token (hex)"
        case .fcmV1, .gcm, .fcm: "FCM registration token"
        case .windows: "WNS channel URI"
        case .browser: "Web Push endpoint URL"
        }
    }
}
