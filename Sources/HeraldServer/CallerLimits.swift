/// What limits callers across the listeners of one server, kept once and shared by the HTTP
/// and TLS listeners (and the console) so that a caller gets one allowance, not one per port:
/// the pool that hashes passwords, with its bounded queue; sign-ups and failed sign-ins per
/// client; the hub API's request rate per hub and class of caller.
///
/// ``buildApplication(hubs:devices:appStore:configuration:services:connections:limits:console:onServerRunning:logger:)``
/// runs the hashing pool as one of its services; give the same value to
/// ``buildTLSApplication(hubs:devices:appStore:configuration:tls:connections:limits:console:onServerRunning:logger:)``
/// and ``Console/init(hubs:configuration:limits:)``.
public final class CallerLimits: Sendable {
    public let hashing: PasswordHashing
    let signUps: SignUpLimiter
    let signIns: SignInLimiter
    let hubRequests: HubRateLimiter

    public init(configuration: ServerConfiguration) {
        self.hashing = PasswordHashing(threads: configuration.passwordHashThreads, queue: configuration.passwordHashQueue)
        self.signUps = SignUpLimiter(configuration.signUpLimitPerClient)
        self.signIns = SignInLimiter(
            perAccountAndClient: configuration.signInLimitPerAccountAndClient,
            perAccount: configuration.signInLimitPerAccount,
            perClient: configuration.signInLimitPerClient
        )
        self.hubRequests = HubRateLimiter(requestsPerSecond: configuration.hubRequestsPerSecond)
    }
}
