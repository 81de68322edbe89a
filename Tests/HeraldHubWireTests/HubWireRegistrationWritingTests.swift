import Foundation
import HeraldCore
import Testing

@testable import HeraldHubWire

@Suite("Hub wire: writing registrations")
struct HubWireRegistrationWritingTests {
    typealias F = HubWireFixtures

    static let hubURL = "https://sdk-sample-namespace.servicebus.windows.net/sdk-sample-nh"
    /// 2018-11-07T00:18:37Z
    static let created = Date(timeIntervalSince1970: 1_541_549_917)
    static let updated = Date(timeIntervalSince1970: 1_541_636_317)

    /// One fully populated registration of every kind the hub writes.
    static let registrations: [Registration] = [
        Registration(
            id: "1-2-1", platform: .apns, handle: F.appleToken.lowercased(), tags: ["b", "a"],
            expiresAt: Date(timeIntervalSince1970: 1_900_000_000.25), pushVariables: ["k": "v"],
            version: 3, createdAt: created, updatedAt: updated
        ),
        Registration(
            id: "1-2-2", platform: .apns, handle: F.appleToken.lowercased(), tags: ["t"],
            template: RegistrationTemplate(
                name: "Alert", body: F.apnsBody,
                headers: [.init(name: "apns-push-type", value: "alert"), .init(name: "apns-priority", value: "5")],
                expiry: "$(expiry)", priority: "5"
            ),
            pushVariables: ["a": "1", "b": "2"], version: 2, createdAt: created, updatedAt: updated
        ),
        Registration(id: "1-2-3", platform: .fcm, handle: F.fcmToken, createdAt: created, updatedAt: created),
        Registration(
            id: "1-2-4", platform: .fcm, handle: F.fcmToken, tags: ["x"],
            template: RegistrationTemplate(name: "V1", body: F.fcmBody), createdAt: created, updatedAt: created
        ),
        Registration(
            id: "1-2-5", platform: .fcm, handle: F.fcmToken, legacyGCM: true, createdAt: created, updatedAt: created
        ),
        Registration(
            id: "1-2-6", platform: .fcm, handle: F.fcmToken, template: RegistrationTemplate(body: "{}"),
            legacyGCM: true, createdAt: created, updatedAt: created
        ),
        Registration(id: "1-2-7", platform: .wns, handle: F.channel, createdAt: created, updatedAt: created),
        Registration(
            id: "1-2-8", platform: .wns, handle: F.channel, tags: ["$UserId:{ann=1}"],
            template: RegistrationTemplate(
                name: "Toast", body: F.wnsBody, headers: [.init(name: "X-WNS-Type", value: "wns/toast")]
            ),
            createdAt: created, updatedAt: created
        ),
        Registration(
            id: "1-2-9", platform: .webpush, handle: F.endpoint, webPushKeys: WebPushKeys(p256dh: F.p256dh, auth: F.auth),
            createdAt: created, updatedAt: created
        ),
        Registration(
            id: "1-2-10", platform: .webpush, handle: F.endpoint,
            webPushKeys: WebPushKeys(p256dh: F.p256dh, auth: F.auth),
            template: RegistrationTemplate(name: "Web", body: #"{"title":"$(title)"}"#),
            createdAt: created, updatedAt: created
        ),
    ]

    @Test func writesTheEntryAsTheServiceDoes() {
        // The recorded answer to creating an APNs template registration; the only differences
        // are `Z` on ExpirationTime (the service writes both forms) and quotes escaped in text.
        let r = Registration(
            id: "4497227228776861650-7267172778370643468-3", platform: .apns, handle: F.appleToken.lowercased(),
            tags: ["tag1"], template: RegistrationTemplate(name: "Template Name", body: #"{"aps":{"alert":"alert!"}}"#),
            pushVariables: ["var1": "value1"], version: 1, createdAt: Self.created, updatedAt: Self.created
        )
        let url = "\(Self.hubURL)/registrations/4497227228776861650-7267172778370643468-3?api-version=2017-04"
        let expected =
            #"<entry a:etag="W/&quot;1&quot;" xmlns="http://www.w3.org/2005/Atom" xmlns:a="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata">"#
            + #"<id>\#(url)</id><title type="text">4497227228776861650-7267172778370643468-3</title>"#
            + #"<published>2018-11-07T00:18:37Z</published><updated>2018-11-07T00:18:37Z</updated>"#
            + #"<link rel="self" href="\#(url)"/><content type="application/xml">"#
            + #"<AppleTemplateRegistrationDescription xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect" xmlns:i="http://www.w3.org/2001/XMLSchema-instance">"#
            + #"<ETag>1</ETag><ExpirationTime>9999-12-31T23:59:59.999Z</ExpirationTime>"#
            + #"<RegistrationId>4497227228776861650-7267172778370643468-3</RegistrationId><Tags>tag1</Tags>"#
            + #"<PushVariables>{&quot;var1&quot;:&quot;value1&quot;}</PushVariables>"#
            + #"<DeviceToken>62BCD3484834B7E2DC56733AC5509259230CC1BA82BA1AE7D06E91908A05A8FA</DeviceToken>"#
            + #"<BodyTemplate><![CDATA[{"aps":{"alert":"alert!"}}]]></BodyTemplate><Expiry i:nil="true"/>"#
            + #"<TemplateName>Template Name</TemplateName><ApnsHeaders/></AppleTemplateRegistrationDescription>"#
            + #"</content></entry>"#
        let written = String(decoding: RegistrationDescription.entry(r, hubURL: Self.hubURL, apiVersion: "2017-04"), as: UTF8.self)
        #expect(written == expected)
    }

    @Test func writesTheDefaultAPIVersionAndTruncatesAtomDates() throws {
        var r = Self.registrations[2]
        r.createdAt = Date(timeIntervalSince1970: 1_541_549_917.75)
        let entry = try ParsedXMLElement.parse(RegistrationDescription.entry(r, hubURL: "https://h/x"), document: "t")
        #expect(entry.value("id") == "https://h/x/registrations/1-2-3?api-version=2020-06")
        #expect(entry.value("published") == "2018-11-07T00:18:37Z")
        #expect(entry.attributes["etag"] == #"W/"1""#)
    }

    static let requiredOrder: [(id: String, element: String, members: [String])] = [
        ("1-2-1", "AppleRegistrationDescription", ["ETag", "ExpirationTime", "RegistrationId", "Tags", "PushVariables", "DeviceToken"]),
        (
            "1-2-2", "AppleTemplateRegistrationDescription",
            [
                "ETag", "ExpirationTime", "RegistrationId", "Tags", "PushVariables", "DeviceToken", "BodyTemplate",
                "Expiry", "TemplateName", "Priority", "ApnsHeaders",
            ]
        ),
        ("1-2-3", "FcmV1RegistrationDescription", ["ETag", "ExpirationTime", "RegistrationId", "FcmV1RegistrationId"]),
        (
            "1-2-4", "FcmV1TemplateRegistrationDescription",
            ["ETag", "ExpirationTime", "RegistrationId", "Tags", "FcmV1RegistrationId", "BodyTemplate", "TemplateName"]
        ),
        ("1-2-5", "GcmRegistrationDescription", ["ETag", "ExpirationTime", "RegistrationId", "GcmRegistrationId"]),
        (
            "1-2-6", "GcmTemplateRegistrationDescription",
            ["ETag", "ExpirationTime", "RegistrationId", "GcmRegistrationId", "BodyTemplate"]
        ),
        ("1-2-7", "WindowsRegistrationDescription", ["ETag", "ExpirationTime", "RegistrationId", "ChannelUri"]),
        (
            "1-2-8", "WindowsTemplateRegistrationDescription",
            ["ETag", "ExpirationTime", "RegistrationId", "Tags", "ChannelUri", "BodyTemplate", "WnsHeaders", "TemplateName"]
        ),
        ("1-2-9", "BrowserRegistrationDescription", ["ETag", "ExpirationTime", "RegistrationId", "Endpoint", "P256DH", "Auth"]),
        (
            "1-2-10", "BrowserTemplateRegistrationDescription",
            ["ETag", "ExpirationTime", "RegistrationId", "Endpoint", "P256DH", "Auth", "BodyTemplate", "TemplateName"]
        ),
    ]

    @Test(arguments: requiredOrder)
    func writesMembersInDataContractOrder(_ c: (id: String, element: String, members: [String])) throws {
        let r = try #require(Self.registrations.first { $0.id == c.id })
        let entry = try ParsedXMLElement.parse(RegistrationDescription.entry(r, hubURL: Self.hubURL), document: "t")
        let description = try #require(entry.child("content")?.children.first)
        #expect(description.name == c.element)
        #expect(description.children.map(\.name) == c.members)
    }

    @Test func writesWnsHeadersEvenWhenThereAreNone() throws {
        var r = Self.registrations[7]
        r.template?.headers = []
        let text = String(decoding: RegistrationDescription.entry(r, hubURL: Self.hubURL), as: UTF8.self)
        #expect(text.contains("<WnsHeaders/><TemplateName>Toast</TemplateName>"))
    }

    @Test(arguments: registrations)
    func entryRoundTrips(_ r: Registration) throws {
        let back = try RegistrationDescription.parseEntry(RegistrationDescription.entry(r, hubURL: Self.hubURL))
        #expect(back == r)
    }

    @Test func feedRoundTrips() throws {
        let next = "https://h/hub/registrations?continuationtoken=abc&$top=3&api-version=2020-06"
        let data = RegistrationDescription.feed(
            Self.registrations, hubURL: Self.hubURL, selfURL: "https://h/hub/registrations?api-version=2020-06",
            nextURL: next, updated: Self.updated
        )
        #expect(try RegistrationDescription.parseFeed(data) == Self.registrations)

        let feed = try ParsedXMLElement.parse(data, document: "t")
        #expect(feed.name == "feed")
        #expect(feed.children.prefix(5).map(\.name) == ["title", "id", "updated", "link", "link"])
        #expect(feed.value("title") == "Registrations")
        #expect(feed.value("updated") == "2018-11-08T00:18:37Z")
        #expect(feed.children("link").map { $0.attributes["rel"] } == ["self", "next"])
        #expect(feed.children("link").last?.attributes["href"] == next)
        #expect(feed.children("entry").count == Self.registrations.count)
        let text = String(decoding: data, as: UTF8.self)
        #expect(text.hasPrefix(#"<feed xmlns="http://www.w3.org/2005/Atom"><title type="text">Registrations</title>"#))
        #expect(text.contains(#"<link rel="next" href="https://h/hub/registrations?continuationtoken=abc&amp;$top=3&amp;api-version=2020-06"/>"#))
        // Entries in a feed inherit the Atom namespace and declare the etag's.
        #expect(text.contains(#"<entry a:etag="W/&quot;3&quot;" xmlns:a="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"><id>"#))
    }

    @Test func feedWithoutANextPage() throws {
        let data = RegistrationDescription.feed([], hubURL: Self.hubURL, selfURL: "https://h/r", nextURL: nil)
        let feed = try ParsedXMLElement.parse(data, document: "t")
        #expect(feed.children("link").map { $0.attributes["rel"] } == ["self"])
        #expect(try RegistrationDescription.parseFeed(data) == [])
    }

    @Test(arguments: registrations)
    func requestIsWhatTheServerParses(_ r: Registration) throws {
        let request = RegistrationDescription.request(r)
        let parsed = try RegistrationDescription.parse(request)
        var expected = r
        expected.version = parsed.version
        expected.createdAt = parsed.createdAt
        expected.updatedAt = parsed.updatedAt
        #expect(parsed == expected)

        let entry = try ParsedXMLElement.parse(request, document: "t")
        #expect(entry.children.map(\.name) == ["content"])
        let description = try #require(entry.child("content")?.children.first)
        #expect(description.child("ETag") == nil)
        #expect(description.children.first?.name == (r.expiresAt == nil ? "RegistrationId" : "ExpirationTime"))
    }

    @Test func requestLeavesOutWhatIsNotSet() {
        let r = Registration(id: "", platform: .apns, handle: F.appleToken.lowercased(), template: RegistrationTemplate(body: "{}"))
        let text = String(decoding: RegistrationDescription.request(r), as: UTF8.self)
        #expect(
            text
                == #"<entry xmlns="http://www.w3.org/2005/Atom"><content type="application/xml">"#
                + #"<AppleTemplateRegistrationDescription xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect" xmlns:i="http://www.w3.org/2001/XMLSchema-instance">"#
                + #"<DeviceToken>\#(F.appleToken)</DeviceToken><BodyTemplate><![CDATA[{}]]></BodyTemplate>"#
                + #"</AppleTemplateRegistrationDescription></content></entry>"#
        )
    }

    @Test func escapesWhatMarkupWouldBreak() throws {
        let body = "{\"a\":\"]]>\",\"b\":\"<x/>&amp;\",\"c\":\"line\",\r\n\"d\":\"next ]]]>\"}"
        let r = Registration(
            id: "9-9-9", platform: .wns, handle: "https://wns.example/?a=1&b=<2>",
            template: RegistrationTemplate(name: "A&B <\"x\">", body: body, headers: [.init(name: "X-WNS-Tag", value: "<&>")]),
            pushVariables: ["q": #"<"&'>]]>"#], createdAt: Self.created, updatedAt: Self.created
        )
        let data = RegistrationDescription.entry(r, hubURL: "https://h/a&b")
        let text = String(decoding: data, as: UTF8.self)
        #expect(text.contains("<ChannelUri>https://wns.example/?a=1&amp;b=&lt;2&gt;</ChannelUri>"))
        #expect(text.contains(#"<BodyTemplate><![CDATA[{"a":"]]]]><![CDATA[>","b":"<x/>&amp;","c":"line",]]>&#13;<![CDATA["#))
        #expect(text.contains("<id>https://h/a&amp;b/registrations/9-9-9?api-version=2020-06</id>"))
        #expect(try RegistrationDescription.parseEntry(data) == r)
    }

    @Test func writesCharactersXMLCannotCarryAsReplacementCharacters() throws {
        let r = Registration(
            id: "1-1-1", platform: .fcm, handle: F.fcmToken,
            template: RegistrationTemplate(body: "{\"a\":\"x\u{1}y\u{FFFE}\"}"), pushVariables: ["k": "\u{0}"],
            createdAt: Self.created, updatedAt: Self.created
        )
        let back = try RegistrationDescription.parseEntry(RegistrationDescription.entry(r, hubURL: Self.hubURL))
        #expect(back.template?.body == "{\"a\":\"x\u{FFFD}y\u{FFFD}\"}")
        // JSON escapes control characters, so push variables carry them unchanged.
        #expect(back.pushVariables == ["k": "\u{0}"])
    }

    @Test func parseEntryReadsVersionIdAndDates() throws {
        let body = """
            <entry xmlns="http://www.w3.org/2005/Atom" xmlns:m="\(HubWireNamespace.dataServicesMetadata)" m:etag='W/"12"'>\
            <title type="text">8-8-8</title><published>2020-01-02T03:04:05Z</published>\
            <updated>2020-01-02T03:04:06.5+01:00</updated><content type="application/xml">\
            <GcmRegistrationDescription xmlns="\(F.connect)"><GcmRegistrationId>\(F.fcmToken)</GcmRegistrationId>\
            </GcmRegistrationDescription></content></entry>
            """
        let r = try RegistrationDescription.parseEntry(Data(body.utf8))
        #expect(r.id == "8-8-8")
        #expect(r.version == 12)
        #expect(r.legacyGCM)
        #expect(r.createdAt == Date(timeIntervalSince1970: 1_577_934_245))
        #expect(r.updatedAt == Date(timeIntervalSince1970: 1_577_934_246.5 - 3600))
    }

    @Test func parseEntryFallsBackToTheDescriptionsETag() throws {
        let body = """
            <entry xmlns="http://www.w3.org/2005/Atom"><content type="application/xml">\
            <FcmV1RegistrationDescription xmlns="\(F.connect)"><ETag>4</ETag><RegistrationId>1-1-1</RegistrationId>\
            <FcmV1RegistrationId>\(F.fcmToken)</FcmV1RegistrationId></FcmV1RegistrationDescription></content></entry>
            """
        let r = try RegistrationDescription.parseEntry(Data(body.utf8))
        #expect(r.version == 4)
        #expect(r.id == "1-1-1")
    }

    @Test func parseEntryAndFeedNameTheRootTheyExpected() {
        let entryError = #expect(throws: HeraldError.self) { try RegistrationDescription.parseEntry(Data("<feed/>".utf8)) }
        #expect(entryError?.message == "expected an Atom <entry> holding a registration; found <feed>")
        let feedError = #expect(throws: HeraldError.self) { try RegistrationDescription.parseFeed(Data("<entry/>".utf8)) }
        #expect(feedError?.message == "expected an Atom <feed> of registrations; found <entry>")
    }
}
