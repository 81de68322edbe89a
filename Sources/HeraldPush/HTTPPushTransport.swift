import Foundation
import HeraldCore
import HeraldMetrics
import Logging
import NIOCore

/// The send loop that FCM, WNS and Web Push share, over any ``HTTPPushWire`` (FCM over
/// ``HTTP2Client``, WNS and Web Push over AsyncHTTPClient): authorize, `POST`, on a 401
/// refresh the credential once and repeat, read `Retry-After`, classify with the service's
/// own rules, and log.
///
/// Log messages are static; what varies is metadata (`herald.platform`, the target as the
/// caller redacted it, the service's status and codes), never a token or a key.
struct HTTPPushTransport<Wire: HTTPPushWire>: Sendable {
    let wire: Wire
    /// The limit for one request, response included.
    let timeout: TimeAmount
    /// The clock that an HTTP-date `Retry-After` is read against.
    let now: @Sendable () -> Date
    let logger: Logger
    /// Where each request's status and latency are recorded.
    let metrics: HeraldMetrics?
    /// Told whether each answer accepted the credential or refused it.
    let health: PushCredentialRecorder

    init(
        wire: Wire,
        timeout: Duration,
        now: @escaping @Sendable () -> Date,
        logger: Logger,
        metrics: HeraldMetrics? = nil,
        health: PushCredentialRecorder
    ) {
        self.wire = wire
        self.timeout = TimeAmount(timeout)
        self.now = now
        self.logger = logger
        self.metrics = metrics
        self.health = health
    }

    /// Sends `request` (everything but its `Authorization`) and classifies the answer.
    ///
    /// - Parameter target: identifies the device in logs, redacted by the caller; built only
    ///   when something is logged.
    func send<Service: HTTPPushService, Authorizer: PushAuthorizer>(
        _ request: Wire.PushRequest,
        authorizer: Authorizer,
        service: Service,
        target: @autoclosure () -> Logger.Metadata
    ) async -> PushResult {
        guard !wire.isShutDown else { return .unreachable(reason: "provider shut down") }
        func metadata(_ more: Logger.Metadata = [:]) -> Logger.Metadata {
            var metadata = target()
            metadata["herald.platform"] = "\(service.platform)"
            metadata.merge(more) { $1 }
            return metadata
        }

        var attempt = 0
        while true {
            attempt += 1
            let credential: Authorizer.Credential
            do {
                credential = try await authorizer.credential()
            } catch {
                return error.result
            }

            let response: HTTPPushResponse
            let start = ContinuousClock.now
            do {
                response = try await wire.send(request, authorization: authorizer.authorization(credential), timeout: timeout)
            } catch {
                metrics?.pushRequest(platform: service.platform, status: nil, duration: .now - start)
                logger.debug(
                    "push send failed without a response", metadata: metadata(["error": "\(String(describing: error))"]))
                return .unreachable()
            }

            let status = response.status
            metrics?.pushRequest(platform: service.platform, status: status, duration: .now - start)
            let answer = service.answer(to: response)
            if status == 401, attempt == 1, service.mayBeStaleCredential(answer), authorizer.refused(credential) {
                logger.debug("push service refused the credential; refreshing", metadata: metadata())
                continue
            }
            let retryAfter = response.header("retry-after").flatMap { RetryAfter.parse($0, now: now()) }
            let result = service.classify(response, answer: answer, retryAfter: retryAfter)
            if result.outcome == .invalidCredentials {
                health.failed(service.credentialRefusal(status: status, reason: result.reason))
            } else if status < 500, status != 429 {
                // Throttling and server errors say nothing of the credential; any other
                // answer came after it was accepted.
                health.succeeded()
            }
            if result.disposition != .delivered {
                if result.outcome == .invalidCredentials {
                    logger.warning(
                        "push service refused the credentials", metadata: metadata(service.metadata(response, answer: answer)))
                } else {
                    logger.debug("push send not delivered", metadata: metadata(service.metadata(response, answer: answer)))
                }
            }
            return result
        }
    }
}
