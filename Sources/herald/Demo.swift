import ArgumentParser
import Foundation
import HeraldClient
import HeraldCore
import HeraldEmulator
import HeraldHub
import HeraldServer
import Logging
import ServiceLifecycle

struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the notify-users flow once, offline, and show what every simulated device received.",
        discussion: """
            Starts Herald, the APNs and FCM emulators and three simulated devices in this process:
            alice's iPhone and Android phone and bob's iPhone. The devices sign in, register through the
            app backend's HTTP API, and bob notifies alice. Nothing is kept unless --data-dir is given.
            """
    )

    @Option(name: .customLong("data-dir"), help: "Keep the demo's data here (default: a temporary directory, removed afterwards).")
    var dataDirectory: String?

    @Option(name: .customLong("log-level"), help: "Server log level (default warning).")
    var logLevel: String = "warning"

    func run() async throws {
        let temporary = dataDirectory == nil
        let directory = dataDirectory ?? FileManager.default.temporaryDirectory
            .appendingPathComponent("herald-demo-\(UUID().uuidString.prefix(8))").path
        defer { if temporary { try? FileManager.default.removeItem(atPath: directory) } }

        var configuration = HeraldConfiguration()
        configuration.dataDirectory = directory
        configuration.port = 0
        configuration.bcryptCost = 8
        let logger = makeLogger("herald", level: Logger.Level(rawValue: logLevel) ?? .warning)
        let runtime = try await HeraldRuntime.start(configuration, logger: logger)
        guard let apns = runtime.apnsEmulator, let fcm = runtime.fcmEmulator else {
            throw ValidationError("the demo needs the built-in emulators")
        }
        var server = try runtime.serverConfiguration()
        server.port = 0
        let (portStream, portContinuation) = AsyncStream<Int>.makeStream()
        let app = buildApplication(
            hub: runtime.hub,
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
            try await Self.script(base: base, apns: apns, fcm: fcm, topic: configuration.emulatorTopic)
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        await runtime.shutdown()
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
                line("\(name)  \(notification.payload)")
            }
        }
        show("alice's iPhone  ", apns.notifications(for: aliceIPhone))
        show("alice's Android ", fcm.notifications(for: aliceAndroid))
        show("bob's iPhone    ", apns.notifications(for: bobIPhone))

        step("bob deletes the app: APNs now answers 410 Unregistered for his token")
        apns.unregister(token: bobIPhone)
        let toBob = try await aliceOnIPhone.notify(user: "bob", message: "Are you there?", platform: .apns)
        line("alice → bob: \(toBob.state), outcomes " + toBob.outcomes.counts.flatMap { p, c in c.map { "\(p) \($0.key) \($0.value)" } }.joined(separator: ", "))
        line("Herald removed the dead registration \(b1)")

        step("bob reinstalls: his device tries its old registration id and gets 410 Gone, asks for a new id and retries")
        let bobNewToken = apns.registerDevice(topic: topic)
        let b2 = try await bobOnIPhone.register(handle: bobNewToken, platform: .apns)
        line("bob's iPhone     registration \(b2) (was \(b1))")
        let retry = try await aliceOnIPhone.notify(user: "bob", message: "Welcome back!", platform: .apns)
        line("alice → bob: \(retry.state), \(retry.success) of \(retry.targets) delivered")
        show("bob's iPhone    ", apns.notifications(for: bobNewToken))
        print("\nDone. Run `herald serve` to keep a hub running, and `herald device` to simulate devices against it.")
    }
}
