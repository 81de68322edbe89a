import Foundation

/// What an APNs handle addresses, for the Live Activities of iOS 17.2 and later: the app on a
/// device (alerts, background pushes), one Live Activity (its update token), or the app's
/// push-to-start token for one activity type. A handle of any other platform is a
/// ``device`` handle.
///
/// A native send reaches only the handles of its kind: an alert never
/// goes to an activity's token, an update or end only to activities' update tokens, and a
/// start (push-to-start) only to the push-to-start tokens of the activity type it starts. APNs
/// would refuse each of the others (`DeviceTokenNotForTopic`).
public enum HandleKind: Sendable, Hashable {
    /// The app on a device: alerts and background pushes.
    case device
    /// One Live Activity's update token: its updates and its end.
    case liveActivity
    /// The app's push-to-start token for activities of `activityType` (the name of their
    /// `ActivityAttributes` type, as a push-to-start's `attributes-type` names it).
    case pushToStart(activityType: String)

    /// The longest activity type name.
    public static let maxActivityTypeLength = 128

    /// The kind a native push to `platform` reaches: for an APNs Live Activity push
    /// (`apns-push-type: liveactivity`), the push-to-start tokens of its `attributes-type`
    /// for a `start`, activities' update tokens otherwise; ``device`` for any other push.
    package init(reachedBy payload: PlatformPayload) {
        guard payload.isLiveActivity else {
            self = .device
            return
        }
        let aps = (try? JSONValue(parsing: payload.body))?["aps"]
        if aps?["event"] == .string("start"), case .string(let type)? = aps?["attributes-type"] {
            self = .pushToStart(activityType: type)
        } else {
            self = .liveActivity
        }
    }

    /// How the stores keep it: `nil` for ``device``, `liveactivity`, or
    /// `pushtostart:<activity type>`.
    package var storedValue: String? {
        switch self {
        case .device: nil
        case .liveActivity: "liveactivity"
        case .pushToStart(let type): "pushtostart:" + type
        }
    }

    /// The kind a store kept (see ``storedValue``); ``device`` for a value this release does
    /// not know.
    package init(storedValue: String?) {
        switch storedValue {
        case "liveactivity"?: self = .liveActivity
        case let value? where value.hasPrefix("pushtostart:"): self = .pushToStart(activityType: String(value.dropFirst("pushtostart:".count)))
        default: self = .device
        }
    }

    /// Checks that a handle of `platform` may be of this kind: an activity's kind is APNs'
    /// only, and an activity type is 1–128 letters, digits, `_` and `.` (a Swift type name,
    /// possibly qualified). Throws a `400` ``HeraldError`` naming the field otherwise.
    public func validate(platform: Platform, field: String) throws(HeraldError) {
        guard self != .device else { return }
        guard platform == .apns else {
            throw .badRequest("\(field): Live Activity tokens are APNs'; a \(platform) handle is a device's")
        }
        if case .pushToStart(let type) = self {
            guard (1...Self.maxActivityTypeLength).contains(type.utf8.count),
                type.utf8.allSatisfy({ byte in
                    switch byte {
                    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                        UInt8(ascii: "_"), UInt8(ascii: "."):
                        true
                    default: false
                    }
                })
            else {
                throw .badRequest(
                    "\(field): a push-to-start token's activity type is the name of its ActivityAttributes type (1–\(Self.maxActivityTypeLength) letters, digits, _ and .), not '\(Tag.display(type))'"
                )
            }
        }
    }
}

extension HandleKind: Codable {
    /// Reads the kind from its text: `liveactivity`, `pushtostart:<activity type>`, or
    /// `device` (or nothing) for ``device``.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        self.init(storedValue: container.decodeNil() ? nil : try container.decode(String.self))
    }

    /// Writes the kind as text: `liveactivity`, `pushtostart:<activity type>`, or `device`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(storedValue ?? "device")
    }
}
