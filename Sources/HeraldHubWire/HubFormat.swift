public import HeraldCore

/// What the hub API's `ServiceBusNotification-Format` header names, and how its documents
/// name platforms (`ApplicationPlatform`, `TargetPlatforms`): one push service's native
/// format, or `template`.
///
/// The names are `apple`, `fcmv1`, `gcm` (the legacy FCM JSON, delivered through FCM v1),
/// `windows`, `browser` and `template`, compared without regard to case.
public enum HubFormat: Sendable, Hashable, CustomStringConvertible {
    case native(Platform, legacyGCM: Bool = false)
    case template

    /// Every name a request may carry, in the order the error messages list them.
    public static let names = "apple, fcmv1, gcm, windows, browser or template"

    /// Parses a format name; a missing, retired or unknown name is a 400 that says which
    /// names are accepted.
    public init(parsing name: String?) throws(HeraldError) {
        guard let name, !name.isEmpty else {
            throw .badRequest("ServiceBusNotification-Format is required: \(Self.names)")
        }
        switch name.lowercased() {
        case "apple": self = .native(.apns)
        case "fcmv1": self = .native(.fcm)
        case "gcm", "fcm": self = .native(.fcm, legacyGCM: true)
        case "windows": self = .native(.wns)
        case "browser": self = .native(.webpush)
        case "template": self = .template
        case "windowsphone", "adm", "baidu", "xiaomi", "nokiax":
            throw .badRequest("format '\(Tag.display(name))' is a push service Herald does not deliver to; use \(Self.names)")
        default:
            throw .badRequest("unknown ServiceBusNotification-Format '\(Tag.display(name))'; use \(Self.names)")
        }
    }

    /// The name the hub writes: `gcm` only for a legacy GCM registration, `fcmv1` otherwise.
    public var name: String {
        switch self {
        case .native(.apns, _): "apple"
        case .native(.fcm, let legacyGCM): legacyGCM ? "gcm" : "fcmv1"
        case .native(.wns, _): "windows"
        case .native(.webpush, _): "browser"
        case .template: "template"
        }
    }

    /// The platform a native format is delivered on; `nil` for `template`.
    public var platform: Platform? {
        guard case .native(let platform, _) = self else { return nil }
        return platform
    }

    public var description: String { name }
}
