import AsyncHTTPClient
import HeraldCore
import Logging
import NIOHTTP1

/// What one HTTP push service (FCM, WNS, Web Push) adds to the send loop of
/// ``HTTPPushTransport``: how a response is read and classified, and what of it is logged.
protocol HTTPPushService: Sendable {
    /// What a response says beyond its status, read once.
    associatedtype Answer: Sendable

    var platform: Platform { get }

    /// Reads what classifying `response` needs, and drains its body.
    func answer(to response: HTTPClientResponse) async -> Answer

    /// Whether a 401 with `answer` may come from a stale credential, so that a new one is
    /// worth a second attempt.
    func mayBeStaleCredential(_ answer: Answer) -> Bool

    /// The service's own classification of a response.
    func classify(status: Int, answer: Answer, headers: HTTPHeaders, retryAfter: Double?) -> PushResult

    /// What to log about a response that was not a delivery: status, error codes, never a
    /// token or a key.
    func metadata(status: Int, answer: Answer, headers: HTTPHeaders) -> Logger.Metadata

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
