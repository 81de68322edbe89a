import ArgumentParser
import AsyncHTTPClient
import Foundation
import HeraldClient
import HeraldCore
import HeraldEmulator
import HeraldServer
import NIOCore
import NIOHTTP1
import NIOSSL

struct Device: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Simulate a device: get a push token from the server's emulator, sign in, register, and show what arrives.",
        discussion: """
            Needs a `herald serve` that runs the built-in emulators (no push credentials configured).
            Example:  herald device --user alice --password 'correct horse' --sign-up --tags sports
            With --live-activity TYPE an APNs device also simulates Live Activities of that ActivityKit \
            attributes type: it gets a push-to-start token and starts an activity with an update token \
            (or, with --channel, one listening on that broadcast channel), and prints each start, update, \
            end and broadcast that arrives.
            Example:  herald device --user alice --password pw --live-activity MatchAttributes --channel "$CHANNEL"
            """
    )

    @Option(help: "Herald's URL.")
    var server: String = "http://127.0.0.1:8080"

    @Option(help: "User name to sign in with.")
    var user: String

    @Option(help: "Password.")
    var password: String

    @Flag(name: .customLong("sign-up"), help: "Create the account first if it does not exist.")
    var signUp = false

    @Option(help: "apns, fcm, wns or webpush.")
    var platform: String = "apns"

    @Option(help: "Comma-separated tags to register with (besides username:<user>, which the server adds).")
    var tags: String = ""

    @Option(name: .customLong("live-activity"), help: "Simulate Live Activities of this attributes type too (apns only).")
    var liveActivity: String?

    @Option(help: "With --live-activity: the activity listens on this broadcast channel instead of an update token.")
    var channel: String?

    @Flag(
        name: .customLong("no-confirm"),
        help: "Do not confirm what arrives (by default the device posts a receipt for each notification that carries herald.id).")
    var noConfirm = false

    @Option(help: "Exit after this many notifications (default: run until Ctrl-C).")
    var count: Int?

    @Option(help: "Exit after this many seconds (default: run until Ctrl-C).")
    var timeout: Double?

    func run() async throws {
        guard let base = URL(string: server) else { throw ValidationError("--server is not a URL") }
        let platform: Platform
        do {
            platform = try Platform(parsing: self.platform)
        } catch {
            throw ValidationError(error.message)
        }
        let directory = try await fetchEmulatorDirectory(base)
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(directory.caCertificatePEM.utf8)))
        var httpConfiguration = HTTPClient.Configuration()
        httpConfiguration.tlsConfiguration = tls
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: httpConfiguration)
        defer { _ = http.shutdown() as EventLoopFuture<Void> }

        let emulatorURL: String? =
            switch platform {
            case .apns: directory.apns
            case .fcm: directory.fcm
            case .webpush: directory.webpush
            case .wns: directory.wns
            }
        guard let emulator = emulatorURL else {
            throw ValidationError("the server has no \(platform) emulator (it is configured with real \(platform) credentials)")
        }
        // The handle the device registers, the keys of a Web Push subscription, and the id
        // under which the emulator keeps what the device received.
        let handle: String
        var keys: WebPushKeys?
        let inbox: String
        if platform == .webpush {
            var body: [String: String] = [:]
            if let vapid = directory.vapidPublicKey { body["applicationServerKey"] = vapid }
            let subscription = try await request(http, "POST", "\(emulator)/_emulator/subscriptions", body: body, as: WebPushSubscription.self)
            handle = subscription.endpoint
            keys = subscription.keys
            inbox = subscription.id
            print("device   browser subscription \(subscription.endpoint) from the Web Push emulator")
        } else if platform == .wns {
            struct ChannelResponse: Decodable { var channel: String }
            handle = try await request(http, "POST", "\(emulator)/_emulator/channels", body: [:], as: ChannelResponse.self).channel
            inbox = handle
            print("device   WNS channel \(handle.prefix(48))… from the emulator")
        } else {
            var body: [String: String] = [:]
            if platform == .apns, let topic = directory.apnsTopic { body["topic"] = topic }
            struct TokenResponse: Decodable { var token: String }
            handle = try await request(http, "POST", "\(emulator)/_emulator/devices", body: body, as: TokenResponse.self).token
            inbox = handle
            print("device   \(platform) token \(handle.prefix(16))… from the emulator at \(emulator)")
        }

        var activities: LiveActivitySimulation?
        if let liveActivity {
            guard platform == .apns, let topic = directory.apnsTopic else {
                throw ValidationError("--live-activity needs --platform apns and the server's APNs emulator")
            }
            activities = try await LiveActivitySimulation.start(
                emulator: emulator, topic: topic, attributesType: liveActivity, channel: channel,
                request: { method, url, body in try await self.request(http, method, url, body: body, as: LiveActivity.self) },
                tokenRequest: { url, body in
                    try await self.request(http, "POST", url, body: body, as: LiveActivitySimulation.TokenResponse.self).token
                })
        } else if channel != nil {
            throw ValidationError("--channel goes with --live-activity")
        }

        let client = HeraldClient(baseURL: base)
        if signUp {
            do {
                try await client.signUp(username: user, password: password)
                print("account  created \(user)")
            } catch let error as HeraldClientError where error.status == 409 {
                print("account  \(user) exists")
            }
        }
        try await client.signIn(username: user, password: password)
        let tagList = tags.split(separator: ",").map { $0.trimmingSpaces() }.filter { !$0.isEmpty }
        let id = try await client.register(handle: handle, platform: platform, tags: tagList, webPushKeys: keys)
        print("signed in as \(client.username ?? user); registration \(id)")
        if let activities, let liveActivity {
            try await activities.register(with: client, attributesType: liveActivity, user: client.username ?? user, tags: tagList)
        }
        print("waiting for notifications (Ctrl-C to stop)…")
        fflush(nil)  // shows at once also when stdout is a file or a pipe

        let start = Date()
        var seen = 0
        let formatter = ISO8601DateFormatter()
        while true {
            let received = try await request(
                http, "GET", "\(emulator)/_emulator/devices/\(inbox.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? inbox)/notifications",
                body: nil, as: [ReceivedNotification].self
            )
            for notification in received.dropFirst(seen) {
                print("[\(formatter.string(from: notification.receivedAt))] \(Self.render(notification, platform: platform))")
                print("         payload \(notification.payload)")
                if !noConfirm, let id = Receipt.notificationID(inPayload: notification.payload.utf8) {
                    do {
                        try await client.acknowledge(id)
                        print("         confirmed \(id) (POST /api/receipts)")
                    } catch {
                        print("         could not confirm \(id): \(error)")
                    }
                }
                try await Self.fetchContent(of: notification, platform: platform, client: client)
            }
            seen = received.count
            var arrived = seen
            if var simulation = activities {
                arrived += try await simulation.poll(
                    activities: { url in try await self.request(http, "GET", url, body: nil, as: [LiveActivity].self) },
                    activity: { url in try await self.request(http, "GET", url, body: nil, as: LiveActivity.self) })
                activities = simulation
            }
            fflush(nil)
            if let count, arrived >= count { return }
            if let timeout, Date().timeIntervalSince(start) > timeout { return }
            try await Task.sleep(for: .milliseconds(300))
        }
    }

    /// What the app does with a silent notification: fetch the secure payload or the rich
    /// content it points at, and show it as the local notification would read.
    static func fetchContent(of notification: ReceivedNotification, platform: Platform, client: HeraldClient) async throws {
        guard let incoming = incoming(notification, platform: platform) else { return }
        do {
            switch incoming {
            case .plain:
                return
            case .secure(let id):
                let secure = try await client.fetchSecurePayload(id: id)
                let text = String(decoding: try JSONEncoder().encode(secure.payload), as: UTF8.self)
                print("         secure message \(id) fetched over HTTPS: \(text)\(secure.read ? " (already read)" : "")")
            case .rich(let id, let type, let message, _):
                let content = try await client.fetchRichContent(id: id)
                print("         rich notification: \(message ?? "") [\(content.type), \(content.data.count) bytes fetched]")
                _ = type
            }
        } catch let error as HeraldClientError {
            print("         could not fetch \(incoming.contentID ?? ""): \(error)")
        }
    }

    /// The notification as the app's code sees it.
    static func incoming(_ notification: ReceivedNotification, platform: Platform) -> IncomingNotification? {
        var body = Data(notification.payload.utf8)
        if platform == .wns {
            guard notification.headers["x-wns-type"] == "wns/raw", let raw = Data(base64Encoded: notification.payload) else { return nil }
            body = raw
        }
        return try? IncomingNotification(json: body)
    }

    /// What the notification would read as on the device.
    static func render(_ notification: ReceivedNotification, platform: Platform) -> String {
        if let incoming = incoming(notification, platform: platform) {
            switch incoming {
            case .secure: return "silent notification: a secure message is waiting"
            case .rich(_, let type, let message, _): return "silent notification: rich content (\(type)) \(message ?? "")"
            case .plain: break
            }
        }
        return render(notification.payload, platform: platform)
    }

    static func render(_ payload: String, platform: Platform) -> String {
        if platform == .wns {
            // A toast: its <text> elements, unescaped.
            let texts = payload.components(separatedBy: "<text>").dropFirst().compactMap { $0.components(separatedBy: "</text>").first }
            let unescaped = texts.map {
                $0.replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
                    .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&apos;", with: "'")
                    .replacingOccurrences(of: "&amp;", with: "&")
            }
            return texts.isEmpty ? payload : "toast: " + unescaped.joined(separator: " — ")
        }
        guard let value = try? JSONValue(parsing: payload.utf8) else { return payload }
        switch platform {
        case .apns:
            let alert = value["aps"]?["alert"]
            if case .string(let text) = alert { return "alert: \(text)" }
            if case .string(let body) = alert?["body"] {
                if case .string(let title) = alert?["title"] { return "alert: \(title) — \(body)" }
                return "alert: \(body)"
            }
            return "silent notification"
        case .fcm:
            let message: JSONValue? = value
            if case .string(let body) = message?["notification"]?["body"] { return "notification: \(body)" }
            if case .string(let body) = message?["data"]?["message"] { return "data message: \(body)" }
            return "data message"
        case .webpush:
            if case .string(let body) = value["body"] {
                if case .string(let title) = value["title"] { return "notification: \(title) — \(body)" }
                return "notification: \(body)"
            }
            return payload
        case .wns:
            return payload
        }
    }

    func fetchEmulatorDirectory(_ base: URL) async throws -> EmulatorDirectory {
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        defer { _ = http.shutdown() as EventLoopFuture<Void> }
        let response: HTTPClientResponse
        do {
            response = try await http.execute(HTTPClientRequest(url: base.appendingPathComponent("emulators").absoluteString), timeout: .seconds(10))
        } catch {
            throw ValidationError("cannot reach Herald at \(server): is `herald serve` running?")
        }
        let body = try await response.body.collect(upTo: 1 << 20)
        guard response.status.code == 200 else {
            throw ValidationError("\(server) runs no built-in emulators (it has real push credentials); simulated devices need them")
        }
        return try JSONDecoder().decode(EmulatorDirectory.self, from: Data(body.readableBytesView))
    }

    func request<T: Decodable>(_ http: HTTPClient, _ method: String, _ url: String, body: [String: String]?, as: T.Type) async throws -> T {
        var request = HTTPClientRequest(url: url)
        request.method = .init(rawValue: method)
        if let body {
            request.headers.add(name: "content-type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: try JSONEncoder().encode(body)))
        }
        let response = try await http.execute(request, timeout: .seconds(10))
        let bytes = try await response.body.collect(upTo: 16 * 1024 * 1024)
        guard response.status.code < 300 else {
            throw ValidationError("the emulator answered \(response.status.code) to \(method) \(url)")
        }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        return try decoder.decode(T.self, from: Data(bytes.readableBytesView))
    }
}
