import Foundation
import HeraldCore
import HeraldHubWire
import Testing

/// What an APNs handle addresses on the wire (Herald's extension): an installation's
/// `pushChannelKind` and `activityType`, an Apple registration's `PushChannelKind` and
/// `ActivityType`; read, written back, and refused with the field named.
@Suite("Live Activity tokens on the wire")
struct HandleKindWireTests {
    static let token = String(repeating: "a1b2c3d4", count: 8)

    static func installation(_ members: String, platform: String = "apns", channel: String? = nil) throws -> Installation {
        try Installation.decodeWire(
            Data(#"{"installationId":"i-1","platform":"\#(platform)","pushChannel":"\#(channel ?? token)"\#(members)}"#.utf8))
    }

    static func expectBadRequest(_ naming: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) {
        #expect(sourceLocation: sourceLocation) {
            try body()
        } throws: { error in
            guard let error = error as? HeraldError else { return false }
            return error.code == .badRequest && error.message.hasPrefix(naming)
        }
    }

    @Test func anInstallationsKindIsReadAndWrittenBack() throws {
        let device = try Self.installation("")
        #expect(device.pushChannelKind == .device)
        #expect(!String(decoding: device.wireJSON(), as: UTF8.self).contains("pushChannelKind"), "a device's channel names no kind")
        #expect(try Self.installation(#","pushChannelKind":"device""#).pushChannelKind == .device)

        let update = try Self.installation(#","pushChannelKind":"liveActivity""#)
        #expect(update.pushChannelKind == .liveActivity)
        #expect(String(decoding: update.wireJSON(), as: UTF8.self).contains(#""pushChannelKind":"liveActivity""#))

        let start = try Self.installation(#","pushChannelKind":"PushToStart","activityType":"MatchAttributes""#)
        #expect(start.pushChannelKind == .pushToStart(activityType: "MatchAttributes"))
        let written = String(decoding: start.wireJSON(), as: UTF8.self)
        #expect(written.contains(#""activityType":"MatchAttributes""#) && written.contains(#""pushChannelKind":"pushToStart""#))
        #expect(try Installation.decodeWire(start.wireJSON()).pushChannelKind == start.pushChannelKind)
        // Every registration of the installation carries it, its templates' too.
        #expect(start.registrations().allSatisfy { $0.handleKind == .pushToStart(activityType: "MatchAttributes") })
    }

    @Test func aKindThatCannotBeIsRefusedNamingTheField() {
        Self.expectBadRequest("pushChannelKind:") { _ = try Self.installation(#","pushChannelKind":"widget""#) }
        Self.expectBadRequest("activityType:") { _ = try Self.installation(#","pushChannelKind":"pushToStart""#) }
        Self.expectBadRequest("activityType:") { _ = try Self.installation(#","pushChannelKind":"liveActivity","activityType":"A""#) }
        Self.expectBadRequest("pushChannelKind:") { _ = try Self.installation(#","pushChannelKind":"pushToStart","activityType":"Match Attributes""#) }
        Self.expectBadRequest("pushChannelKind:") {
            _ = try Self.installation(#","pushChannelKind":"liveActivity""#, platform: "fcmv1", channel: "fcm-token-1")
        }
    }

    @Test func anAppleRegistrationsKindIsReadAndWrittenLast() throws {
        let members = "<Tags>fans</Tags><DeviceToken>\(HubWireFixtures.appleToken)</DeviceToken>"
        let plain = try RegistrationDescription.parse(HubWireFixtures.entry("AppleRegistrationDescription", members))
        #expect(plain.handleKind == .device)
        let start = try RegistrationDescription.parse(
            HubWireFixtures.entry(
                "AppleRegistrationDescription",
                members + "<PushChannelKind>pushToStart</PushChannelKind><ActivityType>MatchAttributes</ActivityType>"))
        #expect(start.handleKind == .pushToStart(activityType: "MatchAttributes"))
        let xml = String(decoding: RegistrationDescription.entry(start, hubURL: "https://h/hub"), as: UTF8.self)
        #expect(
            xml.contains(
                "<DeviceToken>\(HubWireFixtures.appleToken)</DeviceToken><PushChannelKind>pushToStart</PushChannelKind><ActivityType>MatchAttributes</ActivityType></AppleRegistrationDescription>"
            ))
        #expect(!String(decoding: RegistrationDescription.entry(plain, hubURL: "https://h/hub"), as: UTF8.self).contains("PushChannelKind"))
        #expect(try RegistrationDescription.parse(Data(xml.utf8)).handleKind == start.handleKind)

        Self.expectBadRequest("ActivityType:") {
            _ = try RegistrationDescription.parse(
                HubWireFixtures.entry("AppleRegistrationDescription", members + "<PushChannelKind>pushToStart</PushChannelKind>"))
        }
        Self.expectBadRequest("PushChannelKind:") {
            _ = try RegistrationDescription.parse(
                HubWireFixtures.entry(
                    "FcmV1RegistrationDescription",
                    "<FcmV1RegistrationId>\(HubWireFixtures.fcmToken)</FcmV1RegistrationId><PushChannelKind>liveActivity</PushChannelKind>"))
        }
    }
}
