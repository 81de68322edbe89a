import Foundation
import HeraldCore
import HeraldEmulator
import HeraldServer
import Testing

/// Registrations on the wire: Atom entries in, Atom entries and feeds out, with the element
/// order the .NET SDK's serializer needs, ETags, paging and handle filters.
@Suite struct HubAPIRegistrationTests {
    static let hub = HubTestServer.hubName
    static let version = HubTestServer.apiVersion

    /// The description elements every response starts with, in this order.
    static let common = ["ETag", "ExpirationTime", "RegistrationId", "Tags"]

    @Test func anIDThenCreateOrUpdateWithETags() async throws {
        try await HubTestServer.withServer { server in
            // POST registrationids: 201 and a Location whose last segment is the id.
            let issued = try await server.wire(.POST, "/\(Self.hub)/registrationids?\(Self.version)")
            #expect(issued.status == 201)
            let location = try #require(issued.header("Location"))
            #expect(location.hasPrefix("\(server.baseURL)/\(Self.hub)/registrationids/"))
            let id = try HubTestServer.lastSegment(of: location, under: "registrationids")
            #expect(id.wholeMatch(of: /[0-9]+-[0-9]+-[0-9]+/) != nil, "id \(id) has the cloud hub's shape")

            let token = server.herald.apns.registerDevice(topic: TestHerald.topic)
            let description =
                Atom.open("AppleRegistrationDescription") + "<Tags>sports</Tags><DeviceToken>\(token)</DeviceToken></AppleRegistrationDescription>"

            // PUT with that id: 200, ETag W/"1", the entry with its self link.
            let created = try await server.putRegistration(id: id, description)
            #expect(created.status == 200, "\(created.text)")
            #expect(created.header("ETag") == #"W/"1""#)
            #expect(created.header("Content-Type")?.lowercased().hasPrefix("application/atom+xml") == true)
            #expect(created.header("Content-Location")?.contains("/\(Self.hub)/registrations/\(id)") == true)
            let entry = try created.xml()
            #expect(entry.name == "entry")
            #expect(entry.attributes["a:etag"] == #"W/"1""#)
            #expect(entry.attributes["xmlns"] == HubTestServer.atomNamespace)
            #expect(entry.childNames == ["id", "title", "published", "updated", "link", "content"])
            #expect(entry.value("title") == id)
            #expect(entry.child("link")?.attributes["rel"] == "self")
            #expect(entry.child("link")?.attributes["href"]?.contains("/\(Self.hub)/registrations/\(id)") == true)
            #expect(entry.child("content")?.attributes["type"] == "application/xml")
            let saved = try #require(entry.child("content")?.child("AppleRegistrationDescription"))
            #expect(saved.value("ETag") == "1")
            #expect(saved.value("RegistrationId") == id)
            #expect(saved.value("DeviceToken") == token.uppercased())
            #expect(saved.value("ExpirationTime")?.hasPrefix("9999-12-31T23:59:59") == true)

            // PUT again: version 2. A stale If-Match: 412. The current one: version 3.
            #expect(try await server.putRegistration(id: id, description).header("ETag") == #"W/"2""#)
            expectHubError(try await server.putRegistration(id: id, description, ifMatch: #""1""#), 412)
            let matched = try await server.putRegistration(id: id, description, ifMatch: #""2""#)
            #expect(matched.status == 200 && matched.header("ETag") == #"W/"3""#)
            let weak = try await server.putRegistration(id: id, description, ifMatch: #"W/"3""#)
            #expect(weak.status == 200 && weak.header("ETag") == #"W/"4""#)

            // An update (If-Match *) of an id that has no registration: 404. A PUT with an id
            // the hub never issued: 410 Gone, with the service's words.
            let unused = try await server.newRegistrationID()
            expectHubError(try await server.putRegistration(id: unused, description, ifMatch: "*"), 404)
            let gone = try await server.putRegistration(id: "1234567890123456789-1234567890123456789-1", description)
            #expect(expectHubError(gone, 410).contains("Cannot use specified location, use a different registrationid"))
            // The unused id still works for a create.
            #expect(try await server.putRegistration(id: unused, description).header("ETag") == #"W/"1""#)

            // GET, then DELETE (stale If-Match first), then both are 404.
            let read = try await server.wire(.GET, "/\(Self.hub)/registrations/\(id)?\(Self.version)")
            #expect(read.status == 200 && read.header("ETag") == #"W/"4""#)
            #expect(try read.xml().at("content", "AppleRegistrationDescription", "Tags")?.text == "sports")
            let stale = try await server.wire(.DELETE, "/\(Self.hub)/registrations/\(id)?\(Self.version)", headers: [("If-Match", #""1""#)])
            expectHubError(stale, 412)
            let deleted = try await server.wire(.DELETE, "/\(Self.hub)/registrations/\(id)?\(Self.version)", headers: [("If-Match", "*")])
            #expect(deleted.status == 200)
            expectHubError(try await server.wire(.GET, "/\(Self.hub)/registrations/\(id)?\(Self.version)"), 404)
            expectHubError(try await server.wire(.DELETE, "/\(Self.hub)/registrations/\(id)?\(Self.version)", headers: [("If-Match", "*")]), 404)
        }
    }

    @Test func postCreatesWithAnIDTheHubPicks() async throws {
        try await HubTestServer.withServer { server in
            let token = server.herald.fcm.registerDevice()
            let response = try await server.wire(
                .POST, "/\(Self.hub)/registrations?\(Self.version)",
                headers: [("Content-Type", "application/atom+xml;type=entry;charset=utf-8")],
                body: Atom.entry(
                    Atom.open("FcmV1RegistrationDescription") + "<FcmV1RegistrationId>\(token)</FcmV1RegistrationId></FcmV1RegistrationDescription>")
            )
            #expect([200, 201].contains(response.status), "\(response.text)")
            #expect(response.header("ETag") == #"W/"1""#)
            let id = try #require(try response.xml().value("title"))
            #expect(response.header("Content-Location")?.contains("/\(Self.hub)/registrations/\(id)") == true)
            #expect(try await server.wire(.GET, "/\(Self.hub)/registrations/\(id)?\(Self.version)").status == 200)
        }
    }

    /// One registration of each kind, and the elements of its description as the hub returns
    /// them: the .NET SDK's data contracts read members in this order and skip the rest.
    struct Kind: Sendable, CustomTestStringConvertible {
        var name: String
        /// The description sent, from the server's emulators.
        var body: @Sendable (HubTestServer) -> String
        /// The description element the hub answers with.
        var answer: String
        var order: [String]

        var testDescription: String { name }

        static let all: [Kind] = [
            Kind(
                name: "Apple native",
                body: { server in
                    Atom.open("AppleRegistrationDescription")
                        + #"<Tags>sports,news</Tags><PushVariables>{"name":"Alice"}</PushVariables>"#
                        + "<DeviceToken>\(server.herald.apns.registerDevice(topic: TestHerald.topic))</DeviceToken></AppleRegistrationDescription>"
                },
                answer: "AppleRegistrationDescription",
                order: common + ["PushVariables", "DeviceToken"]
            ),
            Kind(
                name: "Apple template",
                body: { server in
                    Atom.open("AppleTemplateRegistrationDescription")
                        + "<Tags>sports</Tags><DeviceToken>\(server.herald.apns.registerDevice(topic: TestHerald.topic))</DeviceToken>"
                        + #"<BodyTemplate><![CDATA[{"aps":{"alert":"$(message)"}}]]></BodyTemplate><TemplateName>greeting</TemplateName>"#
                        + "<Priority>10</Priority><ApnsHeaders><ApnsHeader><Header>apns-push-type</Header><Value>alert</Value></ApnsHeader></ApnsHeaders>"
                        + "</AppleTemplateRegistrationDescription>"
                },
                answer: "AppleTemplateRegistrationDescription",
                order: common + ["DeviceToken", "BodyTemplate", "Expiry", "TemplateName", "Priority", "ApnsHeaders"]
            ),
            Kind(
                name: "FCM v1 native",
                body: { server in
                    Atom.open("FcmV1RegistrationDescription")
                        + "<Tags>sports</Tags><FcmV1RegistrationId>\(server.herald.fcm.registerDevice())</FcmV1RegistrationId></FcmV1RegistrationDescription>"
                },
                answer: "FcmV1RegistrationDescription",
                order: common + ["FcmV1RegistrationId"]
            ),
            Kind(
                name: "FCM v1 template",
                body: { server in
                    Atom.open("FcmV1TemplateRegistrationDescription")
                        + "<Tags>sports</Tags><FcmV1RegistrationId>\(server.herald.fcm.registerDevice())</FcmV1RegistrationId>"
                        + #"<BodyTemplate><![CDATA[{"message":{"data":{"m":"$(message)"}}}]]></BodyTemplate><TemplateName>data</TemplateName>"#
                        + "</FcmV1TemplateRegistrationDescription>"
                },
                answer: "FcmV1TemplateRegistrationDescription",
                order: common + ["FcmV1RegistrationId", "BodyTemplate", "TemplateName"]
            ),
            Kind(
                name: "GCM native",
                body: { server in
                    Atom.open("GcmRegistrationDescription")
                        + "<Tags>sports</Tags><GcmRegistrationId>\(server.herald.fcm.registerDevice())</GcmRegistrationId></GcmRegistrationDescription>"
                },
                answer: "GcmRegistrationDescription",
                order: common + ["GcmRegistrationId"]
            ),
            Kind(
                name: "legacy FCM, stored as GCM",
                body: { server in
                    Atom.open("FcmRegistrationDescription")
                        + "<Tags>sports</Tags><FcmRegistrationId>\(server.herald.fcm.registerDevice())</FcmRegistrationId></FcmRegistrationDescription>"
                },
                answer: "GcmRegistrationDescription",
                order: common + ["GcmRegistrationId"]
            ),
            Kind(
                name: "Windows template",
                body: { server in
                    Atom.open("WindowsTemplateRegistrationDescription")
                        + "<Tags>sports</Tags><ChannelUri>\(Atom.escaped(server.herald.wns.registerChannel()))</ChannelUri>"
                        + #"<BodyTemplate><![CDATA[<toast><visual><binding template="ToastText01"><text id="1">$(message)</text></binding></visual></toast>]]></BodyTemplate>"#
                        + "<WnsHeaders><WnsHeader><Header>X-WNS-Type</Header><Value>wns/toast</Value></WnsHeader></WnsHeaders>"
                        + "<TemplateName>toast</TemplateName></WindowsTemplateRegistrationDescription>"
                },
                answer: "WindowsTemplateRegistrationDescription",
                order: common + ["ChannelUri", "BodyTemplate", "WnsHeaders", "TemplateName"]
            ),
            Kind(
                name: "Browser",
                body: { server in
                    let subscription = server.herald.webPush.subscribe()
                    return Atom.open("BrowserRegistrationDescription")
                        + "<Tags>sports</Tags><Endpoint>\(Atom.escaped(subscription.endpoint))</Endpoint>"
                        + "<P256DH>\(subscription.p256dh)</P256DH><Auth>\(subscription.auth)</Auth></BrowserRegistrationDescription>"
                },
                answer: "BrowserRegistrationDescription",
                order: common + ["Endpoint", "P256DH", "Auth"]
            ),
        ]
    }

    @Test(arguments: Kind.all)
    func descriptionsComeBackInContractOrder(kind: Kind) async throws {
        try await HubTestServer.withServer { server in
            let sent = kind.body(server)
            let (id, created) = try await server.createRegistration(sent)
            let read = try await server.wire(.GET, "/\(Self.hub)/registrations/\(id)?\(Self.version)")
            for response in [created, read] {
                let content = try #require(try response.xml().child("content"))
                #expect(content.childNames == [kind.answer])
                let description = try #require(content.child(kind.answer))
                #expect(description.attributes["xmlns"] == HubTestServer.registrationNamespace)
                #expect(description.attributes["xmlns:i"] == HubTestServer.instanceNamespace)
                #expect(description.childNames == kind.order)
                #expect(description.value("RegistrationId") == id)
                if let body = description.child("BodyTemplate") {
                    #expect(body.hasCDATA, "BodyTemplate travels as CDATA")
                    #expect(sent.contains(body.text))
                }
                if let expiry = description.child("Expiry") {
                    #expect(expiry.attributes["i:nil"] == "true")
                }
                if let headers = description.child("WnsHeaders") {
                    #expect(headers.childNames == ["WnsHeader"])
                    #expect(headers.child("WnsHeader")?.childNames == ["Header", "Value"])
                    #expect(headers.at("WnsHeader", "Value")?.text == "wns/toast")
                }
                if let headers = description.child("ApnsHeaders") {
                    #expect(headers.at("ApnsHeader", "Header")?.text == "apns-push-type")
                }
                if let variables = description.value("PushVariables") {
                    #expect(try JSONSerialization.jsonObject(with: Data(variables.utf8)) as? [String: String] == ["name": "Alice"])
                }
                let tags = try #require(description.value("Tags"))
                #expect(Set(tags.split(separator: ",").map(String.init)) == Set(kind.name == "Apple native" ? ["sports", "news"] : ["sports"]))
            }
        }
    }

    @Test func listingsPageWithContinuationTokensAndNextLinks() async throws {
        try await HubTestServer.withServer { server in
            var created: [String] = []
            for _ in 0..<5 {
                let token = server.herald.apns.registerDevice(topic: TestHerald.topic)
                created.append(
                    try await server.createRegistration(
                        Atom.open("AppleRegistrationDescription") + "<Tags>paged</Tags><DeviceToken>\(token)</DeviceToken></AppleRegistrationDescription>"
                    ).id)
            }

            // Following <link rel="next"> from the first page to the last.
            var seen: [String] = []
            var next: String? = "/\(Self.hub)/registrations?$top=2&\(Self.version)"
            var pages = 0
            while let target = next, pages < 10 {
                pages += 1
                let page = try await server.wire(.GET, target)
                #expect(page.status == 200, "\(page.text)")
                #expect(page.header("Content-Type")?.lowercased().hasPrefix("application/atom+xml") == true)
                let feed = try page.xml()
                #expect(feed.name == "feed")
                let entries = feed.children("entry")
                #expect(entries.count <= 2)
                seen += entries.compactMap { $0.value("title") }
                let link = feed.children("link").first { $0.attributes["rel"] == "next" }?.attributes["href"]
                let token = page.header("X-MS-ContinuationToken")
                #expect((link == nil) == (token == nil), "the header and the next link come together")
                if let link, let token {
                    #expect(link.contains("continuationtoken=\(token)"))
                }
                next = link
            }
            #expect(pages >= 3)
            #expect(seen.count == Set(seen).count, "no registration twice: \(seen)")
            #expect(Set(seen) == Set(created))

            // The same with the header's token, as the .NET SDK passes it back.
            var byHeader: [String] = []
            var token: String?
            repeat {
                let query = token.map { "&continuationtoken=\($0)" } ?? ""
                let page = try await server.wire(.GET, "/\(Self.hub)/tags/paged/registrations?$top=2\(query)&\(Self.version)")
                byHeader += try page.xml().children("entry").compactMap { $0.value("title") }
                token = page.header("X-MS-ContinuationToken")
            } while token != nil && byHeader.count < 10
            #expect(byHeader.sorted() == created.sorted())
        }
    }

    @Test func handleFiltersMatchAsTheSDKsSendThem() async throws {
        try await HubTestServer.withServer { server in
            let token = server.herald.apns.registerDevice(topic: TestHerald.topic)
            #expect(token == token.lowercased())
            let (apple, _) = try await server.createRegistration(
                Atom.open("AppleRegistrationDescription") + "<DeviceToken>\(token)</DeviceToken></AppleRegistrationDescription>"
            )
            let fcmToken = server.herald.fcm.registerDevice()
            let (fcm, _) = try await server.createRegistration(
                Atom.open("GcmRegistrationDescription") + "<GcmRegistrationId>\(fcmToken)</GcmRegistrationId></GcmRegistrationDescription>"
            )

            func ids(_ filter: String) async throws -> [String] {
                let encoded = try #require(filter.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
                let response = try await server.wire(.GET, "/\(Self.hub)/registrations?$filter=\(encoded)&\(Self.version)", auth: .listen)
                #expect(response.status == 200, "\(filter): \(response.text)")
                return try response.xml().children("entry").compactMap { $0.value("title") }
            }
            // The SDKs send APNs tokens in upper case; the hub keeps them in lower case.
            #expect(try await ids("DeviceToken eq '\(token.uppercased())'") == [apple])
            #expect(try await ids("ChannelUri eq '\(token.uppercased())'") == [apple])
            #expect(try await ids("GcmRegistrationId eq '\(fcmToken)'") == [fcm])
            #expect(try await ids("ChannelUri eq '\(fcmToken)'") == [fcm])
            #expect(try await ids("DeviceToken eq 'ABCDEF0123'").isEmpty)
            // Not a filter the hub knows.
            let odd = try await server.wire(.GET, "/\(Self.hub)/registrations?$filter=Tags%20eq%20'x'&\(Self.version)", auth: .listen)
            expectHubError(odd, 400)
        }
    }

    /// How each SDK puts a handle filter into the query.
    enum FilterEncoding: String, CaseIterable, CustomTestStringConvertible {
        /// `"&$filter=" + HttpUtility.UrlEncode("ChannelUri eq '…'")`: `+` for spaces.
        case dotNet
        /// `URLEncoder.encode("ChannelUri eq '…'", "UTF-8")`: `+` for spaces, upper-case hex.
        case java
        /// `url.searchParams.set("$filter", …)`: the key itself encoded (`%24filter`), `+` for
        /// spaces, and per platform a filter whose channel URI or endpoint is
        /// `encodeURIComponent`-encoded once more; browsers add `and P256DH eq … and Auth eq …`.
        case javaScript

        var testDescription: String { rawValue }

        /// `name=value` for the query.
        func query(platform: String, handle: String, keys: WebPushKeys? = nil) -> String {
            switch self {
            case .dotNet:
                return "$filter=" + SDKSignature.formEncoded("ChannelUri eq '\(handle)'")
            case .java:
                return "$filter=" + SDKSignature.percentEncoded("ChannelUri eq '\(handle)'", unreserved: "*-._", lowercaseHex: false, spaceAsPlus: true)
            case .javaScript:
                let filter: String
                switch platform {
                case "apple": filter = "DeviceToken eq '\(handle.uppercased())'"
                case "windows": filter = "ChannelUri eq '\(SDKSignature.uriComponentEncoded(handle))'"
                case "browser":
                    filter = "Endpoint eq '\(SDKSignature.uriComponentEncoded(handle))' and P256DH eq '\(keys?.p256dh ?? "")' and Auth eq '\(keys?.auth ?? "")'"
                default: filter = "FcmV1RegistrationId eq '\(handle)'"
                }
                return "%24filter=" + SDKSignature.percentEncoded(filter, unreserved: "*-._", lowercaseHex: false, spaceAsPlus: true)
            }
        }
    }

    @Test(arguments: FilterEncoding.allCases)
    func handleFiltersAsEachSDKEncodesThem(encoding: FilterEncoding) async throws {
        try await HubTestServer.withServer { server in
            let herald = server.herald
            let token = herald.apns.registerDevice(topic: TestHerald.topic)
            let channel = herald.wns.registerChannel()
            let fcmToken = herald.fcm.registerDevice()
            let subscription = herald.webPush.subscribe()
            var ids: [String: String] = [:]
            ids["apple"] = try await server.createRegistration(
                Atom.open("AppleRegistrationDescription") + "<DeviceToken>\(token)</DeviceToken></AppleRegistrationDescription>"
            ).id
            ids["windows"] = try await server.createRegistration(
                Atom.open("WindowsRegistrationDescription") + "<ChannelUri>\(Atom.escaped(channel))</ChannelUri></WindowsRegistrationDescription>"
            ).id
            ids["fcmv1"] = try await server.createRegistration(
                Atom.open("FcmV1RegistrationDescription") + "<FcmV1RegistrationId>\(fcmToken)</FcmV1RegistrationId></FcmV1RegistrationDescription>"
            ).id
            ids["browser"] = try await server.createRegistration(
                Atom.open("BrowserRegistrationDescription") + "<Endpoint>\(Atom.escaped(subscription.endpoint))</Endpoint>"
                    + "<P256DH>\(subscription.p256dh)</P256DH><Auth>\(subscription.auth)</Auth></BrowserRegistrationDescription>"
            ).id
            let handles = ["apple": token.uppercased(), "windows": channel, "fcmv1": fcmToken, "browser": subscription.endpoint]
            for (platform, handle) in handles.sorted(by: { $0.key < $1.key }) {
                let query = encoding.query(platform: platform, handle: handle, keys: subscription.keys)
                // A device asks with its Listen key: only a filtered listing is allowed.
                let response = try await server.wire(.GET, "/\(Self.hub)/registrations?\(Self.version)&\(query)", auth: .listen)
                #expect(response.status == 200, "\(platform): \(query) → \(response.status) \(response.text.prefix(300))")
                guard response.status == 200 else { continue }
                let found = try response.xml().children("entry").compactMap { $0.value("title") }
                #expect(found == [ids[platform]!], "\(platform): \(query)")
            }
            if encoding == .javaScript {
                // `$top` goes through `URLSearchParams` too.
                let page = try await server.wire(.GET, "/\(Self.hub)/registrations?\(Self.version)&%24top=1")
                #expect(try page.xml().children("entry").count == 1)
            }
        }
    }

    @Test func registrationsOfATag() async throws {
        try await HubTestServer.withServer { server in
            var ids: [String: String] = [:]
            for tags in ["sports", "sports,username:alice", "news"] {
                let token = server.herald.apns.registerDevice(topic: TestHerald.topic)
                ids[tags] = try await server.createRegistration(
                    Atom.open("AppleRegistrationDescription") + "<Tags>\(tags)</Tags><DeviceToken>\(token)</DeviceToken></AppleRegistrationDescription>"
                ).id
            }
            func listed(_ tag: String) async throws -> Set<String> {
                let response = try await server.wire(.GET, "/\(Self.hub)/tags/\(tag)/registrations?\(Self.version)")
                #expect(response.status == 200, "\(response.text)")
                return Set(try response.xml().children("entry").compactMap { $0.value("title") })
            }
            #expect(try await listed("sports") == [ids["sports"]!, ids["sports,username:alice"]!])
            #expect(try await listed("username%3Aalice") == [ids["sports,username:alice"]!])
            // The .NET SDK puts the tag into the path as it is.
            #expect(try await listed("username:alice") == [ids["sports,username:alice"]!])
            #expect(try await listed("nobody").isEmpty)
        }
    }

    /// Bodies the hub cannot take: 400 with the error document, and nothing stored.
    @Test(arguments: [
        ("malformed XML", "<entry xmlns=\"http://www.w3.org/2005/Atom\"><content type=\"application/xml\"><AppleRegistrationDescription>"),
        ("not an entry", "<feed xmlns=\"http://www.w3.org/2005/Atom\"/>"),
        (
            "MPNS",
            #"<entry xmlns="http://www.w3.org/2005/Atom"><content type="application/xml"><MpnsRegistrationDescription xmlns:i="http://www.w3.org/2001/XMLSchema-instance" xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect"><ChannelUri>https://db3.notify.live.net/throttledthirdparty/01.00/AAF</ChannelUri></MpnsRegistrationDescription></content></entry>"#
        ),
        (
            "no device token",
            #"<entry xmlns="http://www.w3.org/2005/Atom"><content type="application/xml"><AppleRegistrationDescription xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect"><Tags>a</Tags></AppleRegistrationDescription></content></entry>"#
        ),
        (
            "invalid tag",
            #"<entry xmlns="http://www.w3.org/2005/Atom"><content type="application/xml"><GcmRegistrationDescription xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect"><Tags>no spaces allowed</Tags><GcmRegistrationId>abc</GcmRegistrationId></GcmRegistrationDescription></content></entry>"#
        ),
    ])
    func unacceptableBodiesAreBadRequests(name: String, body: String) async throws {
        try await HubTestServer.withServer { server in
            let id = try await server.newRegistrationID()
            let response = try await server.wire(
                .PUT, "/\(Self.hub)/registrations/\(id)?\(Self.version)",
                headers: [("Content-Type", "application/atom+xml;type=entry;charset=utf-8")], body: Data(body.utf8)
            )
            let detail = expectHubError(response, 400)
            if name == "MPNS" { #expect(detail.contains("Mpns")) }
            expectHubError(try await server.wire(.GET, "/\(Self.hub)/registrations/\(id)?\(Self.version)"), 404)
            let posted = try await server.wire(
                .POST, "/\(Self.hub)/registrations?\(Self.version)",
                headers: [("Content-Type", "application/atom+xml;type=entry;charset=utf-8")], body: Data(body.utf8)
            )
            expectHubError(posted, 400)
            let all = try await server.wire(.GET, "/\(Self.hub)/registrations?\(Self.version)")
            #expect(try all.xml().children("entry").isEmpty)
        }
    }
}
