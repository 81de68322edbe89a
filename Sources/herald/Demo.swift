import ArgumentParser
import Foundation
import HeraldClient
import HeraldCore
import HeraldEmulator
import HeraldHub
import HeraldHubWire
import HeraldServer
import Logging
import ServiceLifecycle

struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the notify-users, hub API, Live Activity, secure-push and rich-push flows once, offline, and show what every simulated device received.",
        discussion: """
            Starts Herald and the four push-service emulators in this process. alice's and bob's devices \
            sign in and register through the app backend's HTTP API, and bob notifies alice; a backend \
            written for the cloud hub keeps erin's devices as installations in a hub and sends them one \
            template notification through the hub REST API, starts a Live Activity by push, updates it twice, \
            ends it and broadcasts to a channel; dave sends carol a secure and a rich \
            notification. Nothing is kept unless --data-dir is given.
            """
    )

    @Option(name: .customLong("data-dir"), help: "Keep the demo's data here (default: a temporary directory, removed afterwards).")
    var dataDirectory: String?

    @Option(name: .customLong("log-level"), help: "Server log level (default warning).")
    var logLevel: String = "warning"

    func run() async throws {
        let temporary = dataDirectory == nil
        let directory =
            dataDirectory
            ?? FileManager.default.temporaryDirectory
            .appendingPathComponent("herald-demo-\(UUID().uuidString.prefix(8))").path
        defer { if temporary { try? FileManager.default.removeItem(atPath: directory) } }

        var configuration = HeraldConfiguration()
        configuration.dataDirectory = directory
        configuration.port = 0
        configuration.bcryptCost = 8
        let logger = makeLogger("herald", level: Logger.Level(rawValue: logLevel) ?? .warning)
        let runtime = try await HeraldRuntime.start(configuration, logger: logger)
        guard let apns = runtime.apnsEmulator, let fcm = runtime.fcmEmulator, let wns = runtime.wnsEmulator,
            let webPush = runtime.webPushEmulator
        else {
            throw ValidationError("the demo needs the built-in emulators")
        }
        var server = try runtime.serverConfiguration()
        server.port = 0
        let catalog = runtime.catalog
        let (portStream, portContinuation) = AsyncStream<Int>.makeStream()
        let app = buildApplication(
            hubs: runtime.registry,
            devices: runtime.userDevices,
            appStore: runtime.appStore,
            configuration: server,
            services: runtime.services,
            onServerRunning: { port in portContinuation.yield(port) },
            logger: logger
        )
        let group = ServiceGroup(services: [app], logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            var ports = portStream.makeAsyncIterator()
            guard let port = await ports.next() else { return }
            let base = URL(string: "http://127.0.0.1:\(port)")!
            do {
                try await Self.script(base: base, apns: apns, fcm: fcm, topic: configuration.emulatorTopic)
                try await Self.hubAPI(base: base, catalog: catalog, apns: apns, fcm: fcm, topic: configuration.emulatorTopic)
                try await Self.liveActivities(base: base, catalog: catalog, apns: apns, topic: configuration.emulatorTopic)
                try await Self.secureAndRich(base: base, apns: apns, fcm: fcm, wns: wns, webPush: webPush, topic: configuration.emulatorTopic)
            } catch {
                // Stop the server and close the stores before reporting what went wrong.
                await group.triggerGracefulShutdown()
                try? await tasks.waitForAll()
                await runtime.shutdown()
                throw error
            }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        await runtime.shutdown()
    }

    /// The hub REST API as a backend written for the cloud hub uses it: a connection string,
    /// an installation with a template, a template send to a user, and its outcome.
    static func hubAPI(base: URL, catalog: HubCatalog, apns: APNsEmulator, fcm: FCMEmulator, topic: String) async throws {
        func step(_ text: String) { print("\n▸ \(text)") }
        func line(_ text: String) { print("  \(text)") }

        step("The hub REST API: `herald hub create demo`, then a backend uses the hub's connection string")
        let definition = try await catalog.create(name: "demo")
        guard
            let full = catalog.connectionStrings(of: definition, endpoint: base.absoluteString + "/")
                .first(where: { $0.rule == SharedAccessRule.defaultFullRuleName })
        else { throw ValidationError("the new hub has no full-access rule") }
        line(full.connectionString.replacingOccurrences(of: #"SharedAccessKey=.*"#, with: "SharedAccessKey=…", options: .regularExpression))
        let client = try NotificationHubClient(connectionString: full.connectionString, hubName: "demo")

        step("erin's iPhone and Android phone are installations with a template (PUT /demo/installations/{id})")
        let erinIPhone = apns.registerDevice(topic: topic)
        let erinAndroid = fcm.registerDevice()
        let greetingOnIPhone = InstallationTemplate(body: #"{"aps":{"alert":"$(greeting), $(name)!"}}"#)
        let greetingOnAndroid = InstallationTemplate(body: #"{"message":{"notification":{"title":"$(greeting)","body":"$(name), .(news,24)"}}}"#)
        try await client.createOrUpdateInstallation(
            Installation(id: "erin-iphone", platform: .apns, pushChannel: erinIPhone, userId: "erin", templates: ["greeting": greetingOnIPhone])
        )
        try await client.createOrUpdateInstallation(
            Installation(id: "erin-android", platform: .fcm, pushChannel: erinAndroid, userId: "erin", templates: ["greeting": greetingOnAndroid])
        )
        let readBack = try await client.installation(id: "erin-iphone")
        line("read right after the PUT: erin-iphone, user \(readBack?.userId ?? "?"), templates \(readBack?.templates.keys.sorted() ?? [])")

        step("The backend sends one template notification to $UserId:{erin}; each device renders its own template")
        let id = try await client.send(
            .template(properties: ["greeting": "Hello", "name": "Erin", "news": "Your parcel left the warehouse this morning"]),
            tagExpression: "$UserId:{erin}"
        )
        var details = try await client.notificationDetails(id: id)
        for _ in 0..<100 where !["Completed", "Abandoned", "NoTargetFound"].contains(details.state.rawValue) {
            try await Task.sleep(for: .milliseconds(50))
            details = try await client.notificationDetails(id: id)
        }
        line("GET /demo/messages/\(id): \(details.state.rawValue), \(details.counts.total(.success)) Success")
        for notification in apns.notifications(for: erinIPhone) { line("erin's iPhone    \(notification.payload)") }
        for notification in fcm.notifications(for: erinAndroid) {
            line("erin's Android   \(notification.payload.replacingOccurrences(of: notification.token, with: notification.token.prefix(12) + "…"))")
        }
    }

    static func script(base: URL, apns: APNsEmulator, fcm: FCMEmulator, topic: String) async throws {
        func step(_ text: String) { print("\n▸ \(text)") }
        func line(_ text: String) { print("  \(text)") }

        print("Herald demo — the notify-users flow, offline (app backend at \(base.absoluteString))")
        step("Three simulated devices get push tokens from the emulators")
        let aliceIPhone = apns.registerDevice(topic: topic)
        let aliceAndroid = fcm.registerDevice()
        let bobIPhone = apns.registerDevice(topic: topic)
        line("alice's iPhone   APNs token \(aliceIPhone.prefix(16))…")
        line("alice's Android  FCM token  \(aliceAndroid.prefix(16))…")
        line("bob's iPhone     APNs token \(bobIPhone.prefix(16))…")

        step("alice and bob sign up; each device signs in (POST /api/accounts, POST /api/token)")
        let signUp = HeraldClient(baseURL: base)
        try await signUp.signUp(username: "alice", password: "alice-demo-password")
        try await signUp.signUp(username: "bob", password: "bob-demo-password")
        let aliceOnIPhone = HeraldClient(baseURL: base)
        let aliceOnAndroid = HeraldClient(baseURL: base)
        let bobOnIPhone = HeraldClient(baseURL: base)
        try await aliceOnIPhone.signIn(username: "alice", password: "alice-demo-password")
        try await aliceOnAndroid.signIn(username: "alice", password: "alice-demo-password")
        try await bobOnIPhone.signIn(username: "bob", password: "bob-demo-password")
        line("3 devices signed in with bearer tokens")

        step("Each device registers (POST /api/register?handle=…, then PUT /api/register/{id})")
        let a1 = try await aliceOnIPhone.register(handle: aliceIPhone, platform: .apns, tags: ["sports"])
        let a2 = try await aliceOnAndroid.register(handle: aliceAndroid, platform: .fcm)
        let b1 = try await bobOnIPhone.register(handle: bobIPhone, platform: .apns)
        line("alice's iPhone   registration \(a1)  tags sports, username:alice")
        line("alice's Android  registration \(a2)  tags username:alice")
        line("bob's iPhone     registration \(b1)  tags username:bob")

        step("alice reinstalls the app on her iPhone: it registers the same token again")
        let reinstalled = HeraldClient(baseURL: base)
        try await reinstalled.signIn(username: "alice", password: "alice-demo-password")
        let again = try await reinstalled.register(handle: aliceIPhone, platform: .apns, tags: ["sports"])
        line(again == a1 ? "the backend reused registration \(again): no duplicate" : "new registration \(again)")

        step("bob notifies alice: POST /api/notifications?to_tag=alice with \"Dinner at 8? 🍝\"")
        let outcome = try await bobOnIPhone.notify(user: "alice", message: "Dinner at 8? 🍝")
        line("notification \(outcome.id): \(outcome.state), \(outcome.success) of \(outcome.targets) delivered")
        for (platform, counts) in outcome.outcomes.counts.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            line("  \(platform): " + counts.map { "\($0.key) \($0.value)" }.sorted().joined(separator: ", "))
        }

        step("What each device received")
        func show(_ name: String, _ received: [ReceivedNotification]) {
            if received.isEmpty {
                line("\(name)  nothing")
            }
            for notification in received {
                // The FCM emulator records the whole message, token included: shorten the token.
                line("\(name)  \(notification.payload.replacingOccurrences(of: notification.token, with: notification.token.prefix(12) + "…"))")
            }
        }
        show("alice's iPhone  ", apns.notifications(for: aliceIPhone))
        show("alice's Android ", fcm.notifications(for: aliceAndroid))
        show("bob's iPhone    ", apns.notifications(for: bobIPhone))

        step("bob deletes the app: APNs now answers 410 Unregistered for his token")
        apns.unregister(token: bobIPhone)
        let toBob = try await aliceOnIPhone.notify(user: "bob", message: "Are you there?", platform: .apns)
        line(
            "alice → bob: \(toBob.state), outcomes " + toBob.outcomes.counts.flatMap { p, c in c.map { "\(p) \($0.key) \($0.value)" } }.joined(separator: ", "))
        line("Herald removed the dead registration \(b1)")

        step("bob reinstalls: his device tries its old registration id and gets 410 Gone, asks for a new id and retries")
        let bobNewToken = apns.registerDevice(topic: topic)
        let b2 = try await bobOnIPhone.register(handle: bobNewToken, platform: .apns)
        line("bob's iPhone     registration \(b2) (was \(b1))")
        let retry = try await aliceOnIPhone.notify(user: "bob", message: "Welcome back!", platform: .apns)
        line("alice → bob: \(retry.state), \(retry.success) of \(retry.targets) delivered")
        show("bob's iPhone    ", apns.notifications(for: bobNewToken))
    }

    /// Secure push and rich push, on an iPhone, a browser and a Windows laptop.
    static func secureAndRich(base: URL, apns: APNsEmulator, fcm: FCMEmulator, wns: WNSEmulator, webPush: WebPushEmulator, topic: String) async throws {
        func step(_ text: String) { print("\n▸ \(text)") }
        func line(_ text: String) { print("  \(text)") }

        step("carol signs in on her iPhone, her browser (Web Push) and her Windows laptop (WNS)")
        let setup = HeraldClient(baseURL: base)
        try await setup.signUp(username: "carol", password: "carol-demo-password")
        try await setup.signUp(username: "dave", password: "dave-demo-password")
        let iPhone = apns.registerDevice(topic: topic)
        let subscription = webPush.subscribe()
        let channel = wns.registerChannel()
        var devices: [(name: String, platform: Platform, client: HeraldClient, inbox: () -> [ReceivedNotification])] = []
        for (name, platform, handle, keys, inbox) in [
            ("carol's iPhone ", Platform.apns, iPhone, WebPushKeys?.none, { apns.notifications(for: iPhone) }),
            ("carol's browser", .webpush, subscription.endpoint, subscription.keys, { webPush.notifications(for: subscription) }),
            ("carol's laptop ", .wns, channel, nil, { wns.notifications(for: channel) }),
        ] as [(String, Platform, String, WebPushKeys?, () -> [ReceivedNotification])] {
            let client = HeraldClient(baseURL: base)
            try await client.signIn(username: "carol", password: "carol-demo-password")
            let id = try await client.register(handle: handle, platform: platform, webPushKeys: keys)
            devices.append((name, platform, client, inbox))
            line("\(name)  \(platform) registration \(id)")
        }
        let dave = HeraldClient(baseURL: base)
        try await dave.signIn(username: "dave", password: "dave-demo-password")

        step("Secure push: dave sends carol an account PIN; only its id travels through the push services")
        let secure = try await dave.sendSecure(to: "carol", payload: .object([("pin", .string("8461")), ("account", .string("checking"))]))
        line("secure message \(secure.secureID): \(secure.notification.success) of \(secure.notification.targets) devices notified")
        for device in devices {
            let payload = device.inbox().last?.payload ?? ""
            let shown = device.platform == .wns ? String(decoding: Data(base64Encoded: payload) ?? Data(), as: UTF8.self) : payload
            line("\(device.name)  received \(shown)")
        }
        // As the secure-push tutorial's iOS code reads it: [[userInfo objectForKey:@"secureId"] intValue].
        let secureID = Self.tutorialIntValue(of: NotificationDataKey.secureID, in: devices[0].inbox().last?.payload)
        let fetched = try await devices[0].client.fetchSecurePayload(id: String(secureID))
        line("carol's iPhone reads secureId with intValue (\(secureID)) and fetches GET /api/notifications/\(secureID):")
        line("  Payload \(String(decoding: try JSONEncoder().encode(fetched.payload), as: UTF8.self)), read before: \(fetched.read)")
        do {
            _ = try await dave.fetchSecurePayload(id: secure.secureID)
            line("dave could read it: that would be a bug")
        } catch let error as HeraldClientError {
            line("dave asks for the same id: HTTP \(error.status) — only the addressee can read it")
        }

        step("Rich push: dave shares a picture; the devices get its id, type (img) and a short message, and fetch it")
        let picture = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) + Data(repeating: 0x2A, count: 4096)
        let upload = try await dave.uploadRich(picture, type: "image/png")
        line("uploaded \(upload.id) (\(upload.type), \(upload.size) bytes)")
        let rich = try await dave.sendRich(to: "carol", richID: upload.id, message: "Our new office!")
        line("rich notification: \(rich.notification.success) of \(rich.notification.targets) devices notified")
        line("carol's iPhone   received \(devices[0].inbox().last?.payload ?? "")")
        // As the rich-push tutorial's iOS code does: richId with intValue, and a fetch only when richType is img.
        let richID = Self.tutorialIntValue(of: NotificationDataKey.richID, in: devices[0].inbox().last?.payload)
        let content = try await devices[0].client.fetchRichContent(id: String(richID))
        line(
            "carol's iPhone reads richId with intValue (\(richID)), richType img: GET /api/notifications/\(richID) → \(content.type), \(content.data.count) bytes"
        )
        let alert = try await dave.sendRich(to: "carol", richID: upload.id, message: "Our new office!", style: .alert, platform: .apns)
        line("the alert variant for an iOS notification service extension (\(alert.notification.state)):")
        line("  \(devices[0].inbox().last?.payload ?? "")")
        print("\nDone. Run `herald serve` to keep a hub running, and `herald device` to simulate devices against it.")
    }

    /// `[[userInfo objectForKey:key] intValue]` on an APNs payload, as the tutorials' iOS code
    /// reads an id; 0 when there is none.
    static func tutorialIntValue(of key: String, in payload: String?) -> Int32 {
        guard let payload, case .string(let value)? = try? JSONValue(parsing: payload.utf8)[key] else {
            return 0
        }
        return NSString(string: value).intValue
    }
}
