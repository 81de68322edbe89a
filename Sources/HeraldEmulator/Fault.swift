/// An error that an emulator answers with instead of accepting, injected with `injectFaults(_:count:)`.
///
/// The APNs emulator answers `status` with `{"reason": reason}`. The FCM emulator answers `status`
/// in Google's error shape; for 429, 500 and 503 with the reasons below it uses FCM's error codes
/// (`QUOTA_EXCEEDED`, `INTERNAL`, `UNAVAILABLE`), otherwise `reason` is the error code.
public struct Fault: Sendable, Hashable, Codable {
    public var status: Int
    public var reason: String
    /// Seconds, sent as `retry-after`.
    public var retryAfter: Int?

    public init(status: Int, reason: String, retryAfter: Int? = nil) {
        self.status = status
        self.reason = reason
        self.retryAfter = retryAfter
    }

    /// 429 TooManyRequests (FCM: QUOTA_EXCEEDED).
    public static let throttled = Fault(status: 429, reason: "TooManyRequests")
    /// 503 ServiceUnavailable (FCM: UNAVAILABLE).
    public static let unavailable = Fault(status: 503, reason: "ServiceUnavailable")
    /// 500 InternalServerError (FCM: INTERNAL).
    public static let internalError = Fault(status: 500, reason: "InternalServerError")

    /// This fault with a `retry-after` of `seconds`.
    public func withRetryAfter(_ seconds: Int) -> Fault {
        var copy = self
        copy.retryAfter = seconds
        return copy
    }
}
