public import Foundation

/// One app install on one device, as the hub API's installations describe it: the push
/// channel, the user, tags, and named templates with tags of their own.
///
/// An installation is stored whole and expanded into registrations (``registrations()``):
/// one native registration carrying the installation's tags plus `$InstallationId:{id}` and
/// `$UserId:{userId}`, and one template registration per template carrying those tags plus
/// the template's own. Sends resolve tags over registrations, so an installation is reached
/// exactly like a registration.
public struct Installation: Sendable, Hashable, Identifiable {
    /// The client's id for this installation (1–102 characters; see ``isWellFormedID(_:)``).
    public var id: String
    public var platform: Platform
    /// Created with the legacy `gcm` platform name; delivered through FCM v1.
    public var legacyGCM: Bool
    /// The push handle: APNs device token, FCM token, WNS channel URI or Web Push endpoint.
    public var pushChannel: String
    /// What the push channel addresses: the app on a device, or (APNs) a Live Activity's
    /// update token or a push-to-start token (the wire's `pushChannelKind`).
    public var pushChannelKind: HandleKind
    /// Web Push subscription keys; `nil` for other platforms.
    public var webPushKeys: WebPushKeys?
    /// The user this installation belongs to; adds the tag `$UserId:{userId}`.
    public var userId: String?
    /// The installation's own tags (without the implicit `$InstallationId`/`$UserId` tags).
    public var tags: [String]
    /// Named templates, each with tags of its own.
    public var templates: [String: InstallationTemplate]
    /// Values for template expressions that belong to this installation.
    public var pushVariables: [String: String]
    /// When the installation stops receiving notifications; `nil` for never.
    public var expirationTime: Date?
    /// The push service reported the channel dead; set by the hub, cleared by the next PUT.
    public var pushChannelExpired: Bool
    /// Increases by one on every change.
    public var version: Int
    public var createdAt: Date
    /// When it was last written (the wire's `lastUpdate`).
    public var updatedAt: Date

    public init(
        id: String,
        platform: Platform,
        legacyGCM: Bool = false,
        pushChannel: String,
        pushChannelKind: HandleKind = .device,
        webPushKeys: WebPushKeys? = nil,
        userId: String? = nil,
        tags: [String] = [],
        templates: [String: InstallationTemplate] = [:],
        pushVariables: [String: String] = [:],
        expirationTime: Date? = nil,
        pushChannelExpired: Bool = false,
        version: Int = 1,
        createdAt: Date = Date(),
        updatedAt: Date = Date()
    ) {
        self.id = id
        self.platform = platform
        self.legacyGCM = legacyGCM
        self.pushChannel = pushChannel
        self.pushChannelKind = pushChannelKind
        self.webPushKeys = webPushKeys
        self.userId = userId
        self.tags = tags
        self.templates = templates
        self.pushVariables = pushVariables
        self.expirationTime = expirationTime
        self.pushChannelExpired = pushChannelExpired
        self.version = version
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// A template of an installation.
public struct InstallationTemplate: Sendable, Hashable, Codable {
    public var body: String
    /// Push-service headers (`X-WNS-Type`, `apns-*`).
    public var headers: [String: String]
    /// The APNs expiry, as given.
    public var expiry: String?
    /// Tags this template answers to in addition to the installation's.
    public var tags: [String]

    public init(body: String, headers: [String: String] = [:], expiry: String? = nil, tags: [String] = []) {
        self.body = body
        self.headers = headers
        self.expiry = expiry
        self.tags = tags
    }
}
