import Foundation
import HeraldCore
import HeraldEmulator
import HeraldServer
import HeraldTestSupport
import Testing

/// Installations on the wire: JSON documents written with PUT, read back at once, changed
/// with JSON Patch, deleted with 204, and (beyond the cloud hub) listed by user and tag.
@Suite struct HubAPIInstallationTests {
    static let hub = HubTestServer.hubName
    static let version = HubTestServer.apiVersion

    static func path(_ id: String) -> String { "/\(hub)/installations/\(id)?\(version)" }

    /// `PUT /{hub}/installations/{id}` with a JSON body.
    static func put(_ server: HubTestServer, _ id: String, _ json: String) async throws -> WireResponse {
        try await server.wire(.PUT, path(id), headers: [("Content-Type", "application/json")], body: Data(json.utf8), auth: .listen)
    }

    /// `GET /{hub}/installations/{id}`, required to be 200, as a JSON object.
    static func get(_ server: HubTestServer, _ id: String, sourceLocation: SourceLocation = #_sourceLocation) async throws -> [String: Any] {
        let response = try await server.wire(.GET, path(id), auth: .listen)
        try #require(response.status == 200, "GET installations/\(id): \(response.status) \(response.text)", sourceLocation: sourceLocation)
        #expect(response.header("Content-Type")?.lowercased().hasPrefix("application/json") == true, sourceLocation: sourceLocation)
        return try #require(try response.json() as? [String: Any], sourceLocation: sourceLocation)
    }

    static func patch(_ server: HubTestServer, _ id: String, _ json: String, contentType: String = "application/json-patch+json") async throws -> WireResponse {
        try await server.wire(.PATCH, path(id), headers: [("Content-Type", contentType)], body: Data(json.utf8), auth: .listen)
    }

    static func tags(_ installation: [String: Any]) -> Set<String> {
        Set(installation["tags"] as? [String] ?? [])
    }

    @Test func putThenGetReadsYourWrites() async throws {
        try await HubTestServer.withServer { server in
            let token = server.herald.apns.registerDevice(topic: TestHerald.topic)
            let written = try await Self.put(
                server, "ipad-1",
                """
                {"installationId":"ipad-1","userId":"alice","platform":"apns","pushChannel":"\(token)",
                 "tags":["news","sports"],"pushVariables":{"name":"Alice"},
                 "templates":{"greeting":{"body":"{\\"aps\\":{\\"alert\\":\\"Hi $(name): $(message)\\"}}","headers":{"apns-priority":"10"},"tags":["greetings"]}}}
                """)
            #expect(written.status == 200, "\(written.text)")

            // Read at once: every field as written, plus the read-only ones.
            let read = try await Self.get(server, "ipad-1")
            #expect(read["installationId"] as? String == "ipad-1")
            #expect(read["userId"] as? String == "alice")
            #expect(read["platform"] as? String == "apns")
            #expect((read["pushChannel"] as? String)?.lowercased() == token)
            #expect(read["pushChannelExpired"] as? Bool == false)
            #expect(read["expirationTime"] is String)
            #expect(Self.tags(read) == ["news", "sports"])
            #expect(read["pushVariables"] as? [String: String] == ["name": "Alice"])
            let greeting = try #require((read["templates"] as? [String: Any])?["greeting"] as? [String: Any])
            #expect(greeting["body"] as? String == #"{"aps":{"alert":"Hi $(name): $(message)"}}"#)
            #expect(greeting["headers"] as? [String: String] == ["apns-priority": "10"])
            #expect(greeting["tags"] as? [String] == ["greetings"])

            // The .NET SDK writes FCM v1 as `fcmV1`; any case is the same platform.
            let fcm = try await Self.put(
                server, "pixel-1", #"{"installationId":"pixel-1","platform":"fcmV1","pushChannel":"\#(server.herald.fcm.registerDevice())"}"#)
            #expect(fcm.status == 200, "\(fcm.text)")
            #expect((try await Self.get(server, "pixel-1")["platform"] as? String)?.lowercased() == "fcmv1")

            // The installation is reachable at once by its implicit tags, and its template
            // renders with its push variables.
            let send = try await server.send(format: "template", #"{"message":"tea?"}"#, tags: "$InstallationId:{ipad-1}")
            let id = try server.acceptedID(send)
            let details = try await server.finishedDetails(id)
            #expect(details.value("State") == "Completed")
            #expect(server.herald.apns.notifications(for: token).last.map { ReceiptIDs.removed(from: $0.payload) } == #"{"aps":{"alert":"Hi Alice: tea?"}}"#)
            let byUser = try server.acceptedID(try await server.send(format: "apple", #"{"aps":{"alert":"for alice"}}"#, tags: "$UserId:{alice}"))
            #expect(try await server.finishedDetails(byUser).value("State") == "Completed")
            #expect(server.herald.apns.notifications(for: token).last.map { ReceiptIDs.removed(from: $0.payload) } == #"{"aps":{"alert":"for alice"}}"#)
        }
    }

    @Test func badInstallationsAreRefused() async throws {
        try await HubTestServer.withServer { server in
            let token = server.herald.apns.registerDevice(topic: TestHerald.topic)
            // The id in the body differs from the URL's; not JSON; an unknown platform.
            expectHubError(try await Self.put(server, "a-1", #"{"installationId":"b-1","platform":"apns","pushChannel":"\#(token)"}"#), 400)
            expectHubError(try await Self.put(server, "a-1", "{installationId"), 400)
            expectHubError(try await Self.put(server, "a-1", #"{"installationId":"a-1","platform":"symbian","pushChannel":"x"}"#), 400)
            expectHubError(try await server.wire(.GET, Self.path("a-1"), auth: .listen), 404)
        }
    }

    @Test func patchAddsRemovesAndReplaces() async throws {
        try await HubTestServer.withServer { server in
            let token = server.herald.apns.registerDevice(topic: TestHerald.topic)
            _ = try await Self.put(
                server, "phone-1", #"{"installationId":"phone-1","platform":"apns","pushChannel":"\#(token)","userId":"alice","tags":["news","sports"]}"#)

            let patched = try await Self.patch(
                server, "phone-1",
                """
                [{"op":"add","path":"/tags","value":"beta"},
                 {"op":"remove","path":"/tags/news"},
                 {"op":"replace","path":"/userId","value":"bob"},
                 {"op":"add","path":"/templates/short","value":{"body":"{\\"aps\\":{\\"alert\\":\\"$(m)\\"}}","tags":["t"]}}]
                """)
            #expect(patched.status == 200, "\(patched.text)")
            var read = try await Self.get(server, "phone-1")
            #expect(Self.tags(read) == ["sports", "beta"])
            #expect(read["userId"] as? String == "bob")
            #expect((read["templates"] as? [String: Any])?["short"] != nil)

            // `replace /tags` with the comma list the .NET SDK lets callers write: split.
            #expect(try await Self.patch(server, "phone-1", #"[{"op":"replace","path":"/tags","value":"x,y"}]"#).status == 200)
            read = try await Self.get(server, "phone-1")
            #expect(Self.tags(read) == ["x", "y"])

            // The iOS SDK sends its patch as application/json.
            #expect(try await Self.patch(server, "phone-1", #"[{"op":"remove","path":"/userId"}]"#, contentType: "application/json").status == 200)
            read = try await Self.get(server, "phone-1")
            #expect(read["userId"] == nil)

            // Operations outside add/remove/replace, and a missing installation.
            expectHubError(try await Self.patch(server, "phone-1", #"[{"op":"move","from":"/tags","path":"/userId"}]"#), 400)
            expectHubError(try await Self.patch(server, "no-such-phone", #"[{"op":"add","path":"/tags","value":"a"}]"#), 404)
            // A refused patch changed nothing.
            #expect(Self.tags(try await Self.get(server, "phone-1")) == ["x", "y"])
        }
    }

    @Test func deleteAnswers204AndThenTheInstallationIsGone() async throws {
        try await HubTestServer.withServer { server in
            let token = server.herald.apns.registerDevice(topic: TestHerald.topic)
            #expect(
                try await Self.put(server, "tablet-1", #"{"installationId":"tablet-1","platform":"apns","pushChannel":"\#(token)","tags":["x"]}"#).status == 200
            )
            let deleted = try await server.wire(.DELETE, Self.path("tablet-1"), auth: .listen)
            #expect(deleted.status == 204)
            #expect(deleted.body.isEmpty)
            expectHubError(try await server.wire(.GET, Self.path("tablet-1"), auth: .listen), 404)
            // Its implicit tag reaches nobody any more.
            let test = try await server.send(format: "apple", #"{"aps":{}}"#, tags: "$InstallationId:{tablet-1}", query: "&test")
            #expect(test.status == 201)
            #expect(try test.xml().value("Success") == "0")
            #expect(try test.xml().child("Results")?.children.isEmpty == true)
        }
    }

    /// Herald's extension: `GET /{hub}/installations?userId=&tag=` (Manage).
    @Test func installationsAreListedByUserAndTag() async throws {
        try await HubTestServer.withServer { server in
            for (id, user, tags) in [("i-1", "alice", #"["news"]"#), ("i-2", "alice", #"["sports"]"#), ("i-3", "bob", #"["news"]"#)] {
                let token = server.herald.fcm.registerDevice()
                let put = try await Self.put(
                    server, id, #"{"installationId":"\#(id)","platform":"fcmv1","pushChannel":"\#(token)","userId":"\#(user)","tags":\#(tags)}"#)
                #expect(put.status == 200)
            }
            func listed(_ query: String) async throws -> [String] {
                let response = try await server.wire(.GET, "/\(Self.hub)/installations?\(query)&\(Self.version)")
                #expect(response.status == 200, "\(response.text)")
                let items = try #require(try response.json() as? [[String: Any]])
                return items.compactMap { $0["installationId"] as? String }.sorted()
            }
            #expect(try await listed("userId=alice") == ["i-1", "i-2"])
            #expect(try await listed("tag=news") == ["i-1", "i-3"])
            #expect(try await listed("userId=alice&tag=news") == ["i-1"])
            #expect(try await listed("userId=carol").isEmpty)
            // Paged like registrations.
            let first = try await server.wire(.GET, "/\(Self.hub)/installations?$top=2&\(Self.version)")
            let token = try #require(first.header("X-MS-ContinuationToken"))
            let second = try await server.wire(.GET, "/\(Self.hub)/installations?$top=2&continuationtoken=\(token)&\(Self.version)")
            let ids = (try #require(try first.json() as? [[String: Any]]) + (try #require(try second.json() as? [[String: Any]])))
                .compactMap { $0["installationId"] as? String }
            #expect(ids.sorted() == ["i-1", "i-2", "i-3"])
            // Listing is the backend's business.
            expectHubError(try await server.wire(.GET, "/\(Self.hub)/installations?userId=alice&\(Self.version)", auth: .listen), 403)
        }
    }

    @Test func aBrowserPushChannelIsAnObject() async throws {
        try await HubTestServer.withServer { server in
            let subscription = server.herald.webPush.subscribe()
            let body = """
                {"installationId":"browser-1","platform":"browser","tags":["web"],
                 "pushChannel":{"endpoint":"\(subscription.endpoint)","p256dh":"\(subscription.p256dh)","auth":"\(subscription.auth)"}}
                """
            #expect(try await Self.put(server, "browser-1", body).status == 200)
            let read = try await Self.get(server, "browser-1")
            #expect(read["platform"] as? String == "browser")
            let channel = try #require(read["pushChannel"] as? [String: String])
            #expect(channel == ["endpoint": subscription.endpoint, "p256dh": subscription.p256dh, "auth": subscription.auth])

            // It receives what is sent to its tag, encrypted for its keys.
            let id = try server.acceptedID(try await server.send(format: "browser", #"{"title":"Hello, browser"}"#, tags: "web"))
            #expect(try await server.finishedDetails(id).value("State") == "Completed")
            #expect(server.herald.webPush.notifications(for: subscription).last.map { ReceiptIDs.removed(from: $0.payload) } == #"{"title":"Hello, browser"}"#)
        }
    }
}
