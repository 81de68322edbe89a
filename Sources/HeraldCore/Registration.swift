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
    /// Web Push subscription keys; `nil` for other platforms.
    public var webPushKeys: WebPushKeys?
    /// Tags, unique and sorted; validated by ``Tag``.
    public var tags: [String]
    /// The app-backend account that owns this registration, if any.
    public var owner: String?
    /// When the registration stops receiving notifications; `nil` for never.
    public var expiresAt: Date?
    /// Increases by one on every change; the ETag.
    public var version: Int
    public var createdAt: Date
    public var updatedAt: Date

    public init(
        id: String,
        platform: Platform,
        handle: String,
        webPushKeys: WebPushKeys? = nil,
        tags: [String] = [],
        owner: String? = nil,
        expiresAt: Date? = nil,
        version: Int = 1,
        createdAt: Date = Date(),
        updatedAt: Date = Date()
    ) {
        self.id = id
        self.platform = platform
        self.handle = handle
        self.webPushKeys = webPushKeys
        self.tags = Array(Set(tags)).sorted()
        self.owner = owner
        self.expiresAt = expiresAt
        self.version = version
        self.createdAt = createdAt
        self.updatedAt = updatedAt
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
