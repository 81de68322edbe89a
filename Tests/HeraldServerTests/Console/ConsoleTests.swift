import Foundation
import HTTPTypes
import HeraldCore
import HeraldEmulator
import HeraldHub
import HeraldServer
import HeraldStore
import HeraldTestSupport
import Hummingbird
import HummingbirdTesting
import Testing

/// The console through its HTTP routes: signing in with a one-time password, every page's
/// work (hubs, keys, devices, test send, notifications, the queue), and the attacks it must
/// refuse. The browser test (`ConsoleBrowserCommandTests`) drives the same pages in Chromium.
@Suite struct ConsoleTests {
    /// Runs `body` with a console whose operator `root` has signed in and chosen a password.
    static func withConsole(
        _ body: @Sendable (TestHerald, Console, ConsoleClient, any TestClientProtocol) async throws -> Void
    ) async throws {
        try await TestHerald.withHerald(configure: { $0.hubEndpoint = "sb://127.0.0.1:8443/" }) { herald in
            let console = try Console(hubs: herald.registry, configuration: herald.server)
            let (_, password) = try await console.operators.create(name: "root")
            try await herald.application(console: console).test(.router) { client in
                let browser = ConsoleClient(client)
                let signedIn = try await browser.signIn("root", password)
                #expect(signedIn.status == .seeOther)
                #expect(signedIn.location == "/console/password")
                let changed = try await browser.post("/console/password", ["current": password, "new": "a long new password"])
                #expect(changed.location == "/console/hubs?done=password")
                try await body(herald, console, browser, client)
            }
        }
    }

    @Test func theOneTimePasswordOnlyLeadsToChoosingANewOne() async throws {
        try await TestHerald.withHerald { herald in
            let console = try Console(hubs: herald.registry, configuration: herald.server)
            let (created, password) = try await console.operators.create(name: "Ops")
            #expect(created.name == "ops")
            #expect(created.mustChangePassword)
            #expect(password.count == 24)
            try await herald.application(console: console).test(.router) { client in
                let browser = ConsoleClient(client)
                let signedIn = try await browser.signIn("ops", password)
                let cookie = try #require(signedIn.headers[values: .setCookie].first { $0.hasPrefix("herald_console=") })
                #expect(cookie.contains("HttpOnly"))
                #expect(cookie.contains("SameSite=Strict"))
                #expect(cookie.contains("Path=/console"))
                #expect(!cookie.contains("Secure"), "plain HTTP: a Secure cookie would never come back")
                // Every page but the password form sends the operator back to it.
                #expect(try await browser.get("/console/hubs").location == "/console/password")
                #expect(try await browser.post("/console/hubs", ["name": "sneaky"]).status == .forbidden)
                #expect(try await herald.catalog.hub(named: "sneaky") == nil)
                // Too short, the same, a wrong current one: refused, and nothing changes.
                #expect(try await browser.post("/console/password", ["current": password, "new": "short"]).status == .badRequest)
                #expect(try await browser.post("/console/password", ["current": "wrong", "new": "a long new password"]).status == .badRequest)
                #expect(try await browser.post("/console/password", ["current": password, "new": "a long new password"]).status == .seeOther)
                #expect(try await browser.get("/console/hubs").status == .ok)
                // The one-time password no longer works; the new one does.
                let again = ConsoleClient(client)
                #expect(try await again.signIn("ops", password).status == .unauthorized)
                #expect(try await again.signIn("ops", "a long new password").location == "/console/hubs")
            }
            #expect(try await console.operators.list().map(\.mustChangePassword) == [false])
        }
    }

    /// Operators and sessions are kept with the hubs, not in the process: a restarted server
    /// (a new `Console` on the same data directory) knows the signed-in operator.
    @Test func aSessionOutlivesARestart() async throws {
        try await TestHerald.withHerald { herald in
            let before = try Console(hubs: herald.registry, configuration: herald.server)
            let (_, password) = try await before.operators.create(name: "ops")
            let cookies = try await herald.application(console: before).test(.router) { client async throws -> [String: String] in
                let browser = ConsoleClient(client)
                _ = try await browser.signIn("ops", password)
                #expect(try await browser.post("/console/password", ["current": password, "new": "a long new password"]).status == .seeOther)
                return browser.cookies
            }
            let after = try Console(hubs: herald.registry, configuration: herald.server)
            try await herald.application(console: after).test(.router) { client async throws in
                let browser = ConsoleClient(client)
                browser.cookies = cookies
                // A page that needs the session and nothing else (the first run closed the hubs).
                #expect(try await browser.get("/console/password").status == .ok)
                #expect(try await browser.post("/console/sign-out").location == "/console/sign-in")
                #expect(try await browser.get("/console/password").location == "/console/sign-in")
            }
        }
    }

    @Test func theCookieIsSecureBehindATLSProxy() async throws {
        try await TestHerald.withHerald(configure: { $0.publicURL = "https://push.example.com" }) { herald in
            let console = try Console(hubs: herald.registry, configuration: herald.server)
            let (_, password) = try await console.operators.create(name: "ops")
            try await herald.application(console: console).test(.router) { client in
                let signedIn = try await ConsoleClient(client).signIn("ops", password)
                let cookie = try #require(signedIn.headers[values: .setCookie].first { $0.hasPrefix("herald_console=") })
                #expect(cookie.contains("Secure"))
            }
        }
    }

    @Test func hubsAreCreatedShownAndDeletedWithConfirmation() async throws {
        try await Self.withConsole { herald, _, browser, _ in
            let created = try await browser.post("/console/hubs", ["name": "shop"])
            #expect(created.location == "/console/hubs/shop?done=created")
            #expect(try await herald.catalog.hub(named: "shop") != nil)
            let page = try await browser.get("/console/hubs/shop")
            #expect(page.status == .ok)
            #expect(page.body.contains("DefaultListenSharedAccessSignature"))
            #expect(page.body.contains("DefaultFullSharedAccessSignature"))
            // Keys are not on the page; they come on request, with the CSRF token.
            let definition = try #require(try await herald.catalog.hub(named: "shop"))
            #expect(!page.body.contains(definition.rules[0].primaryKey))
            // Each credential's send budget is beside its state.
            #expect(page.body.contains("No send limit"), "APNs has none unless set")
            _ = try await herald.catalog.setSendRates(name: "shop", [.apns: try SendRate(perMinute: 6000)])
            let budgeted = try await browser.get("/console/hubs/shop").body
            #expect(budgeted.contains("Send budget 6,000/min, 100 of 100 free now"), "\(budgeted)")
            #expect(try await browser.post("/console/hubs/shop/keys/DefaultFullSharedAccessSignature", csrf: "").status == .forbidden)
            let keys = try await browser.post("/console/hubs/shop/keys/DefaultFullSharedAccessSignature")
            let full = try #require(definition.rule(named: "DefaultFullSharedAccessSignature"))
            #expect(keys.body.contains(full.primaryKey) && keys.body.contains(full.secondaryKey))
            #expect(keys.body.contains("Endpoint=sb://"))
            // Rotating replaces the key.
            #expect(try await browser.post("/console/hubs/shop/keys/DefaultFullSharedAccessSignature/rotate", ["slot": "primary"]).status == .seeOther)
            #expect(try await herald.catalog.hub(named: "shop")?.rule(named: "DefaultFullSharedAccessSignature")?.primaryKey != full.primaryKey)
            // A bad name: a precise error, nothing created.
            let bad = try await browser.post("/console/hubs", ["name": "no spaces"])
            #expect(bad.status == .badRequest)
            #expect(try await herald.catalog.list().count == 2)
            // Deleting asks for the name.
            #expect(try await browser.post("/console/hubs/shop/delete", ["confirm": "shops"]).status == .badRequest)
            #expect(try await herald.catalog.hub(named: "shop") != nil)
            #expect(try await browser.post("/console/hubs/shop/delete", ["confirm": "shop"]).location == "/console/hubs?done=deleted")
            #expect(try await herald.catalog.hub(named: "shop") == nil)
            #expect(try await browser.get("/console/hubs/shop").status == .notFound)
        }
    }

    @Test func devicesAreFilteredCountedAndPaged() async throws {
        try await Self.withConsole { herald, _, browser, _ in
            for n in 0..<120 {
                let platform: Platform = n % 3 == 0 ? .fcm : .apns
                let tags = n % 2 == 0 ? ["username:alice", "news"] : ["username:bob"]
                _ = try await herald.appHubEngine.store.upsertRegistration(
                    Registration(
                        id: String(format: "reg-%04d", n), platform: platform, handle: String(format: "handle-%04d-%@", n, platform.rawValue), tags: tags),
                    ifVersion: nil
                )
            }
            let hub = "/console/hubs/\(TestHerald.appHubName)/devices"
            let all = try await browser.get(hub)
            #expect(all.body.contains("<strong>120</strong> devices match"))
            #expect(all.body.contains("reg-0000") && all.body.contains("reg-0049") && !all.body.contains("reg-0050"))
            let next = try #require(all.body.range(of: #"href="([^"]*after=reg-0049[^"]*)""#, options: .regularExpression))
            _ = next
            let second = try await browser.get(hub + "?after=reg-0049")
            #expect(second.body.contains("reg-0050") && !second.body.contains("reg-0049\""))
            let alice = try await browser.get(hub + "?user=alice&platform=fcm")
            #expect(alice.body.contains("<strong>20</strong> devices match"))  // even and a multiple of 3
            let news = try await browser.get(hub + "?expression=news+%26%26+!username%3Abob")
            #expect(news.body.contains("<strong>60</strong> devices match"))
            let prefix = try await browser.get(hub + "?handle=handle-001")
            #expect(prefix.body.contains("<strong>10</strong> devices match"))
            let bad = try await browser.get(hub + "?expression=news+%26%26")
            #expect(bad.status == .badRequest)
            #expect(bad.body.contains("the tag expression is not valid"))
            // One device, and deleting it.
            let device = try await browser.get(hub + "/reg-0004")
            #expect(device.body.contains("handle-0004-apns") && device.body.contains("username:alice"))
            #expect(try await browser.post(hub + "/reg-0004/delete").status == .seeOther)
            #expect(try await herald.appHubEngine.registration(id: "reg-0004") == nil)
            #expect(try await browser.get(hub + "/reg-0004").status == .notFound)
        }
    }

    @Test func aTestSendShowsEachDevicesOutcomeAndAFullSendAsksFirst() async throws {
        try await Self.withConsole { herald, _, browser, _ in
            let live = herald.apns.registerDevice(topic: TestHerald.topic)
            let dead = herald.apns.registerDevice(topic: TestHerald.topic)
            herald.apns.unregister(token: dead)
            _ = try await herald.appHubEngine.store.upsertRegistration(Registration(id: "live", platform: .apns, handle: live, tags: ["qa"]), ifVersion: nil)
            _ = try await herald.appHubEngine.store.upsertRegistration(Registration(id: "dead", platform: .apns, handle: dead, tags: ["qa"]), ifVersion: nil)
            let path = "/console/hubs/\(TestHerald.appHubName)/send"
            _ = try await browser.get(path)
            let payload = #"{"aps":{"alert":"console test"}}"#
            let sent = try await browser.post(path, ["platform": "apns", "target": "expression", "expression": "qa", "payload": payload, "mode": "test"])
            #expect(sent.status == .ok)
            #expect(sent.body.contains("Success") && sent.body.contains("ExpiredChannel"))
            #expect(herald.apns.notifications(for: live).count == 1)
            // The device page remembers the outcome.
            #expect(try await browser.get("/console/hubs/\(TestHerald.appHubName)/devices/live").body.contains("Success"))
            // One device.
            let one = try await browser.post(path, ["platform": "apns", "target": "device", "device": "live", "payload": payload, "mode": "test"])
            #expect(one.body.contains("Success"))
            #expect(herald.apns.notifications(for: live).count == 2)
            // Invalid payloads are refused and send nothing.
            let notJSON = try await browser.post(path, ["platform": "apns", "target": "expression", "expression": "qa", "payload": "{", "mode": "test"])
            #expect(notJSON.status == .badRequest)
            let huge = #"{"aps":{"alert":""# + String(repeating: "x", count: 5000) + #""}}"#
            #expect(try await browser.post(path, ["platform": "apns", "target": "expression", "payload": huge, "mode": "test"]).status == .contentTooLarge)
            #expect(herald.apns.notifications(for: live).count == 2)
            // A full send shows the count and waits for the confirmation.
            let asked = try await browser.post(path, ["platform": "apns", "target": "expression", "expression": "qa", "payload": payload, "mode": "full"])
            #expect(asked.body.contains("<strong>1</strong> device on apns match"))  // the dead one was removed
            #expect(herald.apns.notifications(for: live).count == 2)
            let confirmed = try await browser.post(
                path, ["platform": "apns", "expression": "qa", "payload": payload, "mode": "full", "confirmed": "1", "delay": ""]
            )
            #expect(confirmed.status == .seeOther)
            try await eventually("the full send reaches the device") { herald.apns.notifications(for: live).count == 3 }
        }
    }

    @Test func aLiveActivityTestSendReachesTheActivity() async throws {
        try await Self.withConsole { herald, _, browser, _ in
            let activity = try herald.apns.startActivity(
                topic: TestHerald.topic, attributesType: "MatchAttributes", contentState: .object([("home", .number(0))]))
            let token = try #require(activity.updateToken)
            _ = try await herald.appHubEngine.store.upsertRegistration(
                Registration(id: "match", platform: .apns, handle: token, handleKind: .liveActivity, tags: ["match-7"]), ifVersion: nil)
            let path = "/console/hubs/\(TestHerald.appHubName)/send"
            let form = try await browser.get(path)
            #expect(form.body.contains(#"value="apns-liveactivity""#))
            #expect(form.body.contains("apns: Live Activity"))
            let now = Int(Date().timeIntervalSince1970)
            let update = #"{"aps":{"timestamp":\#(now),"event":"update","content-state":{"home":2}}}"#
            let sent = try await browser.post(
                path, ["platform": "apns-liveactivity", "target": "expression", "expression": "match-7", "payload": update, "mode": "test"])
            #expect(sent.status == .ok)
            #expect(sent.body.contains("Success"))
            #expect(herald.apns.activity(id: activity.id)?.contentState?["home"] == .number(2))
            // Checked as ActivityKit reads it: an update without its content state is refused, and nothing is sent.
            let bad = try await browser.post(
                path,
                [
                    "platform": "apns-liveactivity", "target": "expression", "expression": "match-7",
                    "payload": #"{"aps":{"timestamp":\#(now + 1),"event":"update"}}"#, "mode": "test",
                ])
            #expect(bad.status == .badRequest)
            #expect(bad.body.contains("content-state"))
            #expect(herald.apns.activity(id: activity.id)?.received.count == 1)
        }
    }

    @Test func broadcastChannelsAreCreatedBroadcastToAndDeletedWithTheirSends() async throws {
        try await Self.withConsole { herald, _, browser, _ in
            let base = "/console/hubs/\(TestHerald.appHubName)/channels"
            #expect(try await browser.get(base).body.contains("No channel yet"))
            let created = try await browser.post(base, ["policy": "1"])
            let location = try #require(created.location)
            #expect(location.hasSuffix("?done=channel-created"), "\(created.status) \(created.body.prefix(300))")
            let channelPath = String(location.prefix { $0 != "?" })
            var id = String(try #require(channelPath.split(separator: "/").last))
                .replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            id += String(repeating: "=", count: (4 - id.utf8.count % 4) % 4)
            #expect(try await browser.get(base).body.contains(id))
            let page = try await browser.get(channelPath)
            #expect(page.body.contains("APNs stores the most recent message"))
            #expect(page.body.contains("Nothing was broadcast to it"))

            let listener = try herald.apns.startActivity(
                topic: TestHerald.topic, attributesType: "MatchAttributes", contentState: .object([("home", .number(0))]), channelID: id)
            let now = Int(Date().timeIntervalSince1970)
            let update = #"{"aps":{"timestamp":\#(now),"event":"update","content-state":{"home":3}}}"#
            let sent = try await browser.post(channelPath + "/broadcast", ["payload": update, "priority": "10"])
            #expect(sent.location == channelPath + "?done=broadcast")
            #expect(herald.apns.activity(id: listener.id)?.contentState?["home"] == .number(3))
            let after = try await browser.get(channelPath)
            #expect(after.body.contains("Success"))
            let record = try #require(try await herald.appHubEngine.broadcasts(toChannel: id, limit: 10).first)
            #expect(after.body.contains("/notifications/\(record.id)"))
            #expect(try await browser.get("/console/hubs/\(TestHerald.appHubName)/notifications/\(record.id)").body.contains("broadcast channel \(id)"))
            // A start cannot be broadcast: refused, nothing sent.
            let start = #"{"aps":{"timestamp":\#(now + 1),"event":"start","content-state":{},"attributes-type":"A","attributes":{},"alert":"x"}}"#
            #expect(try await browser.post(channelPath + "/broadcast", ["payload": start]).status == .badRequest)
            #expect(herald.apns.activity(id: listener.id)?.received.count == 1)

            let deleted = try await browser.post(channelPath + "/delete")
            #expect(deleted.location == base + "?done=channel-deleted")
            #expect(!(try await browser.get(base).body.contains(id)))
            #expect(try await browser.get(channelPath).status == .notFound)
        }
    }

    @Test func notificationsScheduledOnesAndTheQueue() async throws {
        try await Self.withConsole { herald, _, browser, _ in
            let later = try await herald.appHubEngine.send(
                SendRequest(
                    target: .tags(try SendRequest.Tags(parsing: "qa")), content: .native([PlatformPayload(platform: .apns, body: Data(#"{"aps":{}}"#.utf8))]),
                    options: SendRequest.Options(scheduledAt: Date().addingTimeInterval(3600))
                )
            ).record
            let base = "/console/hubs/\(TestHerald.appHubName)"
            let list = try await browser.get(base + "/notifications")
            #expect(list.body.contains(later.id))
            #expect(list.body.contains("Scheduled"))
            let one = try await browser.get(base + "/notifications/\(later.id)")
            #expect(one.body.contains("Cancel"))
            #expect(try await browser.post(base + "/notifications/\(later.id)/cancel").location?.hasSuffix("done=cancelled") == true)
            #expect(try await herald.appHubEngine.notification(id: later.id)?.state == .cancelled)
            // Cancelling again: a clear conflict.
            #expect(try await browser.post(base + "/notifications/\(later.id)/cancel").status == .conflict)
            let queue = try await browser.get(base + "/queue")
            #expect(queue.status == .ok)
            #expect(queue.body.contains("The queue is empty"))
            // A notification a worker of another node holds: its state, node and lease show.
            herald.appHubEngine.stop()
            let held = try await herald.appHubEngine.send(
                SendRequest(
                    target: .tags(try SendRequest.Tags(parsing: "nobody-has-this")),
                    content: .native([PlatformPayload(platform: .apns, body: Data(#"{"aps":{}}"#.utf8))])
                )
            ).record
            _ = try await herald.appHubEngine.store.claimNotification(now: Date(), lease: .seconds(60), owner: "node-b/host:42:abcd")
            let busy = try await browser.get(base + "/queue")
            #expect(busy.body.contains(held.id))
            #expect(busy.body.contains("Processing"))
            #expect(busy.body.contains("<td>node-b</td>"))
        }
    }

    /// What an attacker tries: no session, a missing or forged CSRF token, a request from
    /// another origin, a cookie after sign-out, an app user's credentials, password guessing.
    @Test func attacksAreRefused() async throws {
        try await Self.withConsole { herald, console, browser, client in
            // No session: pages send to the sign-in form, changes are refused.
            let stranger = ConsoleClient(client)
            #expect(try await stranger.get("/console/hubs").location == "/console/sign-in")
            #expect(try await stranger.post("/console/hubs", ["name": "evil"], csrf: "anything").status == .unauthorized)
            // An app user's credentials grant nothing.
            let bearer = try await client.signUp("mallory")
            #expect(try await stranger.get("/console/hubs", headers: bearer).location == "/console/sign-in")
            #expect(try await stranger.post("/console/hubs", ["name": "evil"], headers: .basic("mallory", "password-123")).status == .unauthorized)
            // A session without the CSRF token, or with a forged one, or from another origin.
            #expect(try await browser.post("/console/hubs", ["name": "evil"], csrf: "").status == .forbidden)
            #expect(try await browser.post("/console/hubs", ["name": "evil"], csrf: "forged").status == .forbidden)
            #expect(try await browser.post("/console/hubs", ["name": "evil"], headers: [.origin: "https://evil.example"]).status == .forbidden)
            #expect(try await herald.catalog.hub(named: "evil") == nil)
            // A sign-in form posted without its own cookie (login CSRF).
            let forged = ConsoleClient(client)
            #expect(try await forged.post("/console/sign-in", ["name": "root", "password": "a long new password"], csrf: "guess").status == .forbidden)
            // Another operator's cookie after sign-out.
            let (_, password) = try await console.operators.create(name: "eve")
            let eve = ConsoleClient(client)
            _ = try await eve.signIn("eve", password)
            _ = try await eve.post("/console/password", ["current": password, "new": "eve's long password"])
            let stolen = eve.cookies
            #expect(try await eve.post("/console/sign-out").location == "/console/sign-in")
            let thief = ConsoleClient(client)
            thief.cookies = stolen
            #expect(try await thief.get("/console/hubs").location == "/console/sign-in")
            #expect(try await thief.post("/console/hubs", ["name": "evil"], csrf: eve.csrf).status == .unauthorized)
            // A deleted operator's session ends.
            try await console.operators.delete(name: "root")
            #expect(try await browser.get("/console/hubs").location == "/console/sign-in")
            // Guessing: after 10 failures the name is refused for a while.
            let guesser = ConsoleClient(client)
            for _ in 0..<10 { #expect(try await guesser.signIn("eve", "wrong").status == .unauthorized) }
            let limited = try await guesser.signIn("eve", "eve's long password")
            #expect(limited.status == .tooManyRequests)
            #expect(limited.headers[.retryAfter] != nil)
        }
    }

    @Test func pagesAndAssetsCarryStrictHeaders() async throws {
        try await Self.withConsole { _, _, browser, _ in
            for path in ["/console/hubs", "/console/assets/console.css", "/console/assets/console.js", "/console/sign-in"] {
                let page = try await browser.get(path)
                #expect(page.status == .ok, "\(path)")
                #expect(page.headers[.contentSecurityPolicy]?.contains("script-src 'self'") == true, "\(path)")
                #expect(page.headers[.init("X-Frame-Options")!] == "DENY")
            }
            #expect(try await browser.get("/console/assets/console.css").headers[.contentType]?.hasPrefix("text/css") == true)
            // No inline script or style: the policy would block it.
            let hubs = try await browser.get("/console/hubs")
            #expect(!hubs.body.contains("<script>") && !hubs.body.contains("style=\""))
        }
    }
}
