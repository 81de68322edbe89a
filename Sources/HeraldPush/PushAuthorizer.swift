/// How an HTTP push provider authorizes its sends, for ``HTTPPushTransport``: an OAuth2
/// access token (FCM, WNS) or a VAPID token (Web Push).
protocol PushAuthorizer: Sendable {
    /// What one attempt is authorized with.
    associatedtype Credential: Sendable

    /// The credential for the next attempt: a cached one, or a new one.
    func credential() async throws(PushAuthorizationFailure) -> Credential

    /// The `Authorization` header value for `credential`.
    func authorization(_ credential: Credential) -> String

    /// The push service answered 401 to `credential`: forget it. Returns whether a new
    /// credential could be accepted, so that the send is worth repeating once.
    func refused(_ credential: Credential) -> Bool
}
