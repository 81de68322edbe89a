import Foundation
import HTTPTypes
import HeraldCore
import HeraldHub
import HeraldServer
import HummingbirdTesting
import Testing

/// The hub API's failures on the wire: throttling with 429 and `Retry-After`, malformed
/// tokens and parameters, unknown hubs; each with the XML error document.
@Suite struct HubAPIErrorTests {
    static let hub = HubTestServer.hubName
    static let version = HubTestServer.apiVersion

    /// A hub over its request rate answers 429 (as the newer API versions do, not 403), says
    /// when to come back, and admits again after that.
    @Test func aHubOverItsRateLimitAnswers429() async throws {
        try await TestHerald.withHubAPIRouter(configure: { $0.hubRequestsPerSecond = 1 }) { definition, client in
            let rule = try #require(definition.rule(named: SharedAccessRule.defaultFullRuleName))
            func post() async throws -> WireResponse {
                // The router test client's requests go to http://localhost.
                let header = SDKSignature.dotNet.header(
                    url: "http://localhost/\(Self.hub)/registrationids", hub: Self.hub, keyName: rule.name, key: rule.primaryKey,
                    expiry: Int(Date().timeIntervalSince1970) + 3600
                )
                return WireResponse(
                    try await client.executeRequest(
                        uri: "/\(Self.hub)/registrationids?\(Self.version)", method: .post, headers: [.authorization: header], body: nil
                    )
                )
            }
            var admitted = 0
            var throttled: WireResponse?
            for _ in 0..<500 {
                let response = try await post()
                guard response.status == 201 else {
                    throttled = response
                    break
                }
                admitted += 1
            }
            #expect(admitted >= 1, "a burst is admitted first")
            let response = try #require(throttled, "500 requests in a row at 1 per second were never throttled")
            expectHubError(response, 429)
            let retryAfter = try #require(response.header("Retry-After").flatMap { Int($0) }, "429 says when to retry in whole seconds")
            #expect((1...60).contains(retryAfter))

            // After waiting as told, the hub admits again.
            try await Task.sleep(for: .seconds(retryAfter))
            #expect(try await post().status == 201)
        }
    }

    /// Nodes sharing a database share the limit: each admits the limit divided by their number.
    @Test func nodesShareTheRateLimit() throws {
        let alone = HubRateLimiter(requestsPerSecond: 10)
        for _ in 0..<20 { try alone.admit("h", caller: .sendOrManage) }
        #expect(throws: Throttled.self) { try alone.admit("h", caller: .sendOrManage) }

        let oneOfFour = HubRateLimiter(requestsPerSecond: 10)
        for _ in 0..<5 { try oneOfFour.admit("h", caller: .sendOrManage, nodes: 4) }
        #expect(throws: Throttled.self, "a quarter of the burst of 20") { try oneOfFour.admit("h", caller: .sendOrManage, nodes: 4) }
        try oneOfFour.admit("other", caller: .sendOrManage, nodes: 4)
    }

    /// Feedback containers are not offered: a clear 404 in the hub's format, after the same
    /// authorization as any Manage operation.
    @Test func whatIsNotOfferedSaysSo() async throws {
        try await HubTestServer.withServer { server in
            for (method, path) in [(WireMethod.GET, "feedbackcontainer")] {
                let detail = expectHubError(try await server.wire(method, "/\(Self.hub)/\(path)?\(Self.version)"), 404)
                #expect(detail.contains("GET /{hub}/messages/{id}"))
                expectHubError(try await server.wire(method, "/\(Self.hub)/\(path)?\(Self.version)", auth: .listen), 403)
            }
        }
    }

    /// A path the hub API does not have is a 404 in the hub's format when the request is the
    /// hub API's (it carries `api-version`); other unknown paths keep the plain 404.
    @Test func unknownOperationsAreHubErrors() async throws {
        try await HubTestServer.withServer { server in
            for (method, path) in [
                (WireMethod.GET, "/\(Self.hub)/nosuchthing"), (.DELETE, "/\(Self.hub)/messages"),
                (.GET, "/\(Self.hub)/registrations/a/b/c"), (.POST, "/\(Self.hub)/installations/x"),
            ] {
                let detail = expectHubError(try await server.wire(method, "\(path)?\(Self.version)"), 404)
                #expect(detail.contains("the hub API has no operation \(method) \(path)"), "\(detail)")
            }
            let plain = try await server.wire(.GET, "/\(Self.hub)/nosuchthing")
            #expect(plain.status == 404)
            #expect(!(plain.header("Content-Type") ?? "").contains("xml"))
            // The app backend's unknown paths are untouched.
            #expect(try await server.wire(.GET, "/api/nosuchthing").status == 404)
        }
    }

    @Test func malformedSignatures() async throws {
        try await HubTestServer.withServer { server in
            let path = "/\(Self.hub)/registrations?\(Self.version)"
            let url = server.baseURL + path
            let key = try await server.key(SharedAccessRule.defaultFullRuleName)
            let good = server.token(url: url, keyName: SharedAccessRule.defaultFullRuleName, key: key)
            #expect(try await server.wire(.GET, path, auth: .header(good)).status == 200)
            let sig = try #require(good.firstMatch(of: /sig=([^&]+)/)).1
            let variants = [
                good.replacingOccurrences(of: "sig=\(sig)&", with: ""),
                good.replacingOccurrences(of: "&skn=", with: "&skn=&x="),
                good.replacingOccurrences(of: "se=", with: "se=soon"),
                good.replacingOccurrences(of: "sig=\(sig)", with: "sig=%%%"),
                good.replacingOccurrences(of: "SharedAccessSignature ", with: "SharedAccessSignature"),
                "SharedAccessSignature",
            ]
            for header in variants {
                let response = try await server.wire(.GET, path, auth: .header(header))
                expectHubError(response, 401)
                #expect(!response.text.contains(String(sig)), "the answer never repeats the signature")
            }
        }
    }

    @Test func anUnknownHubIsUnauthorized() async throws {
        try await HubTestServer.withServer { server in
            // No key can be valid for a hub that does not exist: 401, not a hint that it is missing.
            let response = try await server.wire(.POST, "/nosuchhub/registrationids?\(Self.version)")
            expectHubError(response, 401)
        }
    }

    @Test func malformedParametersAreBadRequests() async throws {
        try await HubTestServer.withServer { server in
            expectHubError(try await server.wire(.GET, "/\(Self.hub)/registrations?$top=zero&\(Self.version)"), 400)
            expectHubError(try await server.wire(.GET, "/\(Self.hub)/registrations?$top=-1&\(Self.version)"), 400)
            expectHubError(try await server.wire(.GET, "/\(Self.hub)/registrations?continuationtoken=%25%25%25&\(Self.version)"), 400)
            expectHubError(try await server.wire(.GET, "/\(Self.hub)/registrations/not%20an%20id?\(Self.version)"), 400)
            let description = Atom.open("GcmRegistrationDescription") + "<GcmRegistrationId>abc</GcmRegistrationId></GcmRegistrationDescription>"
            let id = try await server.newRegistrationID()
            expectHubError(try await server.putRegistration(id: id, description, ifMatch: "version-two"), 400)
            // The id in the body must be the one in the URL.
            let other =
                Atom.open("GcmRegistrationDescription")
                + "<RegistrationId>123-456-1</RegistrationId><GcmRegistrationId>abc</GcmRegistrationId></GcmRegistrationDescription>"
            expectHubError(try await server.putRegistration(id: id, other), 400)
            expectHubError(try await server.wire(.GET, "/\(Self.hub)/tags/not%20a%20tag/registrations?\(Self.version)"), 400)
        }
    }
}
