public import Foundation

/// How the HTTP server behaves. Defaults are safe for production.
public struct ServerConfiguration: Sendable {
    public var host: String = "127.0.0.1"
    public var port: Int = 8080
    /// The notify-users tutorial's test scheme: HTTP Basic where the user name equals the
    /// password, with no account. Anyone can then act as anyone: for demos on a laptop only.
    public var insecureDemoAuth: Bool = false
    /// Whether `POST /api/accounts` creates accounts.
    public var allowSignUp: Bool = true
    /// Lifetime of a bearer token from `POST /api/token`.
    public var tokenLifetime: Duration = .seconds(7 * 24 * 3600)
    /// bcrypt cost for stored passwords.
    public var bcryptCost: UInt8 = 12
    /// Failed sign-ins allowed per account from one client: a burst, then one per refill
    /// period (``SignInLimiter``).
    package var signInLimitPerAccountAndClient = SignInLimiter.Limit.perAccountAndClient
    /// Failed sign-ins allowed per account over every client.
    package var signInLimitPerAccount = SignInLimiter.Limit.perAccount
    /// Failed sign-ins allowed per client over every account.
    package var signInLimitPerClient = SignInLimiter.Limit.perClient
    /// Sign-ups allowed per client (``SocketAddress/clientKey``) a minute, in bursts of twice
    /// that: every attempt counts, whatever its answer.
    public var signUpsPerMinute: Int = 5
    /// Threads that hash passwords (bcrypt), apart from the store's thread pool.
    public var passwordHashThreads = 1
    /// Password hashes that may wait for a thread; beyond, sign-up and sign-in get 503.
    public var passwordHashQueue = 16
    /// How long `POST /api/notifications` waits for delivery to finish before answering
    /// with the state so far.
    public var notifyWait: Duration = .seconds(10)
    /// The push-service emulators running in this process, advertised at `GET /emulators`
    /// so simulated devices can find them; `nil` with real push services.
    public var emulators: EmulatorDirectory?
    /// The port of the TLS listener (hub SDKs connect over `https`).
    public var tlsPort: Int = 8443
    /// Connections at once, idle and body timeouts, over both listeners.
    public var connectionLimits = ConnectionLimits()
    /// Requests per second one hub's API accepts (bursts of twice that); above it, 429.
    public var hubRequestsPerSecond: Int = 2000
    /// The bearer token `GET /metrics` asks for; `nil` serves the page to anyone who can
    /// reach the port.
    public var metricsToken: String?

    // MARK: The console

    /// Whether `herald serve` serves the console at `/console`.
    public var consoleEnabled = true
    /// A console session unused for this long ends: the operator signs in again.
    public var consoleIdleTimeout: Duration = .seconds(30 * 60)
    /// How often the console's charts read the counters of `/metrics`.
    public var consoleSampleInterval: Duration = .seconds(15)
    /// How long `/ready` answers with the last check of the stores and providers before it
    /// checks again: each check pings every open hub's store, and `/ready` is open to anyone.
    public var readinessMaximumAge: Duration = .seconds(1)
    /// The endpoint of the connection strings the console shows (`sb://host:port/`); `nil`
    /// when TLS is off and none is set, and the console then shows none.
    public var hubEndpoint: String?
    /// The version and this node's name, in the console's footer.
    public var version = "dev"
    public var nodeName = "this node"

    // MARK: Secure push and rich push

    /// The key that seals secure-push payloads at rest (AES-GCM). `nil` turns secure push
    /// off: its routes answer 503. The `herald` binary keeps it in
    /// `<data-dir>/keys/secure-payload.key` (``SecurePayloadKey/loadOrCreate(path:)``).
    public var secureKey: SecurePayloadKey?
    /// How long a secure payload can be fetched after it was sent.
    public var secureRetention: Duration = .seconds(7 * 24 * 3600)
    /// Whether rich push is on; when off, its routes answer 503. Its content (the bytes too)
    /// is kept in the store, so every node serves any content.
    public var richPushEnabled = false
    /// The largest rich content accepted, in bytes; larger uploads get 413.
    public var richMaxBytes: Int = 10 * 1024 * 1024
    /// How long rich content can be fetched after it was uploaded.
    public var richRetention: Duration = .seconds(7 * 24 * 3600)
    /// The media types rich content may have (without parameters, lowercase); others get 415.
    public var richMediaTypes: Set<String> = ServerConfiguration.defaultRichMediaTypes
    /// The URL devices reach this server at, such as `https://push.example.com`: the base of
    /// the `richUrl` of alert-style rich notifications. `nil` uses the request's `Host`,
    /// which is fine for development; set it in production.
    public var publicURL: String?
    /// How often expired secure payloads and rich content are deleted.
    public var contentSweepInterval: Duration = .seconds(600)
    /// The clock that dates and expires secure payloads and rich content; injectable for tests.
    public var now: @Sendable () -> Date = { Date() }
    /// Where the random bits of new secure and rich ids come from: the system's CSPRNG.
    /// Injectable for tests (of what happens when an id is taken).
    public var contentIDRandom: @Sendable () -> UInt64 = {
        var generator = SystemRandomNumberGenerator()
        return generator.next()
    }

    /// Images, sounds, video, text, links and JSON.
    public static let defaultRichMediaTypes: Set<String> = [
        "image/png", "image/jpeg", "image/gif", "image/webp",
        "audio/mpeg", "audio/aac", "audio/x-caf",
        "video/mp4",
        "text/plain", "text/uri-list", "application/json",
    ]

    public init() {}

    /// The bucket of ``signUpsPerMinute``: a burst of twice the rate.
    var signUpLimitPerClient: TokenBuckets.Limit {
        let rate = max(1, signUpsPerMinute)
        return .init(burst: 2 * rate, refillSeconds: 60 / Double(rate))
    }
}

/// Where the in-process push-service emulators listen, and the CA that signed their certificates.
public struct EmulatorDirectory: Sendable, Codable, Hashable {
    public var apns: String?
    public var apnsTopic: String?
    public var fcm: String?
    public var webpush: String?
    public var wns: String?
    /// The VAPID public key web apps pass to `pushManager.subscribe` as `applicationServerKey`.
    public var vapidPublicKey: String?
    public var caCertificatePEM: String

    public init(
        apns: String?, apnsTopic: String?, fcm: String?, webpush: String? = nil, wns: String? = nil, vapidPublicKey: String? = nil, caCertificatePEM: String
    ) {
        self.apns = apns
        self.apnsTopic = apnsTopic
        self.fcm = fcm
        self.webpush = webpush
        self.wns = wns
        self.vapidPublicKey = vapidPublicKey
        self.caCertificatePEM = caCertificatePEM
    }
}

extension ServerConfiguration {
    /// Whether the console is served on the plain-HTTP listener: only where an operator's
    /// password and session cookie cannot cross a network in clear (``host`` is a loopback
    /// address), or where a proxy in front terminates TLS (``publicURL`` is `https`). Otherwise
    /// the console is on the TLS listener only.
    public var servesConsoleOverPlainHTTP: Bool {
        Self.servesConsoleOverPlainHTTP(host: host, publicURL: publicURL)
    }

    /// ``servesConsoleOverPlainHTTP`` for a listener on `host` and a server known as `publicURL`.
    public static func servesConsoleOverPlainHTTP(host: String, publicURL: String?) -> Bool {
        isLoopback(host) || isBehindTLSProxy(publicURL: publicURL)
    }

    /// Whether devices and browsers reach the server through `https`: a public URL that is one.
    static func isBehindTLSProxy(publicURL: String?) -> Bool {
        publicURL?.lowercased().hasPrefix("https://") ?? false
    }

    /// `localhost`, `127.0.0.0/8` and `::1`.
    static func isLoopback(_ host: String) -> Bool {
        let host = host.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        if host == "localhost" || host == "::1" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }
}
