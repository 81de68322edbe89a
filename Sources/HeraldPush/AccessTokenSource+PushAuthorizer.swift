import HeraldCore

extension AccessTokenSource: PushAuthorizer {
    /// A valid access token; a token endpoint that does not answer makes the send
    /// retryable, one that refuses the credentials fails it.
    func credential() async throws(PushAuthorizationFailure) -> AccessToken {
        do {
            return try await token()
        } catch {
            if error.transient {
                throw PushAuthorizationFailure(result: .unreachable(reason: error.oauthError ?? "token endpoint unreachable"))
            }
            throw PushAuthorizationFailure(
                result: .rejectedLocally(.invalidCredentials, reason: error.oauthError ?? "token request refused"))
        }
    }

    func authorization(_ credential: AccessToken) -> String { credential.authorization }

    /// The token was revoked or expired early: forget it, so that the repeat gets a new one.
    func refused(_ credential: AccessToken) -> Bool {
        invalidate(credential)
        return true
    }
}
