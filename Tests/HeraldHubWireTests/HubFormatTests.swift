import HeraldCore
import HeraldHubWire
import Testing

@Suite("Hub formats")
struct HubFormatTests {
    @Test(arguments: [
        ("apple", HubFormat.native(.apns)), ("APPLE", .native(.apns)), ("fcmv1", .native(.fcm)),
        ("gcm", .native(.fcm, legacyGCM: true)), ("fcm", .native(.fcm, legacyGCM: true)),
        ("windows", .native(.wns)), ("browser", .native(.webpush)), ("Template", .template),
    ])
    func namesParseCaseInsensitively(name: String, format: HubFormat) throws {
        #expect(try HubFormat(parsing: name) == format)
    }

    @Test func everyFormatReadsBackFromItsName() throws {
        let formats: [HubFormat] = Platform.allCases.map { .native($0) } + [.native(.fcm, legacyGCM: true), .template]
        for format in formats {
            #expect(try HubFormat(parsing: format.name) == format)
        }
    }

    @Test(arguments: [
        (nil, "ServiceBusNotification-Format is required"), ("", "ServiceBusNotification-Format is required"),
        ("baidu", "does not deliver to"), ("windowsphone", "does not deliver to"), ("sms", "unknown ServiceBusNotification-Format 'sms'"),
    ])
    func missingRetiredAndUnknownNamesAreBadRequests(name: String?, message: String) {
        let error = #expect(throws: HeraldError.self) { try HubFormat(parsing: name) }
        #expect(error?.code == .badRequest)
        #expect(error?.message.contains(message) == true)
    }

    @Test func onlyNativeFormatsHaveAPlatform() {
        #expect(HubFormat.native(.wns).platform == .wns)
        #expect(HubFormat.template.platform == nil)
    }
}
