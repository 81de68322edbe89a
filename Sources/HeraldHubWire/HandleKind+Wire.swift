public import HeraldCore

/// How the hub API names a ``HandleKind`` (Herald's extension, APNs only): in an
/// installation's JSON `pushChannelKind` and `activityType`, in an Apple registration's XML
/// `PushChannelKind` and `ActivityType`. A device's channel, the default, names none.
extension HandleKind {
    /// `liveActivity` or `pushToStart`; `nil` for ``HandleKind/device``, which is not written.
    public var wireName: String? {
        switch self {
        case .device: nil
        case .liveActivity: "liveActivity"
        case .pushToStart: "pushToStart"
        }
    }

    /// The activity type a push-to-start channel is for; `nil` for the other kinds.
    public var activityType: String? {
        if case .pushToStart(let type) = self { type } else { nil }
    }

    /// The kind a request names: `kind` is `device`, `liveActivity` or `pushToStart` in any
    /// letter case (absent: `device`), and `activityType` goes with `pushToStart`, which needs
    /// it. Not yet checked against the platform (``HandleKind/validate(platform:field:)``).
    ///
    /// - Throws: a `400` ``HeraldError`` naming `kindField` or `typeField`.
    public init(wireName kind: String?, activityType: String?, kindField: String, typeField: String) throws(HeraldError) {
        switch kind?.lowercased() {
        case nil, "", "device":
            self = .device
        case "liveactivity":
            self = .liveActivity
        case "pushtostart":
            guard let activityType, !activityType.isEmpty else {
                throw .badRequest("\(typeField): required with \(kindField) pushToStart; the name of the activity's ActivityAttributes type")
            }
            self = .pushToStart(activityType: activityType)
            return
        case let other?:
            throw .badRequest("\(kindField): one of device, liveActivity, pushToStart; not '\(Tag.display(other))'")
        }
        guard activityType == nil else {
            throw .badRequest("\(typeField): goes with \(kindField) pushToStart only (a push-to-start token is per activity type)")
        }
    }
}
