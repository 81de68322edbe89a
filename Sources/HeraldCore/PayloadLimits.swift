/// The largest payload, in bytes, each push service accepts.
public enum PayloadLimits {
    /// APNs, for every push type but VoIP.
    public static let apns = 4096
    /// APNs, for `apns-push-type: voip`.
    public static let apnsVoIP = 5120
    /// APNs, for a Live Activity push broadcast to a channel.
    public static let apnsBroadcast = 5120
    /// FCM HTTP v1: the message's notification and data.
    public static let fcm = 4096
    /// WNS: the body of a toast, tile, badge or raw notification.
    public static let wns = 5000
    /// Web Push: the plaintext before aes128gcm encryption, so that the encrypted record
    /// fits the 4096 bytes push services accept.
    public static let webPushPlaintext = 3993

    /// The limit for a rendered ``PlatformPayload`` of `platform` (for APNs, a non-VoIP one).
    public static func limit(for platform: Platform) -> Int {
        switch platform {
        case .apns: apns
        case .fcm: fcm
        case .wns: wns
        case .webpush: webPushPlaintext
        }
    }

    /// What APNs accepts of a payload of `byteCount` bytes: 5 KB for a VoIP push or a
    /// broadcast to a channel, 4 KB otherwise.
    ///
    /// - Throws: `413` naming the limit.
    public static func checkAPNs(byteCount: Int, voip: Bool = false, broadcast: Bool = false) throws(HeraldError) {
        let (limit, kind) = broadcast ? (apnsBroadcast, " for a broadcast") : voip ? (apnsVoIP, " for a VoIP push") : (apns, "")
        if byteCount > limit {
            throw .payloadTooLarge("the apns payload would be \(byteCount) bytes; APNs accepts at most \(limit)\(kind)")
        }
    }

    /// Throws `413` when a payload of `byteCount` bytes is larger than `platform` accepts:
    /// "the apns payload would be 5012 bytes; APNs accepts at most 4096".
    public static func check(byteCount: Int, for platform: Platform) throws(HeraldError) {
        let limit = limit(for: platform)
        if byteCount > limit {
            throw .payloadTooLarge(
                "the \(platform) payload would be \(byteCount) bytes; \(platform.serviceName) accepts at most \(limit)"
            )
        }
    }
}

extension Platform {
    /// The push service's name as people write it: APNs, FCM, WNS, Web Push.
    package var serviceName: String {
        switch self {
        case .apns: "APNs"
        case .fcm: "FCM"
        case .wns: "WNS"
        case .webpush: "Web Push"
        }
    }
}
