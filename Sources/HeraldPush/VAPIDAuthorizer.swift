import HeraldCore
import Logging

/// VAPID authorization of the sends to one push service origin.
struct VAPIDAuthorizer: PushAuthorizer {
    let vapid: WebPushVAPID
    /// `https://host[:port]` of the push service: the token's audience.
    let origin: String
    let logger: Logger
    /// Told when signing fails.
    let health: PushCredentialRecorder

    func credential() throws(PushAuthorizationFailure) -> String {
        do {
            return try vapid.authorization(origin: origin)
        } catch {
            logger.error("VAPID token could not be signed")
            health.failed("the VAPID token could not be signed")
            throw PushAuthorizationFailure(result: .rejectedLocally(.invalidCredentials, reason: "VAPID signing failed"))
        }
    }

    func authorization(_ credential: String) -> String { credential }

    /// A push service that refuses a VAPID token refuses the key it is signed with (a
    /// subscription made for another key): a new token would be refused too.
    func refused(_ credential: String) -> Bool { false }
}
