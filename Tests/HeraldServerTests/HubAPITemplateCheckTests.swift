import Foundation
import HeraldCore
import HeraldEmulator
import HeraldServer
import Testing

/// Templates that cannot render are refused when they are registered (a precise 400, nothing
/// written), and a send's body must be of the type its format takes.
@Suite struct HubAPITemplateCheckTests {
    static let hub = HubTestServer.hubName
    static let version = HubTestServer.apiVersion

    /// An unterminated expression in the body, a header value or the expiry of a template
    /// registration: 400 naming the part, and no registration.
    @Test(arguments: [
        ("<BodyTemplate><![CDATA[{\"aps\":{\"alert\":\"$(a\"}}]]></BodyTemplate>", "BodyTemplate: "),
        ("<BodyTemplate><![CDATA[{\"aps\":{\"alert\":\"$(a)\"}}]]></BodyTemplate><Expiry>$(when</Expiry>", "Expiry: "),
        (
            "<BodyTemplate><![CDATA[{\"aps\":{\"alert\":\"$(a)\"}}]]></BodyTemplate><ApnsHeaders><ApnsHeader><Header>apns-collapse-id</Header><Value>{'x' + $(id}</Value></ApnsHeader></ApnsHeaders>",
            "apns-collapse-id: "
        ),
    ])
    func aTemplateRegistrationThatCannotRenderIsRefused(template: String, part: String) async throws {
        try await HubTestServer.withServer { server in
            let token = server.herald.apns.registerDevice(topic: TestHerald.topic)
            let description =
                Atom.open("AppleTemplateRegistrationDescription")
                + "<Tags>t</Tags><DeviceToken>\(token)</DeviceToken>\(template)</AppleTemplateRegistrationDescription>"
            let id = try await server.newRegistrationID()
            let detail = expectHubError(try await server.putRegistration(id: id, description), 400)
            #expect(detail.contains(part), "\(detail)")
            #expect(detail.contains("invalid expression"), "\(detail)")
            let posted = try await server.wire(
                .POST, "/\(Self.hub)/registrations?\(Self.version)", headers: [("Content-Type", "application/atom+xml;type=entry;charset=utf-8")],
                body: Atom.entry(description)
            )
            expectHubError(posted, 400)
            expectHubError(try await server.wire(.GET, "/\(Self.hub)/registrations/\(id)?\(Self.version)"), 404)
            let all = try await server.wire(.GET, "/\(Self.hub)/registrations?\(Self.version)")
            #expect(try all.xml().children("entry").isEmpty)
        }
    }

    /// The same for an installation's template: its header values and expiry too.
    @Test func anInstallationTemplateThatCannotRenderIsRefused() async throws {
        try await HubTestServer.withServer { server in
            let token = server.herald.apns.registerDevice(topic: TestHerald.topic)
            let put = { (template: String) in
                try await server.wire(
                    .PUT, "/\(Self.hub)/installations/i1?\(Self.version)", headers: [("Content-Type", "application/json")],
                    body: Data(#"{"installationId":"i1","platform":"apns","pushChannel":"\#(token)","templates":{"t":\#(template)}}"#.utf8)
                )
            }
            for (template, path) in [
                (#"{"body":"{\"aps\":{\"alert\":\"$(a\"}}"}"#, #"templates["t"].body: "#),
                (#"{"body":"{\"aps\":{}}","headers":{"apns-collapse-id":"$(id"}}"#, #"templates["t"].headers.apns-collapse-id: "#),
                (##"{"body":"{\"aps\":{}}","expiry":"#(when"}"##, #"templates["t"].expiry: "#),
            ] {
                let detail = expectHubError(try await put(template), 400)
                #expect(detail.contains(path), "\(detail)")
            }
            expectHubError(try await server.wire(.GET, "/\(Self.hub)/installations/i1?\(Self.version)"), 404)
            #expect(try await put(#"{"body":"{\"aps\":{\"alert\":\"$(a)\"}}","headers":{"apns-collapse-id":"$(id)"}}"#).status == 200)
            // A patch that breaks the template is refused and leaves it as it was.
            let patch = try await server.wire(
                .PATCH, "/\(Self.hub)/installations/i1?\(Self.version)", headers: [("Content-Type", "application/json-patch+json")],
                body: Data(#"[{"op":"replace","path":"/templates/t/headers","value":{"apns-collapse-id":".(id"}}]"#.utf8)
            )
            expectHubError(patch, 400)
            let saved = try await server.wire(.GET, "/\(Self.hub)/installations/i1?\(Self.version)")
            #expect(saved.text.contains("$(id)"), "\(saved.text)")
        }
    }

    /// A body of a type the format does not take is a 400 saying what the format takes.
    @Test func aSendOfTheWrongContentTypeIsRefused() async throws {
        try await HubTestServer.withServer { server in
            let token = server.herald.apns.registerDevice(topic: TestHerald.topic)
            _ = try await server.createRegistration(
                Atom.open("AppleRegistrationDescription") + "<Tags>everyone</Tags><DeviceToken>\(token)</DeviceToken></AppleRegistrationDescription>"
            )
            let apple = #"{"aps":{"alert":"hi"}}"#
            let toast = "<toast><visual><binding template=\"ToastText01\"><text id=\"1\">hi</text></binding></visual></toast>"
            for (format, body, contentType, wnsType) in [
                ("apple", apple, "application/xml", nil), ("fcmv1", apple, "application/octet-stream", nil),
                ("template", #"{"m":"x"}"#, "text/xml", nil), ("windows", toast, "application/json", "wns/toast"),
                ("windows", toast, "application/json;charset=utf-8", nil),
            ] as [(String, String, String, String?)] {
                var headers = [("Content-Type", contentType)]
                if let wnsType { headers.append(("X-WNS-Type", wnsType)) }
                let detail = expectHubError(try await server.send(format: format, body, tags: "everyone", headers: headers), 400)
                #expect(detail.contains("Content-Type"), "\(detail)")
                #expect(detail.contains(contentType.split(separator: ";")[0]), "\(detail)")
            }
            // What the SDKs send is taken.
            for (format, body, contentType, wnsType) in [
                ("apple", apple, "application/json;charset=utf-8", nil), ("apple", apple, "application/json", nil),
                ("windows", toast, "application/xml", "wns/toast"), ("windows", "raw bytes", "application/octet-stream", "wns/raw"),
                ("windows", "<raw/>", "application/xml", "wns/raw"),
            ] as [(String, String, String, String?)] {
                var headers = [("Content-Type", contentType)]
                if let wnsType { headers.append(("X-WNS-Type", wnsType)) }
                let response = try await server.send(format: format, body, tags: "everyone", headers: headers)
                #expect(response.status == 201, "\(format) \(contentType): \(response.status) \(response.text)")
            }
        }
    }
}
