import HeraldCore

extension APNsProvider {
    /// Classifies an APNs response: what the hub should do and which outcome to count.
    ///
    /// - 200: delivered.
    /// - 410 (`Unregistered`, `ExpiredToken`): the channel is dead.
    /// - 400 `BadDeviceToken`: a permanent failure, but *not* an expired channel: a token of
    ///   the other environment (sandbox vs production) gets this answer, and a configuration
    ///   mistake must not remove every registration of a hub.
    /// - 400 `DeviceTokenNotForTopic`: wrong token; other 400s: a malformed notification.
    /// - 403 `ExpiredProviderToken`: retryable (the provider refreshes its token); other
    ///   403s: the credentials are refused.
    /// - 413: too large. 429: throttled, retryable. 500, 503 and other 5xx: retryable.
    public static func classify(status: Int, reason: APNsReason?, retryAfter: Double? = nil) -> PushResult {
        func result(_ disposition: PushResult.Disposition, _ outcome: DeliveryOutcome) -> PushResult {
            PushResult(disposition: disposition, outcome: outcome, status: status, reason: reason?.rawValue)
        }
        switch status {
        case 200:
            return result(.delivered, .success)
        case 410:
            return result(.channelExpired, .expiredChannel)
        case 400:
            switch reason {
            case .badDeviceToken?: return result(.permanentFailure, .badChannel)
            case .deviceTokenNotForTopic?: return result(.permanentFailure, .wrongToken)
            default: return result(.permanentFailure, .invalidNotificationFormat)
            }
        case 403:
            if reason == .expiredProviderToken { return result(.retryable(retryAfter: retryAfter), .invalidCredentials) }
            return result(.permanentFailure, .invalidCredentials)
        case 413:
            return result(.permanentFailure, .invalidNotificationSize)
        case 429:
            return result(.retryable(retryAfter: retryAfter), .throttled)
        case 503:
            return result(.retryable(retryAfter: retryAfter), .pnsUnavailable)
        case 500...599:
            return result(.retryable(retryAfter: retryAfter), .pnsServerError)
        default:
            // 404 BadPath, 405 MethodNotAllowed and anything unexpected: repeating will not help.
            return result(.permanentFailure, .unknownError)
        }
    }

}
