import Foundation
import HeraldCore
import HeraldEmulator
import HeraldHub
import HeraldServer
import Testing

/// Shared access signatures on the wire: tokens made as each hub SDK makes them are accepted,
/// bad ones get 401 and missing rights 403, each with the hub's XML error document.
@Suite struct HubAPIAuthTests {
    /// Each SDK signs a different `sr` (request URL, namespace URL, hub URL, URL with query),
    /// encodes it differently and orders the parameters differently; all must pass.
    @Test(arguments: SDKSignature.allCases)
    func tokensMadeAsEachSDKMakesThemAreAccepted(style: SDKSignature) async throws {
        try await HubTestServer.withServer { server in
            // A device's calls with the Listen key: a registration id, an installation.
            let listen = WireAuth.rule(SharedAccessRule.defaultListenRuleName, style: style)
            let id = try await server.newRegistrationID(auth: listen)
            let token = server.herald.apns.registerDevice(topic: TestHerald.topic)
            let description = Atom.open("AppleRegistrationDescription") + "<DeviceToken>\(token)</DeviceToken></AppleRegistrationDescription>"
            #expect(try await server.putRegistration(id: id, description, auth: listen).status == 200)
            let installation = try await server.wire(
                .PUT, "/\(HubTestServer.hubName)/installations/device-1?\(HubTestServer.apiVersion)",
                headers: [("Content-Type", "application/json")],
                body: Data(#"{"installationId":"device-1","platform":"apns","pushChannel":"\#(token)"}"#.utf8),
                auth: listen
            )
            #expect(installation.status == 200, "\(installation.text)")

            // A backend's calls with the full key: a listing and a send.
            let full = WireAuth.rule(SharedAccessRule.defaultFullRuleName, style: style)
            let listing = try await server.wire(.GET, "/\(HubTestServer.hubName)/registrations?\(HubTestServer.apiVersion)", auth: full)
            #expect(listing.status == 200, "\(listing.text)")
            let send = try await server.send(format: "apple", #"{"aps":{"alert":"hi"}}"#, tags: "nobody", auth: full)
            #expect(send.status == 201, "\(send.text)")
        }
    }

    @Test func theSecondaryKeyIsAcceptedToo() async throws {
        try await HubTestServer.withServer { server in
            for style in SDKSignature.allCases {
                let auth = WireAuth.rule(SharedAccessRule.defaultFullRuleName, .secondary, style: style)
                let response = try await server.wire(.GET, "/\(HubTestServer.hubName)/registrations?\(HubTestServer.apiVersion)", auth: auth)
                #expect(response.status == 200, "\(style): \(response.text)")
            }
        }
    }

    /// Tokens that must not pass, each refused with 401 and the XML error document.
    enum BadToken: String, CaseIterable, CustomTestStringConvertible {
        case missing, notASignature, expired, wrongKey, unknownKeyName, otherHubsResource, hubNamePrefix, tamperedExpiry

        var testDescription: String { rawValue }
    }

    @Test(arguments: BadToken.allCases)
    func badTokensAreUnauthorized(bad: BadToken) async throws {
        try await HubTestServer.withServer { server in
            let path = "/\(HubTestServer.hubName)/registrations?\(HubTestServer.apiVersion)"
            let url = server.baseURL + path
            let full = SharedAccessRule.defaultFullRuleName
            let key = try await server.key(full)
            let now = Int(Date().timeIntervalSince1970)
            let auth: WireAuth
            switch bad {
            case .missing:
                auth = .none
            case .notASignature:
                auth = .header("Bearer abc")
            case .expired:
                auth = .header(server.token(url: url, keyName: full, key: key, expiry: now - 60))
            case .wrongKey:
                auth = .header(server.token(url: url, keyName: full, key: SharedAccessRule.generateKey()))
            case .unknownKeyName:
                auth = .header(server.token(url: url, keyName: "NoSuchRule", key: key))
            case .otherHubsResource:
                // Signed with this hub's key, but for a URL of another hub.
                let other = "\(server.baseURL)/otherhub/registrations?\(HubTestServer.apiVersion)"
                auth = .header(server.token(.iOS, url: other, keyName: full, key: key))
            case .hubNamePrefix:
                // `…/testhubx` is not under `…/testhub`: another hub, whose key signs a URL of this one.
                let other = try await server.catalog.create(name: HubTestServer.hubName + "x")
                let otherKey = try #require(other.rule(named: full)).primaryKey
                let response = try await server.wire(
                    .GET, "/\(other.name)/registrations?\(HubTestServer.apiVersion)",
                    auth: .header(server.token(.python, url: url, keyName: full, key: otherKey))
                )
                let detail = expectHubError(response, 401)
                #expect(detail.contains("sr"))
                return
            case .tamperedExpiry:
                let token = server.token(url: url, keyName: full, key: key, expiry: now + 60)
                auth = .header(token.replacingOccurrences(of: "se=\(now + 60)", with: "se=\(now + 7200)"))
            }
            let response = try await server.wire(.GET, path, auth: auth)
            let detail = expectHubError(response, 401)
            switch bad {
            case .missing: #expect(detail.contains("Authorization"))
            case .expired: #expect(detail.contains("expired"))
            case .unknownKeyName: #expect(detail.contains("NoSuchRule"))
            case .otherHubsResource: #expect(detail.contains("sr"))
            default: break
            }
            // Never the signature or the key in the answer.
            #expect(!response.text.contains(key))
        }
    }

    @Test func theOtherSignatureStylesCannotSignForAnotherHub() async throws {
        try await HubTestServer.withServer { server in
            let full = SharedAccessRule.defaultFullRuleName
            let key = try await server.key(full)
            // The Python sample signs the hub URL: for hub `otherhub`, it does not cover `testhub`.
            let url = "\(server.baseURL)/\(HubTestServer.hubName)/registrations?\(HubTestServer.apiVersion)"
            let python = server.token(.python, url: url, hub: "otherhub", keyName: full, key: key)
            expectHubError(try await server.wire(.GET, url, auth: .header(python)), 401)
            // The .NET SDK signs the request URL: one for another hub's path does not cover this one.
            let dotNet = server.token(.dotNet, url: "\(server.baseURL)/otherhub/registrations", keyName: full, key: key)
            expectHubError(try await server.wire(.GET, url, auth: .header(dotNet)), 401)
        }
    }

    @Test func theListenKeyCannotSend() async throws {
        try await HubTestServer.withServer { server in
            let response = try await server.send(format: "apple", #"{"aps":{"alert":"hi"}}"#, auth: .listen)
            let detail = expectHubError(response, 403)
            #expect(detail.contains("Send"))
            let scheduled = try await server.wire(
                .POST, "/\(HubTestServer.hubName)/schedulednotifications?\(HubTestServer.apiVersion)",
                headers: [("ServiceBusNotification-Format", "apple"), ("ServiceBusNotification-ScheduleTime", "2099-01-01T00:00:00")],
                body: Data(#"{"aps":{"alert":"hi"}}"#.utf8), auth: .listen
            )
            expectHubError(scheduled, 403)
        }
    }

    /// A hub that reserves `username:` refuses that prefix from a Listen-only key — in a
    /// registration, an installation, a template's tags and a patch — and takes it from the
    /// full key; before the reservation, Listen may claim it, as on the cloud hub.
    @Test func reservedTagPrefixesNeedSendOrManage() async throws {
        try await HubTestServer.withServer { server in
            let hub = HubTestServer.hubName
            let installation = { (id: String, tags: String, templateTags: String) in
                Data(
                    #"{"installationId":"\#(id)","platform":"apns","pushChannel":"\#(String(repeating: "ab", count: 32))","tags":[\#(tags)],"templates":{"t":{"body":"{}","tags":[\#(templateTags)]}}}"#
                        .utf8
                )
            }
            let json = [("Content-Type", "application/json")]
            let claim =
                Atom.open("AppleRegistrationDescription")
                + "<Tags>username:bob</Tags><DeviceToken>\(String(repeating: "cd", count: 32))</DeviceToken></AppleRegistrationDescription>"
            // Not reserved yet: the cloud hub's behaviour.
            _ = try await server.createRegistration(claim, auth: .listen)

            _ = try await server.catalog.setReservedTagPrefixes(name: hub, ["username:"])
            let id = try await server.newRegistrationID(auth: .listen)
            let refused = try await server.putRegistration(id: id, claim, auth: .listen)
            #expect(expectHubError(refused, 403).contains("username:bob"))
            let posted = try await server.wire(
                .POST, "/\(hub)/registrations?\(HubTestServer.apiVersion)",
                headers: [("Content-Type", "application/atom+xml;type=entry;charset=utf-8")], body: Atom.entry(claim), auth: .listen
            )
            expectHubError(posted, 403)
            for body in [installation("i1", #""USERNAME:bob""#, ""), installation("i1", #""news""#, #""username:bob""#)] {
                let put = try await server.wire(.PUT, "/\(hub)/installations/i1?\(HubTestServer.apiVersion)", headers: json, body: body, auth: .listen)
                expectHubError(put, 403)
            }
            let plain = try await server.wire(
                .PUT, "/\(hub)/installations/i1?\(HubTestServer.apiVersion)", headers: json, body: installation("i1", #""news""#, ""), auth: .listen
            )
            #expect(plain.status == 200, "\(plain.text)")
            let patch = try await server.wire(
                .PATCH, "/\(hub)/installations/i1?\(HubTestServer.apiVersion)", headers: json,
                body: Data(#"[{"op":"add","path":"/tags","value":"username:bob"}]"#.utf8), auth: .listen
            )
            expectHubError(patch, 403)
            // The backend's key may.
            _ = try await server.createRegistration(claim, auth: .full)
            let full = try await server.wire(
                .PUT, "/\(hub)/installations/i2?\(HubTestServer.apiVersion)", headers: json, body: installation("i2", #""username:bob""#, ""), auth: .full
            )
            #expect(full.status == 200, "\(full.text)")
        }
    }

    /// Listen may read the registrations of one handle (what a device does before it
    /// registers), not all of them, and not by tag.
    @Test func theListenKeyListsOnlyByHandle() async throws {
        try await HubTestServer.withServer { server in
            let channel = server.herald.wns.registerChannel()
            let (id, _) = try await server.createRegistration(
                Atom.open("WindowsRegistrationDescription")
                    + "<Tags>news</Tags><ChannelUri>\(Atom.escaped(channel))</ChannelUri></WindowsRegistrationDescription>"
            )
            let all = try await server.wire(.GET, "/\(HubTestServer.hubName)/registrations?\(HubTestServer.apiVersion)", auth: .listen)
            expectHubError(all, 403)
            let filter = "ChannelUri eq '\(channel)'".addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
            let byHandle = try await server.wire(
                .GET, "/\(HubTestServer.hubName)/registrations?$filter=\(filter)&\(HubTestServer.apiVersion)", auth: .listen
            )
            #expect(byHandle.status == 200, "\(byHandle.text)")
            #expect(try byHandle.xml().children("entry").compactMap { $0.value("title") } == [id])
            let byTag = try await server.wire(.GET, "/\(HubTestServer.hubName)/tags/news/registrations?\(HubTestServer.apiVersion)", auth: .listen)
            expectHubError(byTag, 403)
        }
    }

    /// Reading registrations by tag needs Manage: a Send-only rule is refused, the full rule passes.
    @Test func registrationsByTagNeedManage() async throws {
        try await HubTestServer.withServer { server in
            try await server.catalog.addRule(name: HubTestServer.hubName, rule: "SendOnly", rights: [.send])
            let path = "/\(HubTestServer.hubName)/tags/news/registrations?\(HubTestServer.apiVersion)"
            let refused = try await server.wire(.GET, path, auth: .rule("SendOnly"))
            #expect(expectHubError(refused, 403).contains("Manage"))
            // The same rule may send.
            #expect(try await server.send(format: "apple", #"{"aps":{}}"#, auth: .rule("SendOnly")).status == 201)
            let allowed = try await server.wire(.GET, path, auth: .full)
            #expect(allowed.status == 200, "\(allowed.text)")
            #expect(try allowed.xml().name == "feed")
        }
    }

    @Test func everyAnswerCarriesATrackingID() async throws {
        try await HubTestServer.withServer { server in
            let ok = try await server.wire(.POST, "/\(HubTestServer.hubName)/registrationids?\(HubTestServer.apiVersion)")
            #expect(ok.header("TrackingId")?.isEmpty == false)
            let refused = try await server.wire(.POST, "/\(HubTestServer.hubName)/registrationids?\(HubTestServer.apiVersion)", auth: .none)
            let tracking = try #require(refused.header("TrackingId"))
            #expect(expectHubError(refused, 401).contains("TrackingId:\(tracking)"))
        }
    }
}
