import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldMetrics
import Logging
import NIOCore
import NIOHTTP1

/// The send loop that FCM, WNS and Web Push share, over AsyncHTTPClient (HTTP/1.1 or 2):
/// authorize, `POST`, on a 401 refresh the credential once and repeat, read `Retry-After`,
/// classify with the service's own rules, and log.
///
/// Log messages are static; what varies is metadata (`herald.platform`, the target as the
/// caller redacted it, the service's status and codes), never a token or a key.
struct HTTPPushTransport: Sendable {
    let pool: HTTPClientPool
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
        pool: HTTPClientPool,
        timeout: Duration,
        now: @escaping @Sendable () -> Date,
        logger: Logger,
        metrics: HeraldMetrics? = nil,
        health: PushCredentialRecorder
    ) {
        self.pool = pool
        self.timeout = TimeAmount(timeout)
        self.now = now
        self.logger = logger
        self.metrics = metrics
        self.health = health
    }

    /// Sends `request` (everything but its `Authorization`) and classifies the answer.
    ///
    /// - Parameter target: identifies the device in logs, redacted by the caller.
    func send<Service: HTTPPushService, Authorizer: PushAuthorizer>(
        _ request: HTTPClientRequest,
        authorizer: Authorizer,
        service: Service,
        target: Logger.Metadata
    ) async -> PushResult {
        guard !pool.isShutDown else { return .unreachable(reason: "provider shut down") }
        var metadata = target
        metadata["herald.platform"] = "\(service.platform)"

        var attempt = 0
        while true {
            attempt += 1
            let credential: Authorizer.Credential
            do {
                credential = try await authorizer.credential()
            } catch {
                return error.result
            }

            var authorized = request
            authorized.headers.replaceOrAdd(name: "authorization", value: authorizer.authorization(credential))

            let response: HTTPClientResponse
            let start = ContinuousClock.now
            do {
                response = try await pool.next().execute(authorized, timeout: timeout)
            } catch {
                metrics?.pushRequest(platform: service.platform, status: nil, duration: .now - start)
                var failure = metadata
                failure["error"] = "\(String(describing: error))"
                logger.debug("push send failed without a response", metadata: failure)
                return .unreachable()
            }

            let status = Int(response.status.code)
            metrics?.pushRequest(platform: service.platform, status: status, duration: .now - start)
            let answer = await service.answer(to: response)
            if status == 401, attempt == 1, service.mayBeStaleCredential(answer), authorizer.refused(credential) {
                logger.debug("push service refused the credential; refreshing", metadata: metadata)
                continue
            }
            let retryAfter = response.headers.first(name: "retry-after").flatMap { RetryAfter.parse($0, now: now()) }
            let result = service.classify(status: status, answer: answer, headers: response.headers, retryAfter: retryAfter)
            if result.outcome == .invalidCredentials {
                health.failed(service.credentialRefusal(status: status, reason: result.reason))
            } else if status < 500, status != 429 {
                // Throttling and server errors say nothing of the credential; any other
                // answer came after it was accepted.
                health.succeeded()
            }
            if result.disposition != .delivered {
                metadata.merge(service.metadata(status: status, answer: answer, headers: response.headers)) { $1 }
                if result.outcome == .invalidCredentials {
                    logger.warning("push service refused the credentials", metadata: metadata)
                } else {
                    logger.debug("push send not delivered", metadata: metadata)
                }
            }
            return result
        }
    }
}
