public import Foundation
public import HeraldCore

extension Registration {
    /// A valid registration with defaults for everything a test does not care about.
    public static func sample(
        id: String = RegistrationID.make(),
        platform: Platform = .apns,
        handle: String? = nil,
        tags: [String] = [],
        owner: String? = nil,
        expiresAt: Date? = nil
    ) -> Registration {
        Registration(
            id: id,
            platform: platform,
            handle: handle ?? String(repeating: "ab", count: 32),
            webPushKeys: platform == .webpush
                ? WebPushKeys(p256dh: "BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM", auth: "tBHItJI5svbpez7KI4CCXg")
                : nil,
            tags: tags,
            owner: owner,
            expiresAt: expiresAt
        )
    }
}
