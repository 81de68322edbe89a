import HeraldCore

extension FCMProvider {
    /// Classifies an FCM HTTP v1 response from its status and error code
    /// (`error.details[].errorCode`, else `error.status`).
    ///
    /// - 200: delivered. `UNREGISTERED`: the channel is dead.
    /// - `INVALID_ARGUMENT`: a malformed message (or token); `SENDER_ID_MISMATCH`: wrong token.
    /// - `QUOTA_EXCEEDED` (or `RESOURCE_EXHAUSTED`): throttled; `UNAVAILABLE`, `INTERNAL`:
    ///   retryable, with `Retry-After` when sent.
    /// - `THIRD_PARTY_AUTH_ERROR`, `PERMISSION_DENIED`, `UNAUTHENTICATED`: credentials refused
    ///   (the provider has already refreshed its access token once for a 401).
    /// - An unknown code falls back on the HTTP status. A 404 without `UNREGISTERED` is *not*
    ///   an expired channel: a wrong endpoint must not remove registrations.
    public static func classify(status: Int, errorCode: FCMErrorCode?, retryAfter: Double? = nil) -> PushResult {
        func result(_ disposition: PushResult.Disposition, _ outcome: DeliveryOutcome) -> PushResult {
            PushResult(disposition: disposition, outcome: outcome, status: status, reason: errorCode?.rawValue)
        }
        if status == 200 { return result(.delivered, .success) }
        switch errorCode {
        case .unregistered?:
            return result(.channelExpired, .expiredChannel)
        case .invalidArgument?:
            return result(.permanentFailure, .invalidNotificationFormat)
        case .senderIDMismatch?:
            return result(.permanentFailure, .wrongToken)
        case .quotaExceeded?, .resourceExhausted?:
            return result(.credentialThrottled(retryAfter: retryAfter), .throttled)
        case .unavailable?:
            return result(.retryable(retryAfter: retryAfter), .pnsUnavailable)
        case .internal?:
            return result(.retryable(retryAfter: retryAfter), .pnsServerError)
        case .thirdPartyAuthError?, .permissionDenied?, .unauthenticated?:
            return result(.permanentFailure, .invalidCredentials)
        default:
            break
        }
        switch status {
        case 400: return result(.permanentFailure, .invalidNotificationFormat)
        case 401, 403: return result(.permanentFailure, .invalidCredentials)
        case 413: return result(.permanentFailure, .invalidNotificationSize)
        case 429: return result(.credentialThrottled(retryAfter: retryAfter), .throttled)
        case 503: return result(.retryable(retryAfter: retryAfter), .pnsUnavailable)
        case 500...599: return result(.retryable(retryAfter: retryAfter), .pnsServerError)
        default: return result(.permanentFailure, .unknownError)
        }
    }
}
