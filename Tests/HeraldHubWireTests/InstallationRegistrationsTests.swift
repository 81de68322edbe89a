import Foundation
import HeraldCore
import HeraldHubWire
import Testing

@Suite("Installation expansion into registrations")
struct InstallationRegistrationsTests {
    static let created = Date(timeIntervalSince1970: 1_700_000_000)
    static let updated = Date(timeIntervalSince1970: 1_700_000_500)
    static let expires = Date(timeIntervalSince1970: 1_893_456_000)

    static var installation: Installation {
        Installation(
            id: "device-1",
            platform: .fcm,
            legacyGCM: true,
            pushChannel: "fcm-token",
            userId: "alice",
            tags: ["sports", "news"],
            templates: [
                "zeta": InstallationTemplate(body: #"{"data":{"m":"$(m)"}}"#),
                "alpha": InstallationTemplate(
                    body: #"{"message":{"notification":{"title":"$(title)"}}}"#,
                    headers: ["x-b": "2", "X-A": "1"],
                    expiry: "$(expiry)",
                    tags: ["promo", "sports"]
                ),
            ],
            pushVariables: ["title": "Hi"],
            expirationTime: expires,
            version: 7,
            createdAt: created,
            updatedAt: updated
        )
    }

    @Test func expandsIntoANativeAndOneTemplateRegistrationPerTemplate() throws {
        let registrations = Self.installation.registrations()
        #expect(
            registrations.map(\.id) == [
                "$installation:device-1", "$installation:device-1/alpha", "$installation:device-1/zeta",
            ])

        let native = registrations[0]
        #expect(native.template == nil)
        #expect(native.tags == ["$InstallationId:{device-1}", "$UserId:{alice}", "news", "sports"])
        #expect(native.platform == .fcm)
        #expect(native.legacyGCM)
        #expect(native.handle == "fcm-token")
        #expect(native.installationID == "device-1")
        #expect(native.expiresAt == Self.expires)
        #expect(native.pushVariables == ["title": "Hi"])
        #expect(native.version == 7)
        #expect(native.createdAt == Self.created)
        #expect(native.updatedAt == Self.updated)
        #expect(native.owner == nil)

        let alpha = registrations[1]
        #expect(alpha.tags == ["$InstallationId:{device-1}", "$UserId:{alice}", "news", "promo", "sports"])
        #expect(
            alpha.template
                == RegistrationTemplate(
                    name: "alpha",
                    body: #"{"message":{"notification":{"title":"$(title)"}}}"#,
                    headers: [.init(name: "X-A", value: "1"), .init(name: "x-b", value: "2")],
                    expiry: "$(expiry)"
                )
        )
        #expect(alpha.installationID == "device-1")
        #expect(alpha.pushVariables == ["title": "Hi"])

        let zeta = registrations[2]
        #expect(zeta.template?.name == "zeta")
        #expect(zeta.tags == native.tags)
    }

    @Test func withoutAUserThereIsNoUserTag() {
        var installation = Self.installation
        installation.userId = nil
        installation.templates = [:]
        let registrations = installation.registrations()
        #expect(registrations.count == 1)
        #expect(registrations[0].tags == ["$InstallationId:{device-1}", "news", "sports"])
    }

    @Test func carriesWebPushKeys() {
        let keys = WebPushKeys(p256dh: "p", auth: "a")
        let installation = Installation(
            id: "w", platform: .webpush, pushChannel: "https://push.example/1", webPushKeys: keys)
        #expect(installation.registrations().map(\.webPushKeys) == [keys])
    }

    @Test func anExpiredChannelHasNoRegistrations() {
        var installation = Self.installation
        installation.pushChannelExpired = true
        #expect(installation.registrations().isEmpty)
    }

    @Test func derivedIDsAreNotAddressableAsRegistrationIDs() {
        for registration in Self.installation.registrations() {
            #expect(!RegistrationID.isWellFormed(registration.id))
        }
        #expect(Installation.nativeRegistrationID(installationID: "x") == "$installation:x")
        #expect(Installation.templateRegistrationID(installationID: "x", templateName: "T 1") == "$installation:x/T 1")
    }

    @Test func derivedTagsAreValidTagsWithinTheLimit() throws {
        let installation = try Installation.decodeWire(
            Data(
                #"{"installationId":"i@example.com#1","platform":"fcmv1","pushChannel":"t","userId":"u=1","tags":["a"],"templates":{"t":{"body":"{}","tags":["b"]}}}"#
                    .utf8
            )
        )
        for registration in installation.registrations() {
            try Tag.validate(tags: registration.tags)
        }
    }
}
