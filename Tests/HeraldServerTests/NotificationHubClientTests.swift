import Foundation
import HeraldClient
import HeraldCore
import HeraldEmulator
import HeraldHub
import HeraldHubWire
import HeraldServer
import HeraldTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The Swift hub SDK against a live Herald's hub API: every operation round-trips, sends
/// reach the emulated devices, and the hub's errors surface as `HeraldError` codes. Each
/// test runs over TLS (AsyncHTTPClient trusting the generated CA) and over `URLSession`
/// (plain HTTP: `URLSession` on Linux trusts only the system store).
@Suite struct NotificationHubClientTests {
    @Test(arguments: [HubTestServer.Route.tls, .urlSession])
    func registrationsRoundTrip(route: HubTestServer.Route) async throws {
        try await HubTestServer.withServer { server in
            let hub = try server.client(route)
            let token = server.herald.apns.registerDevice(topic: TestHerald.topic)

            // An id from the hub, then a create-or-update with it.
            let id = try await hub.createRegistrationID()
            #expect(RegistrationID.isWellFormed(id))
            let saved = try await hub.createOrUpdateRegistration(
                Registration(id: id, platform: .apns, handle: token.uppercased(), tags: ["sports", "username:alice"])
            )
            #expect(saved.id == id)
            #expect(saved.platform == .apns && saved.handle == token.lowercased())
            #expect(saved.tags == ["sports", "username:alice"])
            #expect(saved.version == 1)

            let read = try #require(try await hub.registration(id: id))
            #expect(read.handle == saved.handle && read.tags == saved.tags && read.version == 1)

            // An update at the version read, then one at a stale version.
            var changed = read
            changed.tags = ["news", "username:alice"]
            let updated = try await hub.updateRegistration(changed)
            #expect(updated.tags == ["news", "username:alice"])
            #expect(updated.version == 2)
            let stale = await #expect(throws: HeraldError.self) { try await hub.updateRegistration(changed) }
            #expect(stale?.code == .preconditionFailed)

            // A registration whose id the hub picks; a template registration.
            let fcmToken = server.herald.fcm.registerDevice()
            let created = try await hub.createRegistration(Registration(id: "ignored", platform: .fcm, handle: fcmToken, tags: ["news"]))
            #expect(created.id != "ignored" && RegistrationID.isWellFormed(created.id))
            #expect(created.platform == .fcm && created.handle == fcmToken && !created.legacyGCM)
            let template = RegistrationTemplate(name: "greeting", body: #"{"aps":{"alert":"$(message)"}}"#)
            let templated = try await hub.createRegistration(
                Registration(id: "", platform: .apns, handle: token, tags: ["news"], template: template, pushVariables: ["name": "Alice"])
            )
            let templatedRead = try #require(try await hub.registration(id: templated.id))
            #expect(templatedRead.template == template)
            #expect(templatedRead.pushVariables == ["name": "Alice"])

            // By channel (the APNs token as the device sends it), by tag in pages, all in pages.
            let byChannel = try await hub.registrations(channel: token.uppercased())
            #expect(Set(byChannel.map(\.id)) == [id, templated.id])
            #expect(try await hub.registrations(channel: "it's not a handle").isEmpty)
            let first = try await hub.registrations(tag: "news", top: 2)
            #expect(first.items.count == 2)
            let firstToken = try #require(first.continuationToken)
            let second = try await hub.registrations(tag: "news", top: 2, continuationToken: firstToken)
            #expect(second.items.count == 1 && second.continuationToken == nil)
            #expect(Set((first.items + second.items).map(\.id)) == [id, created.id, templated.id])
            var all: [Registration] = []
            var next: String?
            repeat {
                let page = try await hub.registrations(top: 1, continuationToken: next)
                all += page.items
                next = page.continuationToken
            } while next != nil
            #expect(all.map(\.id) == [id, created.id, templated.id].sorted())

            // Deletes: at a stale version, then for real, then again.
            let staleDelete = await #expect(throws: HeraldError.self) { try await hub.deleteRegistration(id: id, ifVersion: 1) }
            #expect(staleDelete?.code == .preconditionFailed)
            try await hub.deleteRegistration(id: id, ifVersion: 2)
            #expect(try await hub.registration(id: id) == nil)
            let missing = await #expect(throws: HeraldError.self) { try await hub.deleteRegistration(id: id) }
            #expect(missing?.code == .notFound)

            // An id the hub never issued is gone.
            let gone = await #expect(throws: HeraldError.self) {
                try await hub.createOrUpdateRegistration(Registration(id: RegistrationID.make(), platform: .apns, handle: token))
            }
            #expect(gone?.code == .gone)
            #expect(gone?.message.contains("registrationid") == true)
        }
    }

    @Test(arguments: [HubTestServer.Route.tls, .urlSession])
    func installationsRoundTrip(route: HubTestServer.Route) async throws {
        try await HubTestServer.withServer { server in
            let hub = try server.client(route)
            let token = server.herald.apns.registerDevice(topic: TestHerald.topic)
            let installation = Installation(
                id: "ipad:alice@home=1",
                platform: .apns,
                pushChannel: token,
                userId: "alice",
                tags: ["news"],
                templates: ["greeting": InstallationTemplate(body: #"{"aps":{"alert":"Hi $(name): $(message)"}}"#, tags: ["greetings"])],
                pushVariables: ["name": "Alice"]
            )
            try await hub.createOrUpdateInstallation(installation)
            let read = try #require(try await hub.installation(id: installation.id))
            #expect(read.platform == .apns && read.pushChannel == token && read.userId == "alice")
            #expect(read.tags == ["news"] && read.templates == installation.templates && read.pushVariables == ["name": "Alice"])
            #expect(read.version == 1 && !read.pushChannelExpired)

            try await hub.patchInstallation(
                id: installation.id,
                [.add("/tags/sports"), .remove("/tags/news"), .replace("/userId", value: .string("bob"))]
            )
            let patched = try #require(try await hub.installation(id: installation.id))
            #expect(patched.tags == ["sports"] && patched.userId == "bob")
            #expect(patched.version == 2)
            let refused = await #expect(throws: HeraldError.self) {
                try await hub.patchInstallation(id: installation.id, [InstallationPatchOperation(op: "move", path: "/tags")])
            }
            #expect(refused?.code == .badRequest)

            // Listed and queried by user and tag, in pages.
            try await hub.createOrUpdateInstallation(
                Installation(id: "phone-2", platform: .fcm, pushChannel: server.herald.fcm.registerDevice(), userId: "bob"))
            let bobs = try await hub.installations(userId: "bob", top: 1)
            #expect(bobs.items.count == 1)
            #expect(bobs.continuationToken != nil)
            let rest = try await hub.installations(userId: "bob", top: 1, continuationToken: bobs.continuationToken)
            #expect(Set((bobs.items + rest.items).map(\.id)) == [installation.id, "phone-2"])
            #expect(try await hub.installations(tag: "sports").items.map(\.id) == [installation.id])
            #expect(try await hub.installations(userId: "carol").items.isEmpty)

            // Reachable by its implicit tag; its template renders with its push variables.
            let id = try await hub.send(.template(properties: ["message": "tea?"]), tagExpression: "$InstallationId:{\(installation.id)}")
            let details = try await finished(hub, id)
            #expect(details.state == .completed)
            #expect(details.counts.total(.success) == 1)
            #expect(server.herald.apns.notifications(for: token).last.map { ReceiptIDs.removed(from: $0.payload) } == #"{"aps":{"alert":"Hi Alice: tea?"}}"#)

            try await hub.deleteInstallation(id: installation.id)
            #expect(try await hub.installation(id: installation.id) == nil)
            #expect(try await hub.installation(id: "never-was") == nil)
        }
    }

    @Test(arguments: [HubTestServer.Route.tls, .urlSession])
    func sendsReachTheDevicesAndAreReported(route: HubTestServer.Route) async throws {
        try await HubTestServer.withServer { server in
            let hub = try server.client(route)
            let herald = server.herald
            let apnsToken = herald.apns.registerDevice(topic: TestHerald.topic)
            let fcmToken = herald.fcm.registerDevice()
            let channel = herald.wns.registerChannel()
            let subscription = herald.webPush.subscribe()
            for (platform, handle, keys) in [
                (Platform.apns, apnsToken, WebPushKeys?.none), (.fcm, fcmToken, nil), (.wns, channel, nil),
                (.webpush, subscription.endpoint, subscription.keys),
            ] {
                let id = try await hub.createRegistrationID()
                _ = try await hub.createOrUpdateRegistration(
                    Registration(id: id, platform: platform, handle: handle, webPushKeys: keys, tags: ["everyone", "\(platform)"])
                )
            }

            // Native sends, one per platform, to a tag expression.
            let apple = HubNotification.apple(
                json: .object([("aps", .object([("alert", .string("Goal! 1-0"))]))]), headers: ["apns-push-type": "alert", "apns-priority": "10"]
            )
            let appleID = try await hub.send(apple, tagExpression: "everyone && apns")
            let appleDetails = try await finished(hub, appleID)
            #expect(appleDetails.id == appleID && appleDetails.state == .completed)
            #expect(appleDetails.counts.counts[.apns]?[.success] == 1 && appleDetails.counts.total == 1)
            #expect(appleDetails.tags == "everyone && apns")
            let received = try #require(herald.apns.notifications(for: apnsToken).last)
            #expect(ReceiptIDs.removed(from: received.payload) == #"{"aps":{"alert":"Goal! 1-0"}}"#)
            #expect(received.headers["apns-push-type"] == "alert" && received.headers["apns-priority"] == "10")

            let fcmID = try await hub.send(.fcmV1(json: .object([("data", .object([("score", .string("1-0"))]))])), tags: ["fcm", "nobody"])
            #expect(try await finished(hub, fcmID).counts.counts[.fcm]?[.success] == 1)
            let fcmJSON = try JSONDecoder().decode(JSONValue.self, from: Data(try #require(herald.fcm.notifications(for: fcmToken).last).payload.utf8))
            #expect(fcmJSON["data"]?["score"] == .string("1-0") && fcmJSON["token"] == .string(fcmToken))
            let gcmID = try await hub.send(.gcm(json: .object([("data", .object([("score", .string("2-0"))]))])), tagExpression: "fcm")
            #expect(try await finished(hub, gcmID).counts.counts[.fcm]?[.success] == 1)
            let gcmJSON = try JSONDecoder().decode(JSONValue.self, from: Data(try #require(herald.fcm.notifications(for: fcmToken).last).payload.utf8))
            #expect(gcmJSON["data"]?["score"] == .string("2-0"))

            let toast = #"<toast><visual><binding template="ToastGeneric"><text>Goal!</text></binding></visual></toast>"#
            let wnsID = try await hub.send(.windows(xml: toast, type: .toast), tagExpression: "wns")
            #expect(try await finished(hub, wnsID).counts.counts[.wns]?[.success] == 1)
            #expect(herald.wns.notifications(for: channel).last?.payload == toast)
            let rawID = try await hub.send(.windowsRaw(Data("raw bytes".utf8)), tagExpression: "wns")
            #expect(try await finished(hub, rawID).counts.counts[.wns]?[.success] == 1)
            // The emulator records a raw notification's bytes in base64.
            #expect(herald.wns.notifications(for: channel).last?.payload == Data("raw bytes".utf8).base64EncodedString())
            #expect(herald.wns.notifications(for: channel).last?.headers["x-wns-type"] == "wns/raw")

            let browserID = try await hub.send(.browser(json: .object([("title", .string("Goal!"))])), tagExpression: "webpush")
            #expect(try await finished(hub, browserID).counts.counts[.webpush]?[.success] == 1)
            #expect(herald.webPush.notifications(for: subscription).last.map { ReceiptIDs.removed(from: $0.payload) } == #"{"title":"Goal!"}"#)

            // A template send reaches template registrations only.
            let templateID = try await hub.createRegistrationID()
            _ = try await hub.createOrUpdateRegistration(
                Registration(
                    id: templateID, platform: .apns, handle: apnsToken, tags: ["everyone"],
                    template: RegistrationTemplate(name: "score", body: #"{"aps":{"alert":"$(home) $(score) $(away)"}}"#)
                )
            )
            let templated = try await hub.send(
                .template(properties: ["home": "Ajax", "score": "2-0", "away": "PSV"], templateName: "score"), tagExpression: "everyone")
            let templatedDetails = try await finished(hub, templated)
            #expect(templatedDetails.counts.total(.success) == 1, "\(templatedDetails.counts)")
            #expect(herald.apns.notifications(for: apnsToken).last.map { ReceiptIDs.removed(from: $0.payload) } == #"{"aps":{"alert":"Ajax 2-0 PSV"}}"#)

            // Direct: to a handle no registration holds, one and many; a browser subscription.
            let stranger = herald.apns.registerDevice(topic: TestHerald.topic)
            let directID = try await hub.sendDirect(apple, deviceHandle: stranger)
            #expect(try await finished(hub, directID).counts.total(.success) == 1)
            #expect(herald.apns.notifications(for: stranger).count == 1)
            let others = (0..<3).map { _ in herald.apns.registerDevice(topic: TestHerald.topic) }
            let batchID = try await hub.sendDirectBatch(apple, deviceHandles: others)
            #expect(try await finished(hub, batchID).counts.total(.success) == 3)
            for token in others { #expect(herald.apns.notifications(for: token).count == 1) }
            let visitor = herald.webPush.subscribe()
            let browserDirect = try await hub.sendDirect(.browser(json: .string("hello")), deviceHandle: visitor.endpoint, webPushKeys: visitor.keys)
            #expect(try await finished(hub, browserDirect).counts.total(.success) == 1)
            #expect(herald.webPush.notifications(for: visitor).last?.payload == #""hello""#)
            let visitors = [herald.webPush.subscribe(), herald.webPush.subscribe()]
            let browserBatch = try await hub.sendDirectBatch(
                .browser(json: .string("hi all")), browserSubscriptions: Dictionary(uniqueKeysWithValues: visitors.map { ($0.endpoint, $0.keys) })
            )
            #expect(try await finished(hub, browserBatch).counts.total(.success) == 2)
            for visitor in visitors { #expect(herald.webPush.notifications(for: visitor).last?.payload == #""hi all""#) }

            // A test send answers with each device's outcome.
            let outcome = try await hub.testSend(apple, tagExpression: "apns")
            #expect(outcome.success == 1 && outcome.failure == 0)
            #expect(outcome.results.map(\.platform) == ["apple"])
            #expect(outcome.results.first?.pnsHandle == apnsToken && outcome.results.first?.outcome == "Success")

            // Scheduled: one due in a moment is delivered; one far off is cancelled.
            let before = herald.fcm.notifications(for: fcmToken).count
            let soon = try await hub.schedule(
                .fcmV1(json: .object([("data", .object([("when", .string("soon"))]))])), at: Date().addingTimeInterval(1), tagExpression: "fcm")
            let soonDetails = try await finished(hub, soon)
            #expect(soonDetails.state == .completed && soonDetails.counts.total(.success) == 1)
            #expect(herald.fcm.notifications(for: fcmToken).count == before + 1)
            let later = try await hub.schedule(apple, at: Date().addingTimeInterval(3600), tagExpression: "apns")
            #expect(try await hub.notificationDetails(id: later).state == .scheduled)
            try await hub.cancelScheduled(id: later)
            #expect(try await hub.notificationDetails(id: later).state == .cancelled)
        }
    }

    @Test(arguments: [HubTestServer.Route.tls, .urlSession])
    func theHubsErrorsSurfaceAsHeraldErrors(route: HubTestServer.Route) async throws {
        try await HubTestServer.withServer { server in
            let full = try server.client(route)
            let listen = try server.client(route, rule: SharedAccessRule.defaultListenRuleName)

            // 401: a key the hub does not have.
            var wrong = try ConnectionString(parsing: server.connectionString(route))
            wrong.key = SharedAccessRule.generateKey()
            let badKey = try server.client(route, connectionString: wrong.description)
            let unauthorized = await #expect(throws: HeraldError.self) { try await badKey.createRegistrationID() }
            #expect(unauthorized?.code == .unauthorized)
            #expect(unauthorized?.message.isEmpty == false)
            #expect(unauthorized?.message.contains(wrong.key) == false)
            // … and a hub that does not exist.
            let nowhere = try NotificationHubClient(connectionString: server.connectionString(.urlSession), hubName: "nohub")
            let unknownHub = await #expect(throws: HeraldError.self) { try await nowhere.createRegistrationID() }
            #expect(unknownHub?.code == .unauthorized || unknownHub?.code == .notFound)

            // 403: a Listen key may register, not send or list.
            let id = try await listen.createRegistrationID()
            _ = try await listen.createOrUpdateRegistration(Registration(id: id, platform: .fcm, handle: server.herald.fcm.registerDevice()))
            let forbidden = await #expect(throws: HeraldError.self) {
                try await listen.send(.fcmV1(json: .object([("data", .object([]))])), tagExpression: "x")
            }
            #expect(forbidden?.code == .forbidden)
            #expect(forbidden?.message.contains("Send") == true)
            let listing = await #expect(throws: HeraldError.self) { try await listen.registrations(top: 10) }
            #expect(listing?.code == .forbidden)

            // 404, 410, 412.
            #expect(try await full.registration(id: RegistrationID.make()) == nil)
            let details = await #expect(throws: HeraldError.self) { try await full.notificationDetails(id: "no-such-notification") }
            #expect(details?.code == .notFound)
            let cancel = await #expect(throws: HeraldError.self) { try await full.cancelScheduled(id: "no-such-notification") }
            #expect(cancel?.code == .notFound)
            let gone = await #expect(throws: HeraldError.self) {
                try await full.createOrUpdateRegistration(Registration(id: RegistrationID.make(), platform: .fcm, handle: "token-1"))
            }
            #expect(gone?.code == .gone)
            let current = try #require(try await full.registration(id: id))
            var stale = current
            stale.version = current.version + 5
            let precondition = await #expect(throws: HeraldError.self) { try await full.updateRegistration(stale) }
            #expect(precondition?.code == .preconditionFailed)

            // 400 from the hub, with its explanation; and the client's own checks.
            let badTemplate = await #expect(throws: HeraldError.self) {
                try await full.send(HubNotification(format: .template, body: Data("[1]".utf8), contentType: "application/json"))
            }
            #expect(badTemplate?.code == .badRequest)
            #expect(badTemplate?.message.contains("JSON object") == true)
            await #expect(throws: HeraldError.self) { try await full.send(.template(properties: [:]), tags: []) }
            await #expect(throws: HeraldError.self) {
                try await full.send(.apple(json: .object([]), headers: ["X-Apns-Priority": "10"]), tagExpression: "x")
            }
            #expect(throws: HeraldError.self) { try NotificationHubClient(connectionString: "Endpoint=sb://h/", hubName: "x") }
            #expect(throws: HeraldError.self) { try NotificationHubClient(connectionString: server.connectionString(), hubName: "a/b") }
        }
    }

    /// `URLSession` does not trust the hub's generated CA (on Linux nothing but the system
    /// trust store can make it), so the SDK fails with the transport's error, not a hub error.
    @Test func urlSessionRefusesAnUntrustedCertificate() async throws {
        try await HubTestServer.withServer { server in
            let hub = try NotificationHubClient(connectionString: server.connectionString(.tls), hubName: HubTestServer.hubName)
            let error = await #expect(throws: (any Error).self) { try await hub.createRegistrationID() }
            #expect(error != nil && !(error is HeraldError), "\(String(describing: error))")
        }
    }

    @Test func requestsAreSignedAndVersionedAsTheSDKsSendThem() throws {
        let connection = "Endpoint=sb://push.example.com:8443/;SharedAccessKeyName=DefaultFullSharedAccessSignature;SharedAccessKey=c2VjcmV0LWtleQ=="
        let hub = try NotificationHubClient(connectionString: connection, hubName: "my.hub_1", tokenLifetime: .seconds(600))
        #expect(hub.hubURL.absoluteString == "https://push.example.com:8443/my.hub_1")
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let request = hub.makeRequest(
            "GET", path: ["tags", "a:b#c", "registrations"], query: [(name: "$filter", value: "ChannelUri eq 'x+y&z'")], now: now
        )
        #expect(
            request.url?.absoluteString
                == "https://push.example.com:8443/my.hub_1/tags/a:b%23c/registrations?$filter=ChannelUri%20eq%20%27x%2By%26z%27&api-version=2020-06"
        )
        #expect(request.value(forHTTPHeaderField: "x-ms-version") == "2020-06")
        let token = try SharedAccessSignature(parsing: try #require(request.value(forHTTPHeaderField: "Authorization")))
        #expect(token.keyName == "DefaultFullSharedAccessSignature")
        #expect(token.expiry == 1_800_000_600)
        #expect(token.isValid(key: "c2VjcmV0LWtleQ==", now: now))
        #expect(token.covers(url: "https://push.example.com:8443/my.hub_1/messages"))
        #expect(!token.covers(url: "https://push.example.com:8443/my.hub_2/messages"))
    }
}

/// Reads a notification's details until its delivery ended (or 20 s passed: then the last
/// details read, whose state the test checks).
func finished(_ hub: NotificationHubClient, _ id: String) async throws -> NotificationDetails {
    let deadline = ContinuousClock.now.advanced(by: .seconds(20))
    while true {
        let details = try await hub.notificationDetails(id: id)
        switch details.state {
        case .completed, .abandoned, .noTargetFound, .cancelled: return details
        default:
            if ContinuousClock.now >= deadline { return details }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}
