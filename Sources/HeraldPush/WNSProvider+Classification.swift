import HeraldCore

extension WNSProvider {
    /// Classifies a WNS answer from its status and `X-WNS-Status`.
    ///
    /// - 200: delivered (`X-WNS-Status: received`, or none). `dropped` is *not* delivered: WNS
    ///   accepted the request but threw the notification away (the device is offline and the
    ///   notification was not to be cached, or the device refuses it). Repeating it would get
    ///   the same answer, so it is counted as ``DeliveryOutcome/dropped`` and not retried.
    /// - 400: a malformed notification or header. 401, 403: credentials refused (the provider
    ///   has already refreshed its access token once for a 401; 403 means the channel belongs
    ///   to another app).
    /// - 404, 410: the channel URI is unknown or expired — remove the registration.
    /// - 406 (`channelthrottled`) and 429: throttled; 500, 503: retryable, with `Retry-After`
    ///   when sent.
    /// - 413: larger than 5000 bytes.
    ///
    /// `reason` is the `X-WNS-Status` value, else `X-WNS-Error-Description`.
    public static func classify(
        status: Int,
        wnsStatus: WNSStatus?,
        errorDescription: String? = nil,
        retryAfter: Double? = nil
    ) -> PushResult {
        let reason = wnsStatus?.rawValue ?? errorDescription.map { String($0.prefix(200)) }
        func result(_ disposition: PushResult.Disposition, _ outcome: DeliveryOutcome) -> PushResult {
            PushResult(disposition: disposition, outcome: outcome, status: status, reason: reason)
        }
        switch status {
        case 200:
            switch wnsStatus {
            case nil, .received?: return .delivered
            case .dropped?: return result(.permanentFailure, .dropped)
            case .channelThrottled?: return result(.retryable(retryAfter: retryAfter), .throttled)
            default: return .delivered
            }
        case 400: return result(.permanentFailure, .invalidNotificationFormat)
        case 401, 403: return result(.permanentFailure, .invalidCredentials)
        case 404, 410: return result(.channelExpired, .expiredChannel)
        case 406, 429: return result(.credentialThrottled(retryAfter: retryAfter), .throttled)
        case 413: return result(.permanentFailure, .invalidNotificationSize)
        case 503: return result(.retryable(retryAfter: retryAfter), .pnsUnavailable)
        case 500...599: return result(.retryable(retryAfter: retryAfter), .pnsServerError)
        default: return result(.permanentFailure, .unknownError)
        }
    }
}
