import Foundation
import HeraldClient
import HeraldCore
import HeraldEmulator
import HeraldHub
import HeraldServer
import HeraldStore
import HeraldTestSupport
import Hummingbird
import HummingbirdTesting
import Logging
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
import HeraldSQLite
#endif

@Suite struct NotifyUsersTests {
    /// The tutorial's device requests, byte for byte as its iOS client sends them (HTTP Basic
    /// with user name = password, JSON string bodies), against a live server.
    /// A request as the tutorial's device code sends it (demo Basic auth, the user's name as
    /// password): its status and body.
    static func call(_ base: String, _ method: String, _ path: String, user: String, body: String?) async throws -> (Int, Data) {
        var request = URLRequest(url: URL(string: base + path)!)
        request.httpMethod = method
        request.setValue("Basic " + Data("\(user):\(user)".utf8).base64EncodedString(), forHTTPHeaderField: "Authorization")
        if let body {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(body.utf8)
        }
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as! HTTPURLResponse).statusCode, data)
    }

    @Test func theTutorialsDeviceRequestsWorkUnchanged() async throws {
        try await TestHerald.withHerald(configure: { $0.insecureDemoAuth = true }) { herald in
            try await herald.application().test(.live) { client in
                let base = "http://127.0.0.1:\(try #require(client.port))"
                let aliceToken = herald.apns.registerDevice(topic: TestHerald.topic)
                let bobToken = herald.apns.registerDevice(topic: TestHerald.topic)

                func call(_ method: String, _ path: String, user: String, body: String?) async throws -> (Int, Data) {
                    try await Self.call(base, method, path, user: user, body: body)
                }
                for (user, token) in [("alice", aliceToken), ("bob", bobToken)] {
                    let (status, data) = try await call("POST", "/api/register?handle=\(token)", user: user, body: nil)
                    #expect(status == 200)
                    let id = try JSONDecoder().decode(String.self, from: data)
                    let (putStatus, _) = try await call(
                        "PUT", "/api/register/\(id)", user: user,
                        body: #"{"Platform":"apns","Handle":"\#(token)","Tags":[]}"#
                    )
                    #expect(putStatus == 200)
                }
                let (status, data) = try await call("POST", "/api/notifications?pns=apns&to_tag=alice", user: "bob", body: #""Hello from the tutorial""#)
                #expect(status == 200)
                let outcome = try JSONDecoder.iso.decode(NotificationSummary.self, from: data)
                #expect(outcome.state == "Completed")
                #expect(outcome.success == 1)
                let received = herald.apns.notifications(for: aliceToken)
                #expect(received.count == 1)
                #expect(received.first.map { ReceiptIDs.removed(from: $0.payload) } == #"{"aps":{"alert":"From bob: Hello from the tutorial"}}"#)
                #expect(herald.apns.notifications(for: bobToken).isEmpty)
            }
        }
    }

    /// `ttl`, `priority` and `collapse_id` beside `to_tag` become the platform's own headers;
    /// one that the platform cannot say, or a `spread` that is not whole seconds within the
    /// time a notification is abandoned after, is a 400 and sends nothing.
    @Test func deliveryOptionsInTheQueryReachThePushService() async throws {
        try await TestHerald.withHerald(configure: { $0.insecureDemoAuth = true }) { herald in
            try await herald.application().test(.live) { client in
                let base = "http://127.0.0.1:\(try #require(client.port))"
                let token = herald.apns.registerDevice(topic: TestHerald.topic)
                func call(_ method: String, _ path: String, body: String?) async throws -> (Int, Data) {
                    try await Self.call(base, method, path, user: "alice", body: body)
                }
                let (_, idData) = try await call("POST", "/api/register?handle=\(token)", body: nil)
                let id = try JSONDecoder().decode(String.self, from: idData)
                _ = try await call("PUT", "/api/register/\(id)", body: #"{"Platform":"apns","Handle":"\#(token)","Tags":[]}"#)

                let (refused, _) = try await call(
                    "POST", "/api/notifications?pns=apns&to_tag=alice&priority=urgent", body: #""Goal!""#)
                #expect(refused == 400)
                let (tooLong, _) = try await call(
                    "POST", "/api/notifications?pns=apns&to_tag=alice&collapse_id=\(String(repeating: "x", count: 65))", body: #""Goal!""#)
                #expect(tooLong == 400)
                for spread in ["later", "0", "100000"] {
                    let (status, body) = try await call("POST", "/api/notifications?pns=apns&to_tag=alice&spread=\(spread)", body: #""Goal!""#)
                    #expect(status == 400, "spread=\(spread)")
                    #expect(String(decoding: body, as: UTF8.self).contains("spread"))
                }
                #expect(herald.apns.notifications(for: token).isEmpty)

                let before = Int(Date().timeIntervalSince1970)
                let (status, _) = try await call(
                    "POST", "/api/notifications?pns=apns&to_tag=alice&priority=normal&collapse_id=score-1&ttl=120&spread=1", body: #""Goal!""#)
                #expect(status == 200, "a spread of 1 s over one device: it is sent at once and the call waits for it")
                let headers = try #require(herald.apns.notifications(for: token).first?.headers)
                #expect(headers["apns-priority"] == "5")
                #expect(headers["apns-collapse-id"] == "score-1")
                let expiration = try #require(headers["apns-expiration"].flatMap { Int($0) })
                #expect((before + 120...Int(Date().timeIntervalSince1970) + 120).contains(expiration))
            }
        }
    }

    /// alice has an iPhone and an Android phone, bob an iPhone; bob notifies alice.
    @Test func everyDeviceOfThatUserAndOnlyThoseGetsIt() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.live) { client in
                let base = URL(string: "http://127.0.0.1:\(try #require(client.port))")!
                let aliceIPhone = herald.apns.registerDevice(topic: TestHerald.topic)
                let aliceAndroid = herald.fcm.registerDevice()
                let bobIPhone = herald.apns.registerDevice(topic: TestHerald.topic)

                let (a1, a2, b1) = try await signInAliceTwiceAndBob(at: base)
                try await a1.register(handle: aliceIPhone, platform: .apns)
                try await a2.register(handle: aliceAndroid, platform: .fcm)
                try await b1.register(handle: bobIPhone, platform: .apns)

                let message = "He said \"hi\"\nthen left 👋 \\ <b>&amp;</b> " + String(repeating: "é", count: 1200)
                let outcome = try await b1.notify(user: "alice", message: message)
                #expect(outcome.state == "Completed")
                #expect(outcome.targets == 2 && outcome.success == 2)
                #expect(outcome.outcomes.counts[.apns]?[.success] == 1)
                #expect(outcome.outcomes.counts[.fcm]?[.success] == 1)

                let expected = "From bob: \(message)"
                let apns = try #require(herald.apns.notifications(for: aliceIPhone).first)
                let apnsJSON = try JSONDecoder().decode(JSONValue.self, from: Data(apns.payload.utf8))
                #expect(apnsJSON["aps"]?["alert"] == .string(expected))
                #expect(apns.headers["apns-push-type"] == "alert")
                let fcm = try #require(herald.fcm.notifications(for: aliceAndroid).first)
                let fcmJSON = try JSONDecoder().decode(JSONValue.self, from: Data(fcm.payload.utf8))
                #expect(fcmJSON["data"]?["message"] == .string(expected))
                #expect(fcmJSON["token"] == .string(aliceAndroid))
                #expect(herald.apns.notifications(for: bobIPhone).isEmpty)
            }
        }
    }

    /// The device's stored registration id is no longer valid: it gets 410, asks for a new
    /// id and retries once — through the SDK, as an app would.
    @Test func aDeviceRecoversFromGoneWithANewID() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.live) { client in
                let base = URL(string: "http://127.0.0.1:\(try #require(client.port))")!
                let token = herald.apns.registerDevice(topic: TestHerald.topic)
                let device = HeraldClient(baseURL: base)
                try await device.signUp(username: "alice", password: "alice-password")
                try await device.signIn(username: "alice", password: "alice-password")
                let first = try await device.register(handle: token, platform: .apns)
                try await herald.store.deleteRegistration(id: first, ifVersion: nil)
                let second = try await device.register(handle: token, platform: .apns)
                #expect(second != first)
                #expect(try await herald.store.registration(id: second)?.tags == ["username:alice"])
                #expect(try await herald.store.registrationCount() == 1)
            }
        }
    }

    @Test func aDeadTokenIsRemovedAndReported() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.router) { client in
                let alice = try await client.signUp("alice")
                let bob = try await client.signUp("bob")
                let token = herald.apns.registerDevice(topic: TestHerald.topic)
                let id = try await client.register(bob, handle: token)
                herald.apns.unregister(token: token)
                try await client.execute(uri: "/api/notifications?pns=apns&to_tag=bob", method: .post, headers: alice, body: .json(#""ping""#)) { response in
                    #expect(response.status == .ok)
                    let outcome = try JSONDecoder.iso.decode(NotificationSummary.self, from: Data(response.body.readableBytesView))
                    #expect(outcome.outcomes.counts[.apns]?[.expiredChannel] == 1)
                    #expect(outcome.success == 0)
                }
                #expect(try await herald.store.registration(id: id) == nil)
            }
        }
    }

    @Test func throttlingIsRetriedUntilDelivered() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.router) { client in
                let alice = try await client.signUp("alice")
                let token = herald.apns.registerDevice(topic: TestHerald.topic)
                _ = try await client.register(alice, handle: token)
                herald.apns.injectFaults(.throttled, count: 2)
                try await client.execute(uri: "/api/notifications?pns=apns&to_tag=alice", method: .post, headers: alice, body: .json(#""retry me""#)) {
                    response in
                    let outcome = try JSONDecoder.iso.decode(NotificationSummary.self, from: Data(response.body.readableBytesView))
                    #expect(outcome.success == 1)
                }
                #expect(herald.apns.notifications(for: token).count == 1)
            }
        }
    }

    @Test func aUserWithNoDevicesGetsNoTargetFound() async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.router) { client in
                let alice = try await client.signUp("alice")
                try await client.execute(uri: "/api/notifications?pns=fcm&to_tag=nobody", method: .post, headers: alice, body: .json(#""hello?""#)) {
                    response in
                    #expect(response.status == .ok)
                    let outcome = try JSONDecoder.iso.decode(NotificationSummary.self, from: Data(response.body.readableBytesView))
                    #expect(outcome.state == "NoTargetFound")
                }
            }
        }
    }

    @Test(arguments: [
        ("/api/notifications?pns=apns&to_tag=bob", "\"" + String(repeating: "x", count: 4100) + "\"", HTTPResponse.Status.contentTooLarge, "4096"),
        ("/api/notifications?pns=mpns&to_tag=bob", #""hi""#, .badRequest, "retired"),
        ("/api/notifications?pns=apns", #""hi""#, .badRequest, "to_tag"),
        ("/api/notifications?pns=apns&to_tag=bob", "42", .badRequest, "JSON string"),
        ("/api/notifications?pns=apns&to_tag=bob", "", .badRequest, "empty"),
        ("/api/notifications?pns=apns&to_tag=bob%20smith", #""hi""#, .badRequest, "user name"),
    ])
    func badNotificationsAreRefusedAndNothingIsSent(uri: String, body: String, status: HTTPResponse.Status, message: String) async throws {
        try await TestHerald.withHerald { herald in
            try await herald.application().test(.router) { client in
                let alice = try await client.signUp("alice")
                let bob = try await client.signUp("bob")
                let token = herald.apns.registerDevice(topic: TestHerald.topic)
                _ = try await client.register(bob, handle: token)
                try await client.execute(uri: uri, method: .post, headers: alice, body: .json(body)) { response in
                    #expect(response.status == status)
                    #expect(response.body.string.contains(message), "\(response.body.string)")
                }
                #expect(herald.apns.notifications(for: token).isEmpty)
                #expect(try await herald.store.claimNotification(now: Date(), lease: .seconds(1), owner: "test") == nil)
            }
        }
    }

    /// A notification accepted before a crash is delivered after the restart.
    @Test func anAcceptedNotificationSurvivesARestart() async throws {
        try await TestHerald.withHerald { herald in
            let token = herald.apns.registerDevice(topic: TestHerald.topic)
            try await herald.store.insertRegistrations([
                Registration(id: "r-1", platform: .apns, handle: token, tags: ["username:alice"], owner: "alice")
            ])
            // Accepted, then the process "dies" before any worker ran.
            let content = NotificationContent.notifyUser(from: "bob", message: "survive")
            let record = try await herald.appHubEngine.send(SendRequest(target: .user("alice"), content: .native([try content.payload(for: .apns)]))).record
            try await herald.store.close()

            var logger = Logger(label: "test")
            logger.logLevel = .warning
            let reopened = try await SQLiteStore.open(path: herald.catalog.directoryStorage!.storePath(of: TestHerald.appHubName), logger: logger)
            let engine = HubEngine(store: reopened, providers: herald.providers, logger: logger)
            #expect(try await engine.deliverNext())
            let finished = try #require(try await reopened.notification(id: record.id))
            #expect(finished.state == .completed)
            #expect(finished.counts.total(.success) == 1)
            #expect(herald.apns.notifications(for: token).count == 1)
            try await reopened.close()
        }
    }
}

extension JSONDecoder {
    static let iso: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }()
}
