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
    /// How long `POST /api/notifications` waits for delivery to finish before answering
    /// with the state so far.
    public var notifyWait: Duration = .seconds(10)
    /// The push-service emulators running in this process, advertised at `GET /emulators`
    /// so simulated devices can find them; `nil` with real push services.
    public var emulators: EmulatorDirectory?

    public init() {}
}

/// Where the in-process push-service emulators listen, and the CA that signed their certificates.
public struct EmulatorDirectory: Sendable, Codable, Hashable {
    public var apns: String?
    public var apnsTopic: String?
    public var fcm: String?
    public var caCertificatePEM: String

    public init(apns: String?, apnsTopic: String?, fcm: String?, caCertificatePEM: String) {
        self.apns = apns
        self.apnsTopic = apnsTopic
        self.fcm = fcm
        self.caCertificatePEM = caCertificatePEM
    }
}
