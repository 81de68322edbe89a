import HeraldCore

extension WebPushProvider {
    /// Classifies a push service's answer (RFC 8030, RFC 8292).
    ///
    /// - 200, 201, 202: delivered.
    /// - 404, 410: the subscription is gone (unsubscribed or expired): remove it.
    /// - 400 (and 415): a malformed message. 413: too large.
    /// - 401, 403: the VAPID credentials are refused.
    /// - 429: throttled, retryable. 503 and other 5xx: retryable, with `Retry-After` when sent.
    public static func classify(status: Int, reason: String?, retryAfter: Double? = nil) -> PushResult {
        func result(_ disposition: PushResult.Disposition, _ outcome: DeliveryOutcome) -> PushResult {
            PushResult(disposition: disposition, outcome: outcome, status: status, reason: reason)
        }
        switch status {
        case 200, 201, 202:
            return result(.delivered, .success)
        case 404, 410:
            return result(.channelExpired, .expiredChannel)
        case 400, 415:
            return result(.permanentFailure, .invalidNotificationFormat)
        case 401, 403:
            return result(.permanentFailure, .invalidCredentials)
        case 413:
            return result(.permanentFailure, .invalidNotificationSize)
        case 429:
            return result(.credentialThrottled(retryAfter: retryAfter), .throttled)
        case 503:
            return result(.retryable(retryAfter: retryAfter), .pnsUnavailable)
        case 500...599:
            return result(.retryable(retryAfter: retryAfter), .pnsServerError)
        default:
            return result(.permanentFailure, .unknownError)
        }
    }
}
