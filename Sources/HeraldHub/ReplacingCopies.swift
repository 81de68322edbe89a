import Foundation
import HeraldCore
import HeraldPush

/// The collapse id a notification gets where its sender chose none, so that a device given a
/// notification twice (its page was sent again after a node crashed before saving its progress)
/// keeps one copy: the later one replaces the earlier instead of showing beside it.
///
/// | platform | header | value |
/// |---|---|---|
/// | APNs | `apns-collapse-id` | the notification's id |
/// | Web Push | `Topic` | the notification's id without its dashes (32 characters of the base64url alphabet) |
///
/// Not on FCM, whose collapse keys are limited to four per device (a key per notification
/// would evict the app's own), nor on WNS, where a tag replaces only within the group the app
/// chooses; nor on an APNs Live Activity push, whose updates are told apart by their
/// timestamps.
enum ReplacingCopies {
    /// The header that makes repeats of notification `id` replace one another on `platform`,
    /// if the platform has one.
    static func header(for id: String, on platform: Platform) -> (name: String, value: String)? {
        switch platform {
        case .apns: ("apns-collapse-id", id)
        case .webpush: ("Topic", String(id.filter { $0 != "-" }))
        case .fcm, .wns: nil
        }
    }

    /// Whether the APNs push type `pushType` (a header's value) takes a collapse id of
    /// Herald's choosing: every type but `liveactivity`.
    static func takesCollapseID(apnsPushType pushType: String?) -> Bool {
        pushType?.trimmingSpaces().lowercased() != "liveactivity"
    }
}

extension PushNotification {
    /// This notification with the header that makes its repeats replace one another (see
    /// ``ReplacingCopies``), unless the sender set one.
    func replacingCopies(of id: String, on platform: Platform) -> PushNotification {
        guard let header = ReplacingCopies.header(for: id, on: platform) else { return self }
        let name = header.name.lowercased()
        guard !headers.contains(where: { $0.name.lowercased() == name }) else { return self }
        if platform == .apns {
            let pushType = headers.last { $0.name.lowercased() == "apns-push-type" }?.value
            guard ReplacingCopies.takesCollapseID(apnsPushType: pushType) else { return self }
        }
        var notification = self
        notification.headers.append(header)
        return notification
    }
}
