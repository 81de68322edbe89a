import HeraldCore

extension PushResult {
    /// A send that got no response: connection refused, TLS failure, timeout, shut down.
    static func unreachable(reason: String? = nil) -> PushResult {
        PushResult(disposition: .retryable(retryAfter: nil), outcome: .pnsUnreachable, status: nil, reason: reason)
    }

    /// A send refused before it reached the push service, because repeating it cannot help.
    static func rejectedLocally(_ outcome: DeliveryOutcome, reason: String) -> PushResult {
        PushResult(disposition: .permanentFailure, outcome: outcome, status: nil, reason: reason)
    }
}

/// The first characters of a device token, enough to find it in logs without exposing it.
func redacted(_ handle: String) -> String {
    handle.count <= 8 ? "…" : handle.prefix(8) + "…"
}
