import Foundation
import HeraldCore
import HeraldHubWire
import Testing

/// Request bodies shaped like those the hub SDKs send (written for these tests after the
/// recorded traffic of the .NET SDK and the JS SDK's serializer).
enum HubWireFixtures {
    static let atom = "http://www.w3.org/2005/Atom"
    static let connect = "http://schemas.microsoft.com/netservices/2010/10/servicebus/connect"
    static let xsi = "http://www.w3.org/2001/XMLSchema-instance"

    static let appleToken = "62BCD3484834B7E2DC56733AC5509259230CC1BA82BA1AE7D06E91908A05A8FA"
    static let fcmToken = "dQw4w9WgXcQ:APA91bHun4MxP5egoKMwt2KZFBaFUH-1RYqx"
    static let channel = "https://db5.notify.windows.com/?token=AwYAAAB%2bQ&x=1"
    static let endpoint = "https://push.example.net/send/abc123"
    static let p256dh = "BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM"
    static let auth = "tBHItJI5svbpez7KI4CCXg"

    /// `<entry><content type="application/xml"><{name} …>{members}</{name}></content></entry>`,
    /// the JS SDK's form: the description element named after the platform.
    static func entry(_ name: String, _ members: String) -> Data {
        Data(
            (#"<?xml version="1.0" encoding="utf-8"?><entry xmlns="\#(atom)"><content type="application/xml">"#
                + #"<\#(name) xmlns:i="\#(xsi)" xmlns="\#(connect)">\#(members)</\#(name)></content></entry>"#).utf8
        )
    }

    /// The .NET SDK's form: serialized through the base type, the kind in `i:type`, a nil id.
    static func dotNetEntry(_ type: String, _ members: String) -> Data {
        Data(
            (#"<entry xmlns="\#(atom)"><content type="application/xml"><RegistrationDescription "#
                + #"xmlns:i="\#(xsi)" i:type="\#(type)" xmlns="\#(connect)"><RegistrationId i:nil="true"/>"#
                + #"\#(members)</RegistrationDescription></content></entry>"#).utf8
        )
    }

    struct Case: CustomTestStringConvertible, Sendable {
        var element: String
        var members: String
        var platform: Platform
        var handle: String
        var legacyGCM = false
        var webPushKeys: WebPushKeys? = nil
        var template: RegistrationTemplate? = nil
        var testDescription: String { element }
    }

    static let apnsBody = #"{"aps":{"alert":"$(message)"}}"#
    static let fcmBody = #"{"message":{"notification":{"body":"$(message)"}}}"#
    static let wnsBody = #"<toast><visual><binding template="ToastText01"><text id="1">$(message)</text></binding></visual></toast>"#

    static let cases: [Case] = [
        Case(
            element: "AppleRegistrationDescription",
            members: "<Tags>sports,news</Tags><DeviceToken>\(appleToken)</DeviceToken>",
            platform: .apns, handle: appleToken.lowercased()
        ),
        Case(
            element: "AppleTemplateRegistrationDescription",
            members: "<Tags>sports</Tags><DeviceToken>\(appleToken)</DeviceToken>"
                + "<BodyTemplate><![CDATA[\(apnsBody)]]></BodyTemplate><Expiry>$(expiry)</Expiry>"
                + "<TemplateName>Alert</TemplateName><Priority>10</Priority><ApnsHeaders><ApnsHeader>"
                + "<Header>apns-push-type</Header><Value>alert</Value></ApnsHeader></ApnsHeaders>",
            platform: .apns, handle: appleToken.lowercased(),
            template: RegistrationTemplate(
                name: "Alert", body: apnsBody, headers: [.init(name: "apns-push-type", value: "alert")],
                expiry: "$(expiry)", priority: "10"
            )
        ),
        Case(
            element: "GcmRegistrationDescription",
            members: "<GcmRegistrationId>\(fcmToken)</GcmRegistrationId>",
            platform: .fcm, handle: fcmToken, legacyGCM: true
        ),
        Case(
            element: "GcmTemplateRegistrationDescription",
            members: "<GcmRegistrationId>\(fcmToken)</GcmRegistrationId>"
                + #"<BodyTemplate><![CDATA[{"data":{"message":"$(message)"}}]]></BodyTemplate><TemplateName>Data</TemplateName>"#,
            platform: .fcm, handle: fcmToken, legacyGCM: true,
            template: RegistrationTemplate(name: "Data", body: #"{"data":{"message":"$(message)"}}"#)
        ),
        Case(
            element: "FcmRegistrationDescription",
            members: "<FcmRegistrationId>\(fcmToken)</FcmRegistrationId>",
            platform: .fcm, handle: fcmToken, legacyGCM: true
        ),
        Case(
            element: "FcmTemplateRegistrationDescription",
            members: "<FcmRegistrationId>\(fcmToken)</FcmRegistrationId><BodyTemplate><![CDATA[\(fcmBody)]]></BodyTemplate>",
            platform: .fcm, handle: fcmToken, legacyGCM: true,
            template: RegistrationTemplate(body: fcmBody)
        ),
        Case(
            element: "FcmV1RegistrationDescription",
            members: "<FcmV1RegistrationId>\(fcmToken)</FcmV1RegistrationId>",
            platform: .fcm, handle: fcmToken
        ),
        Case(
            element: "FcmV1TemplateRegistrationDescription",
            members: "<FcmV1RegistrationId>\(fcmToken)</FcmV1RegistrationId>"
                + "<BodyTemplate><![CDATA[\(fcmBody)]]></BodyTemplate><TemplateName>V1</TemplateName>",
            platform: .fcm, handle: fcmToken,
            template: RegistrationTemplate(name: "V1", body: fcmBody)
        ),
        Case(
            element: "WindowsRegistrationDescription",
            members: "<ChannelUri>https://db5.notify.windows.com/?token=AwYAAAB%2bQ&amp;x=1</ChannelUri>"
                + "<SecondaryTileName>tile</SecondaryTileName>",
            platform: .wns, handle: channel
        ),
        Case(
            element: "WindowsTemplateRegistrationDescription",
            members: "<ChannelUri>https://db5.notify.windows.com/?token=AwYAAAB%2bQ&amp;x=1</ChannelUri>"
                + "<BodyTemplate><![CDATA[\(wnsBody)]]></BodyTemplate><WnsHeaders><WnsHeader><Header>X-WNS-Type</Header>"
                + "<Value>wns/toast</Value></WnsHeader><WnsHeader><Header>X-WNS-Tag</Header><Value>$(tag)</Value>"
                + "</WnsHeader></WnsHeaders><TemplateName>Toast</TemplateName>",
            platform: .wns, handle: channel,
            template: RegistrationTemplate(
                name: "Toast", body: wnsBody,
                headers: [.init(name: "X-WNS-Type", value: "wns/toast"), .init(name: "X-WNS-Tag", value: "$(tag)")]
            )
        ),
        Case(
            element: "BrowserRegistrationDescription",
            members: "<Endpoint>\(endpoint)</Endpoint><Auth>\(auth)</Auth><P256DH>\(p256dh)</P256DH>",
            platform: .webpush, handle: endpoint, webPushKeys: WebPushKeys(p256dh: p256dh, auth: auth)
        ),
        Case(
            element: "BrowserTemplateRegistrationDescription",
            members: "<Endpoint>\(endpoint)</Endpoint><P256DH>\(p256dh)</P256DH><Auth>\(auth)</Auth>"
                + #"<BodyTemplate><![CDATA[{"title":"$(title)"}]]></BodyTemplate>"#,
            platform: .webpush, handle: endpoint, webPushKeys: WebPushKeys(p256dh: p256dh, auth: auth),
            template: RegistrationTemplate(body: #"{"title":"$(title)"}"#)
        ),
    ]
}

@Suite("Hub wire: parsing registration requests")
struct HubWireRegistrationParsingTests {
    typealias F = HubWireFixtures

    @Test(arguments: F.cases)
    func parsesEveryDescriptionType(_ c: F.Case) throws {
        let r = try RegistrationDescription.parse(F.entry(c.element, c.members))
        #expect(r.platform == c.platform)
        #expect(r.handle == c.handle)
        #expect(r.legacyGCM == c.legacyGCM)
        #expect(r.webPushKeys == c.webPushKeys)
        #expect(r.template == c.template)
        #expect(r.id == "")
    }

    @Test(arguments: F.cases)
    func parsesTheDotNetBaseTypeForm(_ c: F.Case) throws {
        let r = try RegistrationDescription.parse(F.dotNetEntry(c.element, c.members))
        #expect(r.platform == c.platform)
        #expect(r.handle == c.handle)
        #expect(r.legacyGCM == c.legacyGCM)
        #expect(r.template == c.template)
        #expect(r.id == "")
    }

    @Test(arguments: F.cases)
    func parsesTheBareDescription(_ c: F.Case) throws {
        let body = Data(#"<\#(c.element) xmlns="\#(F.connect)">\#(c.members)</\#(c.element)>"#.utf8)
        let r = try RegistrationDescription.parse(body)
        #expect(r.platform == c.platform)
        #expect(r.handle == c.handle)
        #expect(r.template == c.template)
    }

    @Test func readsTheCommonMembersOfAPrettyPrintedBody() throws {
        let body = """
            <?xml version="1.0" encoding="utf-8"?>
            <entry xmlns="http://www.w3.org/2005/Atom">
                <content type="application/xml">
                    <WindowsTemplateRegistrationDescription xmlns:i="http://www.w3.org/2001/XMLSchema-instance" xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect">
                        <ExpirationTime>2031-02-03T04:05:06.789Z</ExpirationTime>
                        <RegistrationId>8017651207128774516-1325807942325923056-1</RegistrationId>
                        <Tags>myTag, myOtherTag,$UserId:{alice}</Tags>
                        <PushVariables>{"name":"Ann &amp; Bob","count":"3"}</PushVariables>
                        <ChannelUri>
                            https://db5.notify.windows.com/?token=abc
                        </ChannelUri>
                        <BodyTemplate>
                            <![CDATA[<tile><visual><binding template="TileWideText03"><text id="1">$(message)</text></binding></visual></tile>]]>
                        </BodyTemplate>
                        <WnsHeaders>
                            <WnsHeader>
                                <Header>X-WNS-Type</Header>
                                <Value>wns/tile</Value>
                            </WnsHeader>
                        </WnsHeaders>
                    </WindowsTemplateRegistrationDescription>
                </content>
            </entry>
            """
        let r = try RegistrationDescription.parse(Data(body.utf8))
        #expect(r.id == "8017651207128774516-1325807942325923056-1")
        #expect(r.tags == ["$UserId:{alice}", "myOtherTag", "myTag"])
        #expect(r.pushVariables == ["name": "Ann & Bob", "count": "3"])
        let expiresAt = try #require(r.expiresAt?.timeIntervalSince1970)
        #expect(abs(expiresAt - 1_927_857_906.789) < 0.000_5)
        #expect(r.handle == "https://db5.notify.windows.com/?token=abc")
        #expect(
            r.template?.body
                == #"<tile><visual><binding template="TileWideText03"><text id="1">$(message)</text></binding></visual></tile>"#
        )
        #expect(r.template?.headers == [.init(name: "X-WNS-Type", value: "wns/tile")])
        #expect(r.template?.name == nil)
    }

    @Test(arguments: ["9999-12-31T23:59:59.999", "9999-12-31T23:59:59.999Z", "9999-12-31T23:59:59.9999999Z"])
    func theYear9999MeansNoExpiry(_ time: String) throws {
        let r = try RegistrationDescription.parse(
            F.entry(
                "AppleRegistrationDescription",
                "<ExpirationTime>\(time)</ExpirationTime><DeviceToken>\(F.appleToken)</DeviceToken>"
            )
        )
        #expect(r.expiresAt == nil)
    }

    @Test func matchesLocalNamesWhateverThePrefixes() throws {
        let body = """
            <at:entry xmlns:at="http://www.w3.org/2005/Atom"><at:content type="application/xml">\
            <sb:AppleTemplateRegistrationDescription xmlns:sb="\(F.connect)" xmlns:x="\(F.xsi)">\
            <sb:ETag>7</sb:ETag><sb:RegistrationId x:nil="true"/><sb:DeviceToken>\(F.appleToken)</sb:DeviceToken>\
            <sb:BodyTemplate><![CDATA[{}]]></sb:BodyTemplate><sb:Expiry x:nil="true"/>\
            <sb:TemplateName>t</sb:TemplateName></sb:AppleTemplateRegistrationDescription></at:content></at:entry>
            """
        let r = try RegistrationDescription.parse(Data(body.utf8))
        #expect(r.platform == .apns)
        #expect(r.id == "")
        #expect(r.template == RegistrationTemplate(name: "t", body: "{}"))
    }

    @Test func keepsWhatATemplateBodyHoldsInsideCDATA() throws {
        // A line break between JSON tokens: XML turns a bare CR into LF, so it travels as &#13;.
        let tricky = "{\"a\":\"]]>\",\"b\":\"<x>&amp;\",\"c\":\"line\",\r\n\"d\":\"next\"}"
        let body = "<![CDATA[{\"a\":\"]]]]><![CDATA[>\",\"b\":\"<x>&amp;\",\"c\":\"line\",]]>&#13;<![CDATA[\n\"d\":\"next\"}]]>"
        let r = try RegistrationDescription.parse(
            F.entry(
                "FcmV1TemplateRegistrationDescription",
                "<FcmV1RegistrationId>\(F.fcmToken)</FcmV1RegistrationId><BodyTemplate>\(body)</BodyTemplate>"
            )
        )
        #expect(r.template?.body == tricky)
    }

    // MARK: Errors

    static let unsupported: [(element: String, service: String)] = [
        ("MpnsRegistrationDescription", "Windows Phone"),
        ("MpnsTemplateRegistrationDescription", "Windows Phone"),
        ("AdmRegistrationDescription", "Amazon Device Messaging"),
        ("AdmTemplateRegistrationDescription", "Amazon Device Messaging"),
        ("BaiduRegistrationDescription", "Baidu"),
        ("BaiduTemplateRegistrationDescription", "Baidu"),
        ("XiaomiRegistrationDescription", "Xiaomi"),
        ("XiaomiTemplateRegistrationDescription", "Xiaomi"),
    ]

    @Test(arguments: unsupported)
    func refusesPlatformsHeraldDoesNotSupport(_ c: (element: String, service: String)) {
        let error = #expect(throws: HeraldError.self) {
            try RegistrationDescription.parse(F.entry(c.element, "<ChannelUri>https://x.example/</ChannelUri>"))
        }
        #expect(error?.code == .badRequest)
        #expect(error?.message.contains(c.element) == true)
        #expect(error?.message.contains(c.service) == true)
        #expect(error?.message.contains("which Herald does not support") == true)
        #expect(error?.message.contains("Apple, FcmV1, Gcm, Fcm, Windows and Browser") == true)
    }

    static let invalid: [(name: String, body: Data, message: String)] = [
        (
            "malformed XML", Data("<entry><content></entry>".utf8),
            "the registration is not well-formed XML (line 1, column"
        ),
        ("empty body", Data(), "the registration is empty; an XML document is expected"),
        (
            "document type declaration",
            Data(#"<?xml version="1.0"?><!DOCTYPE entry [<!ENTITY x "y">]><entry/>"#.utf8),
            "the registration must not contain a document type declaration (<!DOCTYPE …>)"
        ),
        (
            "another root", Data("<feed/>".utf8),
            "expected an Atom <entry> holding a registration description, or the description itself; found <feed>"
        ),
        (
            "entry without content", Data(#"<entry xmlns="http://www.w3.org/2005/Atom"><title/></entry>"#.utf8),
            "the Atom entry has no <content> element; it must hold the registration description"
        ),
        (
            "empty content", Data(#"<entry><content type="application/xml"> </content></entry>"#.utf8),
            "the entry's <content> holds no registration description element"
        ),
        (
            "unknown description", F.entry("NokiaRegistrationDescription", ""),
            "unknown registration description <NokiaRegistrationDescription>; use one of Apple, FcmV1, Gcm, Fcm, Windows and Browser (each also as a Template description)"
        ),
        (
            "base type without i:type",
            Data(#"<RegistrationDescription xmlns="\#(F.connect)"><DeviceToken>00</DeviceToken></RegistrationDescription>"#.utf8),
            "<RegistrationDescription> needs an i:type attribute naming the description, such as AppleRegistrationDescription"
        ),
        (
            "missing device token", F.entry("AppleRegistrationDescription", "<Tags>a</Tags>"),
            "AppleRegistrationDescription needs a DeviceToken element with the device's APNs device token (hex)"
        ),
        (
            "empty channel", F.entry("WindowsRegistrationDescription", "<ChannelUri> </ChannelUri>"),
            "WindowsRegistrationDescription needs a ChannelUri element with the device's WNS channel URI"
        ),
        (
            "nil FCM v1 token", F.entry("FcmV1RegistrationDescription", #"<FcmV1RegistrationId i:nil="true"/>"#),
            "FcmV1RegistrationDescription needs a FcmV1RegistrationId element with the device's FCM registration token"
        ),
        (
            "device token not hex", F.entry("AppleRegistrationDescription", "<DeviceToken>xyz</DeviceToken>"),
            "DeviceToken is invalid: an APNs device token is hexadecimal (encode the token bytes as hex, two digits a byte)"
        ),
        (
            "channel not https", F.entry("WindowsRegistrationDescription", "<ChannelUri>http://x.example/</ChannelUri>"),
            "ChannelUri is invalid: a WNS channel URI is an https URL"
        ),
        (
            "browser without keys",
            F.entry("BrowserRegistrationDescription", "<Endpoint>\(F.endpoint)</Endpoint><Auth>a</Auth>"),
            "BrowserRegistrationDescription needs a P256DH element with the subscription's public key"
        ),
        (
            "browser without auth",
            F.entry("BrowserRegistrationDescription", "<Endpoint>\(F.endpoint)</Endpoint><P256DH>k</P256DH>"),
            "BrowserRegistrationDescription needs an Auth element with the subscription's authentication secret"
        ),
        (
            "invalid tag",
            F.entry("AppleRegistrationDescription", "<Tags>ok,breaking news</Tags><DeviceToken>\(F.appleToken)</DeviceToken>"),
            "tag 'breaking news' is invalid: character U+0020 at position 8 is not allowed; tags use ASCII letters, digits and _ @ # . : -"
        ),
        (
            "empty tag",
            F.entry("AppleRegistrationDescription", "<Tags>a,,b</Tags><DeviceToken>\(F.appleToken)</DeviceToken>"),
            "Tags has an empty tag; separate tags with single commas, such as 'sports,news'"
        ),
        (
            "too many tags",
            F.entry(
                "AppleRegistrationDescription",
                "<Tags>\((1...61).map { "t\($0)" }.joined(separator: ","))</Tags><DeviceToken>\(F.appleToken)</DeviceToken>"
            ),
            "a registration has at most 60 tags; 61 were given"
        ),
        (
            "bad expiration",
            F.entry(
                "AppleRegistrationDescription",
                "<ExpirationTime>tomorrow</ExpirationTime><DeviceToken>\(F.appleToken)</DeviceToken>"
            ),
            "ExpirationTime 'tomorrow' is not an xsd:dateTime such as 2030-01-31T12:00:00Z"
        ),
        (
            "bad push variables",
            F.entry(
                "AppleRegistrationDescription",
                #"<PushVariables>{"n":1}</PushVariables><DeviceToken>\#(F.appleToken)</DeviceToken>"#
            ),
            #"PushVariables is not a JSON object of string values, such as {"name":"value"}"#
        ),
        (
            "bad registration id",
            F.entry(
                "AppleRegistrationDescription",
                "<RegistrationId>a/b</RegistrationId><DeviceToken>\(F.appleToken)</DeviceToken>"
            ),
            "RegistrationId 'a/b' is not a registration id: 1 to 128 letters, digits, '-', '_' or '.'"
        ),
        (
            "template without body",
            F.entry("AppleTemplateRegistrationDescription", "<DeviceToken>\(F.appleToken)</DeviceToken><TemplateName>t</TemplateName>"),
            "AppleTemplateRegistrationDescription needs a BodyTemplate element with the template's body"
        ),
        (
            "template body that cannot be rendered",
            F.entry(
                "AppleTemplateRegistrationDescription",
                #"<DeviceToken>\#(F.appleToken)</DeviceToken><BodyTemplate>{"aps":{"alert":"$(a"}}</BodyTemplate>"#
            ),
            "BodyTemplate: "
        ),
        (
            "template name too long",
            F.entry(
                "FcmV1TemplateRegistrationDescription",
                "<FcmV1RegistrationId>\(F.fcmToken)</FcmV1RegistrationId><BodyTemplate>{}</BodyTemplate>"
                    + "<TemplateName>\(String(repeating: "n", count: 201))</TemplateName>"
            ),
            "TemplateName is 201 characters long; a template name has at most 200"
        ),
        (
            "header without name",
            F.entry(
                "WindowsTemplateRegistrationDescription",
                "<ChannelUri>\(F.endpoint)</ChannelUri><BodyTemplate>&lt;toast/&gt;</BodyTemplate>"
                    + "<WnsHeaders><WnsHeader><Value>wns/toast</Value></WnsHeader></WnsHeaders>"
            ),
            "each WnsHeader in WnsHeaders needs a Header element with the header's name"
        ),
        (
            "too deep",
            Data((String(repeating: "<a>", count: 40) + String(repeating: "</a>", count: 40)).utf8),
            "the registration is nested more than 32 elements deep"
        ),
    ]

    @Test(arguments: invalid)
    func refusesWithAMessageNamingTheProblem(_ c: (name: String, body: Data, message: String)) {
        let error = #expect(throws: HeraldError.self, "\(c.name)") { try RegistrationDescription.parse(c.body) }
        #expect(error?.code == .badRequest, "\(c.name)")
        #expect(error?.message.hasPrefix(c.message) == true, "\(c.name): \(error?.message ?? "-")")
    }
}
