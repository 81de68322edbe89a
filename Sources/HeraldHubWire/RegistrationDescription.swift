public import Foundation
public import HeraldCore

/// The hub API's registrations in Atom XML, in both directions: the server parses what the
/// hub SDKs send and writes what they expect back; the Swift SDK writes requests and parses
/// the answers.
///
/// A registration travels as an Atom `<entry>` whose `<content type="application/xml">`
/// holds one description element, named after the platform and kind:
///
/// | description | Herald |
/// |---|---|
/// | `AppleRegistrationDescription` (`DeviceToken`) | ``Platform/apns`` |
/// | `FcmV1RegistrationDescription` (`FcmV1RegistrationId`) | ``Platform/fcm`` |
/// | `GcmRegistrationDescription` (`GcmRegistrationId`), `FcmRegistrationDescription` (`FcmRegistrationId`) | ``Platform/fcm``, ``Registration/legacyGCM`` |
/// | `WindowsRegistrationDescription` (`ChannelUri`) | ``Platform/wns`` |
/// | `BrowserRegistrationDescription` (`Endpoint`, `P256DH`, `Auth`) | ``Platform/webpush`` |
///
/// Each has a `…TemplateRegistrationDescription` form that adds a template. Elements are
/// written in the order the .NET SDK's serializer requires (it skips elements that come out
/// of order); parsing accepts any order and any namespace prefixes.
public enum RegistrationDescription {
    /// The API version written into entry ids and links when the caller names none.
    public static let defaultAPIVersion = "2020-06"

    // MARK: Server side

    /// Reads a registration from a request body: an Atom `<entry>` whose content holds one
    /// registration description, or the bare description element.
    ///
    /// The result has the id from `RegistrationId` (`""` if absent), the normalized handle,
    /// validated tags, `ExpirationTime` (`nil` for none or the year 9999), `PushVariables`
    /// and, for a template description, its template. Its version and dates are defaults
    /// for the store to set.
    ///
    /// - Throws: a `400` ``HeraldError`` that names the element at fault: malformed XML, an
    ///   unknown or unsupported description (MPNS, ADM, Baidu, Xiaomi), a missing or invalid
    ///   handle, an invalid tag, date or `PushVariables`, a template without a body.
    public static func parse(_ body: Data) throws(HeraldError) -> Registration {
        let root = try ParsedXMLElement.parse(body, document: "registration")
        let description: ParsedXMLElement
        switch root.name {
        case "entry":
            description = try descriptionElement(inEntry: root)
        case let name where name.hasSuffix("RegistrationDescription"):
            description = root
        default:
            throw .badRequest(
                "expected an Atom <entry> holding a registration description, or the description itself; found <\(root.name)>"
            )
        }
        return try registration(from: description)
    }

    /// The Atom entry the service answers a registration request with (and returns for a
    /// single `GET`): `a:etag`, `id`, `title`, `published`, `updated`, `link rel="self"` and
    /// the description with `ETag` and `ExpirationTime`.
    ///
    /// - Parameters:
    ///   - r: the registration.
    ///   - hubURL: the hub's URL without a trailing slash, e.g. `https://host/myhub`.
    ///   - apiVersion: the `api-version` in the entry's URLs.
    public static func entry(_ r: Registration, hubURL: String, apiVersion: String = defaultAPIVersion) -> Data {
        var xml = WireXMLWriter()
        writeEntry(r, hubURL: hubURL, apiVersion: apiVersion, declaresAtom: true, into: &xml)
        return xml.data
    }

    /// An Atom feed of registrations, as `GET …/registrations` answers: a title of
    /// `Registrations`, `id`, `updated`, `link rel="self"`, `link rel="next"` when there is a
    /// further page, then one entry per registration.
    public static func feed(
        _ rs: [Registration],
        hubURL: String,
        selfURL: String,
        nextURL: String?,
        apiVersion: String = defaultAPIVersion,
        updated: Date = Date()
    ) -> Data {
        var xml = WireXMLWriter()
        xml.start("feed", attributes: [("xmlns", HubWireNamespace.atom)])
        xml.start("title", attributes: [("type", "text")])
        xml.text("Registrations")
        xml.end()
        xml.element("id", selfURL)
        xml.element("updated", XSDDateTime.string(from: updated))
        xml.empty("link", attributes: [("rel", "self"), ("href", selfURL)])
        if let nextURL { xml.empty("link", attributes: [("rel", "next"), ("href", nextURL)]) }
        for r in rs {
            writeEntry(r, hubURL: hubURL, apiVersion: apiVersion, declaresAtom: false, into: &xml)
        }
        xml.end()
        return xml.data
    }

    // MARK: Client side

    /// The body an SDK sends to create or update `r`: an Atom entry with the description
    /// only. `RegistrationId`, `ExpirationTime`, `Tags` and `PushVariables` are written when
    /// set; no `ETag` (the version goes in `If-Match`).
    public static func request(_ r: Registration) -> Data {
        var xml = WireXMLWriter()
        xml.start("entry", attributes: [("xmlns", HubWireNamespace.atom)])
        xml.start("content", attributes: [("type", "application/xml")])
        writeDescription(r, response: false, into: &xml)
        xml.end()
        xml.end()
        return xml.data
    }

    /// Reads an entry the hub answered with: the description as ``parse(_:)`` reads it, plus
    /// the version from `a:etag` (or the description's `ETag`), the id from `RegistrationId`
    /// (or the entry's `title`), and the dates from `published` and `updated`.
    public static func parseEntry(_ body: Data) throws(HeraldError) -> Registration {
        let root = try ParsedXMLElement.parse(body, document: "registration entry")
        guard root.name == "entry" else {
            throw .badRequest("expected an Atom <entry> holding a registration; found <\(root.name)>")
        }
        return try registration(fromEntry: root)
    }

    /// Reads every entry of a feed the hub answered with, each as ``parseEntry(_:)`` does.
    public static func parseFeed(_ body: Data) throws(HeraldError) -> [Registration] {
        let root = try ParsedXMLElement.parse(body, document: "registration feed")
        guard root.name == "feed" else {
            throw .badRequest("expected an Atom <feed> of registrations; found <\(root.name)>")
        }
        var result: [Registration] = []
        for entry in root.children("entry") { result.append(try registration(fromEntry: entry)) }
        return result
    }
}

// MARK: - Kinds of description

extension RegistrationDescription {
    /// The platform part of a description's name.
    enum Kind: String, CaseIterable {
        case apple = "Apple"
        case fcmV1 = "FcmV1"
        case gcm = "Gcm"
        case fcm = "Fcm"
        case windows = "Windows"
        case browser = "Browser"

        var platform: Platform {
            switch self {
            case .apple: .apns
            case .fcmV1, .gcm, .fcm: .fcm
            case .windows: .wns
            case .browser: .webpush
            }
        }

        var legacyGCM: Bool { self == .gcm || self == .fcm }

        /// The kind a registration is written as: legacy FCM registrations come back as `Gcm`.
        init(_ r: Registration) {
            switch r.platform {
            case .apns: self = .apple
            case .fcm: self = r.legacyGCM ? .gcm : .fcmV1
            case .wns: self = .windows
            case .webpush: self = .browser
            }
        }

        /// The element holding the handle (for Web Push, the endpoint).
        var handleElement: String {
            switch self {
            case .apple: "DeviceToken"
            case .fcmV1: "FcmV1RegistrationId"
            case .gcm: "GcmRegistrationId"
            case .fcm: "FcmRegistrationId"
            case .windows: "ChannelUri"
            case .browser: "Endpoint"
            }
        }
    }

    /// Platforms the hub API knows and Herald does not deliver to.
    static let unsupportedKinds: [String: String] = [
        "Mpns": "the Microsoft Push Notification Service (Windows Phone), which was retired",
        "Adm": "Amazon Device Messaging",
        "Baidu": "Baidu Cloud Push",
        "Xiaomi": "Xiaomi Push",
    ]

    static let supportedNames = "Apple, FcmV1, Gcm, Fcm, Windows and Browser (each also as a Template description)"

    /// The element name for `r`: `AppleTemplateRegistrationDescription` and so on.
    static func elementName(_ r: Registration) -> String {
        Kind(r).rawValue + (r.template == nil ? "" : "Template") + "RegistrationDescription"
    }

    /// The kind and template flag a description element's name stands for.
    static func kind(ofElement name: String) throws(HeraldError) -> (kind: Kind, template: Bool) {
        let suffix = "RegistrationDescription"
        guard name.hasSuffix(suffix), name.count > suffix.count else {
            throw .badRequest("<\(name)> is not a registration description; use one of \(supportedNames)")
        }
        var platform = String(name.dropLast(suffix.count))
        let template = platform.hasSuffix("Template")
        if template { platform.removeLast("Template".count) }
        if let kind = Kind(rawValue: platform) { return (kind, template) }
        if let service = unsupportedKinds[platform] {
            throw .badRequest(
                "\(name) is for \(service), which Herald does not support; use \(supportedNames) registration descriptions"
            )
        }
        throw .badRequest("unknown registration description <\(name)>; use one of \(supportedNames)")
    }
}
