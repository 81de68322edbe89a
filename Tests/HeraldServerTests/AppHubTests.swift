import AsyncHTTPClient
import Foundation
import HeraldClient
import HeraldCore
import HeraldEmulator
import HeraldHub
import Testing

/// The app backend's devices live in an ordinary hub of the catalog: listed with the other
/// hubs, and readable and manageable through the hub REST API with that hub's own keys.
@Suite struct AppHubTests {
    @Test func theAppBackendsDevicesAreListedThroughTheHubAPI() async throws {
        try await HubTestServer.withServer { server in
            await #expect(try server.catalog.list().map(\.name).contains(TestHerald.appHubName))
            let base = URL(string: "http://127.0.0.1:\(server.httpPort)")!
            let (aliceIPhone, aliceAndroid, bob) = try await signInAliceTwiceAndBob(at: base)
            let iPhoneToken = server.herald.apns.registerDevice(topic: TestHerald.topic)
            let iPhoneID = try await aliceIPhone.register(handle: iPhoneToken, platform: .apns, tags: ["news"])
            try await aliceAndroid.register(handle: server.herald.fcm.registerDevice(), platform: .fcm)
            try await bob.register(handle: server.herald.fcm.registerDevice(), platform: .fcm)

            // The app hub's own full-access key, over the same TLS listener as any other hub.
            let definition = try await #require(try server.catalog.hub(named: TestHerald.appHubName))
            let endpoint = "sb://127.0.0.1:\(server.tlsPort)/"
            let connectionString = try #require(
                server.catalog.connectionStrings(of: definition, endpoint: endpoint, key: .primary).first {
                    $0.rule == SharedAccessRule.defaultFullRuleName
                }
            ).connectionString
            let hub = try NotificationHubClient(
                connectionString: connectionString, hubName: TestHerald.appHubName,
                transport: AsyncHTTPClientTransport(client: server.httpClient)
            )
            let all = try await hub.registrations(top: 100).items
            #expect(all.count == 3)
            let alices = try await hub.registrations(tag: "username:alice").items
            #expect(Set(alices.map(\.platform)) == [.apns, .fcm])
            let iPhone = try #require(all.first { $0.id == iPhoneID })
            #expect(iPhone.tags.sorted() == ["news", "username:alice"])
            #expect(iPhone.handle == iPhoneToken)

            // Another hub's key opens nothing here.
            let otherHubsKey = try NotificationHubClient(
                connectionString: server.connectionString(), hubName: TestHerald.appHubName,
                transport: AsyncHTTPClientTransport(client: server.httpClient)
            )
            await #expect(throws: HeraldError.self) { _ = try await otherHubsKey.registrations(top: 10) }

            // A device deleted through the hub API is gone for the app backend too.
            try await hub.deleteRegistration(id: iPhoneID)
            let outcome = try await bob.notify(user: "alice", message: "still there?")
            #expect(outcome.targets == 1, "only alice's Android is left")
        }
    }
}
