import HeraldCore
import Logging

/// What one HTTP push service (FCM, WNS, Web Push) adds to the send loop of
/// ``HTTPPushTransport``: how a response is read and classified, and what of it is logged.
/// The response is the same whichever wire carried it (``HTTPPushResponse``).
protocol HTTPPushService: Sendable {
    /// What a response says beyond its status, read once.
    associatedtype Answer: Sendable

    var platform: Platform { get }

    /// Reads what classifying `response` needs; a delivery's body is not decoded.
    func answer(to response: HTTPPushResponse) -> Answer

    /// Whether a 401 with `answer` may come from a stale credential, so that a new one is
    /// worth a second attempt.
    func mayBeStaleCredential(_ answer: Answer) -> Bool

    /// The service's own classification of `response`.
    func classify(_ response: HTTPPushResponse, answer: Answer, retryAfter: Double?) -> PushResult

    /// What to log about a response that was not a delivery: status, error codes, never a
    /// token or a key.
    func metadata(_ response: HTTPPushResponse, answer: Answer) -> Logger.Metadata

    /// The service as messages name it: `FCM`, `WNS`, `the Web Push service`.
    var serviceName: String { get }
}

extension HTTPPushService {
    func mayBeStaleCredential(_ answer: Answer) -> Bool { true }

    /// The credential's last error when the service refused it: the status and the
    /// service's reason (an error code), nothing the request carried.
    func credentialRefusal(status: Int, reason: String?) -> String {
        var message = "\(serviceName) refused the credentials: HTTP \(status)"
        if let reason, !reason.isEmpty { message += " " + reason.prefix(100) }
        return message
    }
}
