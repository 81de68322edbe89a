public import Foundation

/// The keys of a Web Push subscription (RFC 8291): the user agent's P-256 public key and
/// its 16-byte authentication secret, both base64url without padding.
public struct WebPushKeys: Sendable, Hashable, Codable {
    public var p256dh: String
    public var auth: String

    public init(p256dh: String, auth: String) {
        self.p256dh = p256dh
        self.auth = auth
    }
}

/// One device's registration: where to reach it and which tags it answers to.
public struct Registration: Sendable, Hashable, Codable, Identifiable {
    /// Opaque registration id (see ``RegistrationID``).
    public var id: String
    public var platform: Platform
    /// The push-service handle: an APNs device token (lowercase hex), an FCM registration
    /// token, a WNS channel URI, or a Web Push endpoint URL.
    public var handle: String
    /// What the handle addresses: the app on a device, or (APNs) a Live Activity's update
    /// token or a push-to-start token; a native send reaches only handles of its kind.
    public var handleKind: HandleKind
    /// Web Push subscription keys; `nil` for other platforms.
    public var webPushKeys: WebPushKeys?
    /// Tags, unique and sorted; validated by ``Tag``.
    public var tags: [String]
    /// The app-backend account that owns this registration, if any.
    public var owner: String?
    /// When the registration stops receiving notifications; `nil` for never.
    public var expiresAt: Date?
    /// For a template registration, the template its notifications are rendered from;
    /// `nil` for a native registration. Native sends reach native registrations only,
    /// template sends reach template registrations only.
    public var template: RegistrationTemplate?
    /// Values for the template's expressions that belong to this device (the hub API's
    /// `PushVariables`); a template send's own properties take precedence.
    public var pushVariables: [String: String]
    /// The installation this registration was derived from; `nil` for one created directly.
    /// Such registrations are written only through the installation.
    public var installationID: String?
    /// Created through the legacy GCM form of the hub API (`GcmRegistrationDescription`, format
    /// `gcm`); delivered through FCM v1 like any FCM registration, and reported back in the form
    /// it was created in.
    public var legacyGCM: Bool
    /// Increases by one on every change; the ETag.
    public var version: Int
    public var createdAt: Date
    public var updatedAt: Date

    public init(
        id: String,
        platform: Platform,
        handle: String,
        handleKind: HandleKind = .device,
        webPushKeys: WebPushKeys? = nil,
        tags: [String] = [],
        owner: String? = nil,
        expiresAt: Date? = nil,
        template: RegistrationTemplate? = nil,
        pushVariables: [String: String] = [:],
        installationID: String? = nil,
        legacyGCM: Bool = false,
        version: Int = 1,
        createdAt: Date = Date(),
        updatedAt: Date = Date()
    ) {
        self.id = id
        self.platform = platform
        self.handle = handle
        self.handleKind = handleKind
        self.webPushKeys = webPushKeys
        self.tags = Array(Set(tags)).sorted()
        self.owner = owner
        self.expiresAt = expiresAt
        self.template = template
        self.pushVariables = pushVariables
        self.installationID = installationID
        self.legacyGCM = legacyGCM
        self.version = version
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// The template of a template registration: a body with expressions that is rendered
/// per device from a template send's properties.
public struct RegistrationTemplate: Sendable, Hashable, Codable {
    /// The template's name, to pick it at send time; `nil` for an unnamed template.
    public var name: String?
    /// The body: JSON (APNs, FCM, Web Push, WNS raw) or XML (WNS toast, tile, badge) with
    /// expressions such as `$(message)` in its values.
    public var body: String
    /// Push-service headers sent with it (`X-WNS-Type`, `apns-push-type`, …); values may hold
    /// expressions too.
    public var headers: [PlatformPayload.Header]
    /// The APNs expiry (an expression or a date), as given.
    public var expiry: String?
    /// The APNs priority (`10` or `5`), as given.
    public var priority: String?

    public init(
        name: String? = nil,
        body: String,
        headers: [PlatformPayload.Header] = [],
        expiry: String? = nil,
        priority: String? = nil
    ) {
        self.name = name
        self.body = body
        self.headers = headers
        self.expiry = expiry
        self.priority = priority
    }
}

/// Registration ids: random, unguessable, URL-safe.
public enum RegistrationID {
    /// A new id such as `8017651207128774516-1325807942325923056-1`: two random 63-bit
    /// numbers and a generation, the shape hub SDKs expect.
    public static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        let a = UInt64.random(in: 1...UInt64(Int64.max), using: &generator)
        let b = UInt64.random(in: 1...UInt64(Int64.max), using: &generator)
        return "\(a)-\(b)-1"
    }

    /// Whether `id` could be a registration id: 1–128 characters of letters, digits, `-`, `_`, `.`.
    public static func isWellFormed(_ id: String) -> Bool {
        guard (1...128).contains(id.utf8.count) else { return false }
        return id.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
                true
            default: false
            }
        }
    }
}
