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
    /// - Parameters:
    ///   - target: identifies the device in logs, redacted by the caller; built only when
    ///     something is logged.
    ///   - attemptsMade: attempts made already (a batch's, whose credential was refused):
    ///     the credential is refreshed once per request, not once per attempt.
    func send<Service: HTTPPushService, Authorizer: PushAuthorizer>(
        _ request: Wire.PushRequest,
        authorizer: Authorizer,
        service: Service,
        target: @autoclosure () -> Logger.Metadata,
        attemptsMade: Int = 0
    ) async -> PushResult {
        guard !wire.isShutDown else { return .unreachable(reason: "provider shut down") }
        var attempt = attemptsMade
        while true {
            attempt += 1
            let credential: Authorizer.Credential
            do {
                credential = try await authorizer.credential()
            } catch {
                return error.result
            }
            let start = ContinuousClock.now
            let result: Result<HTTPPushResponse, any Error>
            do {
                result = .success(try await wire.send(request, authorization: authorizer.authorization(credential), timeout: timeout))
            } catch {
                result = .failure(error)
            }
            let answer = HTTPPushAnswer(result: result, completedAt: .now)
            switch conclude(answer, sentAt: start, attempt: attempt, credential: credential, authorizer: authorizer, service: service, target: target()) {
            case .result(let result):
                return result
            case .refreshAndRepeat:
                continue
            }
        }
    }

    /// Sends every request of `batch` (everything but their `Authorization`) with one
    /// credential, through the wire's batch, and classifies each answer; a request whose
    /// answer says the credential went stale is repeated on its own (``send(_:authorizer:service:target:)``).
    ///
    /// - Parameter targets: identify each device in logs, by index in `batch`.
    func send<Service: HTTPPushService, Authorizer: PushAuthorizer>(
        batch: [Wire.PushRequest],
        authorizer: Authorizer,
        service: Service,
        targets: @escaping @Sendable (Int) -> Logger.Metadata
    ) async -> [PushResult] {
        guard !wire.isShutDown else { return batch.map { _ in .unreachable(reason: "provider shut down") } }
        let credential: Authorizer.Credential
        do {
            credential = try await authorizer.credential()
        } catch {
            return batch.map { _ in error.result }
        }
        let start = ContinuousClock.now
        let answers = await wire.send(batch: batch, authorization: authorizer.authorization(credential), timeout: timeout)
        var results = [PushResult?](repeating: nil, count: batch.count)
        var again: [Int] = []
        for (index, answer) in answers.enumerated() {
            switch conclude(answer, sentAt: start, attempt: 1, credential: credential, authorizer: authorizer, service: service, target: targets(index)) {
            case .result(let result): results[index] = result
            case .refreshAndRepeat: again.append(index)
            }
        }
        if !again.isEmpty {
            await withTaskGroup(of: (Int, PushResult).self) { group in
                for index in again {
                    group.addTask {
                        let result = await send(
                            batch[index], authorizer: authorizer, service: service, target: targets(index), attemptsMade: 1)
                        return (index, result)
                    }
                }
                for await (index, result) in group { results[index] = result }
            }
        }
        return results.map { $0! }
    }

    private enum Conclusion {
        case result(PushResult)
        /// The service refused a credential that may have gone stale: refreshed, send again.
        case refreshAndRepeat
    }

    /// What one answer means: records its metrics and the credential's health, and logs.
    private func conclude<Service: HTTPPushService, Authorizer: PushAuthorizer>(
        _ answer: HTTPPushAnswer,
        sentAt start: ContinuousClock.Instant,
        attempt: Int,
        credential: Authorizer.Credential,
        authorizer: Authorizer,
        service: Service,
        target: @autoclosure () -> Logger.Metadata
    ) -> Conclusion {
        func metadata(_ more: Logger.Metadata = [:]) -> Logger.Metadata {
            var metadata = target()
            metadata["herald.platform"] = "\(service.platform)"
            metadata.merge(more) { $1 }
            return metadata
        }
        let response: HTTPPushResponse
        switch answer.result {
        case .success(let answered):
            response = answered
        case .failure(let error):
            metrics?.pushRequest(platform: service.platform, status: nil, duration: answer.completedAt - start)
            logger.debug("push send failed without a response", metadata: metadata(["error": "\(String(describing: error))"]))
            return .result(.unreachable())
        }

        let status = response.status
        metrics?.pushRequest(platform: service.platform, status: status, duration: answer.completedAt - start)
        let serviceAnswer = service.answer(to: response)
        if status == 401, attempt == 1, service.mayBeStaleCredential(serviceAnswer), authorizer.refused(credential) {
            logger.debug("push service refused the credential; refreshing", metadata: metadata())
            return .refreshAndRepeat
        }
        let retryAfter = response.header("retry-after").flatMap { RetryAfter.parse($0, now: now()) }
        let result = service.classify(response, answer: serviceAnswer, retryAfter: retryAfter)
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
                    "push service refused the credentials", metadata: metadata(service.metadata(response, answer: serviceAnswer)))
            } else {
                logger.debug("push send not delivered", metadata: metadata(service.metadata(response, answer: serviceAnswer)))
            }
        }
        return .result(result)
    }
}
